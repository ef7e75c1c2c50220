"""`intentc daemon` (in-cluster drift controller) and `intentc watch` (hot reload)."""

from __future__ import annotations

import enum
import json
import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Callable, List, Optional

import typer

from intentc.cli.app import EXIT_OK, app, emit_diagnostics, usage_error
from intentc.cli.common import (
    Commit,
    InventoryTarget,
    Kubeconfig,
    KubeContext,
    KubeVersionOverride,
    OnlyTopologyNodes,
    Paths,
    RenderTarget,
    Seed,
    TopologyFile,
    check_render_target,
    check_target_served,
    commit_or_exit,
    duration_option,
    format_option,
    out_dir_option,
    output_dir_or_exit,
    parse_kube_version,
    paths_or_exit,
    PrometheusUrl,
    prometheus_or_exit,
    TuneConfigFile,
    tune_config_or_exit,
)
from intentc.daemon.logformat import LogFormat, LogLevel
from intentc.daemon.logformat import configure as configure_logging
from intentc.diagnostics import OutputFormat
from intentc.reconcile.inventory import DEFAULT_TARGET_NAME
from intentc.render.targets import DEFAULT_TARGET

if TYPE_CHECKING:
    from intentc.daemon.reload import ReloadResult


def _on_signals(stop: Callable[[], None]) -> None:
    """SIGTERM (kubelet) and SIGINT (a terminal) both mean: finish cleanly."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger("intentc.daemon").info("received %s; shutting down", signal.Signals(signum).name)
        stop()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


@app.command(epilog="""Examples:

  intentc daemon --repo https://github.com/acme/intents.git --branch main \\
      --topology clusters/prod.yaml --listen :9090

  intentc daemon --repo /srv/intents --branch main -t clusters/prod.yaml --interval 15s --prune

  intentc daemon --repo . --local -t clusters/dev.yaml --kubeconfig ~/.kube/kind   # hot reload

  intentc daemon --repo /srv/intents -t clusters/prod.yaml --log-format json   # for a log pipeline

Follows the branch (fetch and poll every --interval), compiles each
new commit from git history and applies it as `apply` does (each intent
once its own prerequisites are done); watches the
managed kinds and runs drift detection on every event and every --resync; applies the drift policies (report | heal | rollback).  A rollout
that is not consistent (a wave not healthy in time, a gang member missing,
a placement changed) is rolled back to the last known-good commit when the
failing intents ask for `drift: rollback`.  Serves /healthz and /readyz on
--listen (plain HTTP) and /metrics over HTTPS on --metrics-listen to callers
whose token may `get` the /metrics URL (the ClusterRole
intentc-metrics-reader).  SIGTERM stops it cleanly (exit 0).

Leader election is on by default (kube-controller-manager's defaults:
lease 15 s, renew deadline 10 s, retry 2 s): run two replicas and only the
holder of the Lease intentc-system/intentc-daemon-<target> acts; the other
watches, serves /metrics, and answers /readyz with 503 "not leader".  A
crashed leader is replaced within one lease duration; one stopped by
SIGTERM releases the Lease at once.  --no-leader-elect acts at once, even
next to another daemon of the same target (one instance only).

With --prometheus-url the leader also recommends a batch for every serving
intent that declares one, from P99 latency, GPU memory used and OOM kills
(docs/sizing.md; queries and targets: --tune-config), in the Intent
objects' status (batchRecommendation) and the gauge
intentc_batch_recommended; it never changes the workload (`intentc tune`
writes the recommendations into the files).
""")
def daemon(
    *,  # keyword-only, so the required --topology below (no `=` default) can stay after --branch, its place in --help
    repo: str = typer.Option(..., "--repo", metavar="URL|DIR", help="Git repository: a local path or a URL to mirror."),
    branch: str = typer.Option("main", "--branch", metavar="NAME", help="Branch to follow."),
    topology: Optional[str] = typer.Option(None, "--topology", "-t", metavar="FILE",
                                           help="Topology file (path in the repository); with --cluster, the "
                                                "cluster's."),
    path: List[str] = typer.Option(["intents"], "--path", metavar="PATH", help="Intent paths in the repository (repeatable)."),
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    interval: float = duration_option("30s", "--interval", "Time between git polls.", minimum=0.1),
    resync: float = duration_option("5m", "--resync", "Time between full drift passes.", minimum=1.0),
    listen: str = typer.Option("127.0.0.1:9090", "--listen", metavar="HOST:PORT",
                               help="HOST:PORT for /healthz /readyz (plain HTTP): loopback by default; ':9090' or "
                                    "'0.0.0.0:9090' for kubelet probes from outside the pod ('' disables)."),
    metrics_listen: Optional[str] = typer.Option(None, "--metrics-listen", metavar="HOST:PORT",
                                                 help="HOST:PORT for /metrics over HTTPS (default: --listen's host, "
                                                      "port 8443; '' disables)."),
    metrics_secure: bool = typer.Option(True, "--metrics-secure/--no-metrics-secure",
                                        help="Serve /metrics over HTTPS to callers whose token may get /metrics "
                                             "(TokenReview + SubjectAccessReview); --no-metrics-secure serves it "
                                             "in plain HTTP on a loopback --listen instead, for local use."),
    metrics_cert_dir: Optional[Path] = typer.Option(None, "--metrics-cert-dir", metavar="DIR",
                                                    help="tls.crt and tls.key for /metrics (e.g. a Secret mount; "
                                                         "reloaded when they change); default: a self-signed "
                                                         "certificate generated at start."),
    target: InventoryTarget = DEFAULT_TARGET_NAME,
    workdir: Path = typer.Option(Path("/tmp/intentc-daemon"), "--workdir", metavar="DIR", help="Mirror and scratch space."),
    rollout_timeout: Optional[float] = duration_option(
        None, "--rollout-timeout",
        "How long each intent of a rollout may take to become healthy (default: from the intent's "
        "duration × (1 + slack) + 5 min, as `apply` derives it)."),
    prune: bool = typer.Option(False, "--prune", help="Delete managed objects a new commit no longer wants."),
    local: bool = typer.Option(False, "--local", help="Follow the working tree of --repo (hot reload) instead of the branch."),
    kube_version: KubeVersionOverride = None,
    render_target: RenderTarget = DEFAULT_TARGET,
    only_topology_nodes: OnlyTopologyNodes = False,
    seed: Seed = 0,
    log_level: LogLevel = typer.Option(LogLevel.INFO, "--log-level", help="Least severe level logged."),
    log_format: LogFormat = typer.Option(LogFormat.TEXT, "--log-format",
                                         help="text, or json: one JSON object per line (time, level, logger, msg)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", metavar="NAME",
                                          help="Run for this Cluster of --clusters DIR: its connection, topology, "
                                               "render target and intents; inventory target NAME (docs/fleets.md)."),
    clusters: Optional[Path] = typer.Option(None, "--clusters", metavar="DIR",
                                            help="The fleet's Cluster files (with --cluster)."),
    leader_elect: bool = typer.Option(True, "--leader-elect/--no-leader-elect",
                                      help="Act only while holding the Lease intentc-system/intentc-daemon-<target>, "
                                           "so replicas of one target never act twice."),
    lease_duration: int = duration_option("15s", "--leader-elect-lease-duration",
                                          "How long followers wait after the last renewal they saw before "
                                          "taking the Lease over (the failover time after a crash; whole "
                                          "seconds).", minimum=1, whole=True),
    renew_deadline: float = duration_option("10s", "--leader-elect-renew-deadline",
                                            "A leader that could not renew for this long stops acting "
                                            "(shorter than the lease duration).", minimum=0.1),
    retry_period: float = duration_option("2s", "--leader-elect-retry-period",
                                          "Time between attempts to take or renew the Lease.", minimum=0.1),
    prometheus_url: PrometheusUrl = None,
    tune_config: TuneConfigFile = None,
) -> None:
    """Run the drift controller: follow a branch, apply, watch, detect, heal or roll back."""
    from intentc.daemon.http import parse_listen
    from intentc.daemon.leader import Timing
    from intentc.daemon.loop import Daemon, DaemonConfig, ListenError
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import KubeError
    from intentc.pipeline.commit import CommitError, resolve_commit
    from intentc.vcs.gitrepo import GitError

    selected: tuple[str, tuple[tuple[str, str], ...]] | None = None
    if cluster is not None or clusters is not None:
        if local:
            usage_error("--local does not combine with --cluster: a fleet's daemon follows the branch")
        from intentc.cli.fleet import fleet_member_or_exit, repo_topology
        member = fleet_member_or_exit(cluster, clusters, topology is not None or kubeconfig is not None
                                      or context is not None)
        topology, kubeconfig, context = repo_topology(repo, member), member.kubeconfig, member.context
        render_target, target, selected = member.target, member.name, (member.name, member.labels)
    if topology is None:
        usage_error("--topology is needed (or --cluster NAME --clusters DIR)")
    check_render_target(render_target)
    configure_logging(log_level, log_format)
    timing = Timing(lease_duration, renew_deadline, retry_period)
    if timing.problem():
        usage_error(f"--leader-elect-*: {timing.problem()}")
    if listen:
        try:
            parse_listen(listen)
        except ValueError as e:
            usage_error(str(e))
    metrics_at = _metrics_listen(listen, metrics_listen, metrics_secure, metrics_cert_dir)
    commit: str | None = None
    if local:
        paths_or_exit([Path(repo) / p for p in path], to_stderr=True)   # the working tree it follows
        try:
            commit = resolve_commit([str(Path(repo) / p) for p in path])
        except CommitError as e:
            usage_error(str(e))
    tuning = tune_config_or_exit(tune_config)
    if prometheus_url is not None:
        prometheus_or_exit(prometheus_url)
    try:
        client = KubeClient.connect(kubeconfig, context)
    except KubeError as e:
        usage_error(e.message)
    check_render_target(render_target, parse_kube_version(kube_version))
    check_target_served(client, render_target)
    config = DaemonConfig(repo=repo, branch=branch, paths=tuple(path), topology=topology, local=local, commit=commit,
                          interval=interval, resync=resync, listen=listen or None, target=target,
                          metrics_secure=metrics_secure, metrics_listen=metrics_at,
                          metrics_cert_dir=str(metrics_cert_dir) if metrics_cert_dir else None,
                          workdir=str(workdir), rollout_timeout=rollout_timeout, prune=prune,
                          kube_version=parse_kube_version(kube_version), render_target=render_target, seed=seed,
                          cluster=selected, leader_elect=leader_elect, leader_timing=timing,
                          only_topology_nodes=only_topology_nodes, prometheus_url=prometheus_url or None,
                          tune=tuning)
    try:
        d = Daemon(config, client)
    except OSError as e:
        usage_error(str(e))
    _on_signals(d.stop)
    try:
        code = d.run()
    except (GitError, ListenError) as e:
        usage_error(str(e))
    finally:
        client.close()
    raise typer.Exit(code)


METRICS_PORT = 8443


def _metrics_listen(listen: str, metrics_listen: str | None, secure: bool, cert_dir: Path | None) -> str | None:
    """Where /metrics is served over HTTPS (None: not at all, or in plain HTTP on --listen);
    exits 2 on a combination that would serve it in the clear beyond this host."""
    from intentc.daemon.http import is_loopback, parse_listen

    if not secure:
        if metrics_listen or cert_dir:
            usage_error("--metrics-listen and --metrics-cert-dir are for HTTPS; with --no-metrics-secure "
                        "/metrics is served on --listen")
        if listen and not is_loopback(listen):
            usage_error(f"--no-metrics-secure serves /metrics in plain HTTP, so only on a loopback --listen "
                        f"(got {listen!r}); in a cluster keep --metrics-secure")
        return None
    if metrics_listen is None:
        if not listen:
            return None
        host = listen.rpartition(":")[0]
        metrics_listen = f"{host}:{METRICS_PORT}"
    if not metrics_listen:
        return None
    try:
        parse_listen(metrics_listen)
    except ValueError as e:
        usage_error(str(e).replace("--listen", "--metrics-listen"))
    if listen and parse_listen(listen)[1] == parse_listen(metrics_listen)[1] != 0:
        usage_error(f"--listen and --metrics-listen need different ports (both {parse_listen(listen)[1]})")
    return metrics_listen


class WatchFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


def _describe(result: ReloadResult, seconds: float, written: int, removed: int) -> str:
    snap = result.snapshot
    if not result.ok:
        kept = f"generation {snap.generation}" if snap is not None else "nothing"
        return f"reload failed in {seconds * 1000:.1f} ms; keeping {kept} in force"
    assert snap is not None
    intents = ", ".join(result.rerendered[:5]) + (" …" if len(result.rerendered) > 5 else "")
    parts = [f"generation {snap.generation} in {seconds * 1000:.1f} ms",
             f"{len(result.reparsed)} file(s) parsed",
             f"{len(result.rerendered)} intent(s) rendered" + (f" ({intents})" if intents else ""),
             result.plan_note or ("re-planned" if result.replanned else "plan kept")]
    if written or removed:
        parts.append(f"{written} file(s) written, {removed} removed")
    return "; ".join(parts)


@app.command(epilog="""Examples:

  intentc watch intents/ --topology clusters/dev.yaml

  intentc watch intents/ -t clusters/dev.yaml --out-dir build/   # keep build/ up to date

  intentc watch intents/ -t clusters/dev.yaml -o json     # one JSON object per reload

On each save only the changed files are parsed again and only the
affected intents re-planned and re-rendered.  A change that does not
compile prints its diagnostics and keeps the last good plan (and the files
in --out-dir) as they were.  Files are replaced atomically.  Ctrl-C stops.
""")
def watch(
    paths: Paths,
    topology: TopologyFile,
    out: Optional[Path] = out_dir_option(None, "Keep this output directory up to date."),
    commit: Commit = None,
    kube_version: Optional[str] = typer.Option(None, "--kube-version", metavar="MAJOR.MINOR", help="Target Kubernetes MAJOR.MINOR."),
    render_target: RenderTarget = DEFAULT_TARGET,
    seed: Seed = 0,
    format: WatchFormat = format_option(WatchFormat.TEXT),
) -> None:
    """Recompile incrementally whenever an intent file changes."""
    from intentc.daemon.reload import Reloader, follow, write_changed
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION

    paths_or_exit(paths, to_stderr=format is WatchFormat.JSON)
    sha = commit_or_exit(paths, commit)
    if out is not None:
        output_dir_or_exit(out)
    version = parse_kube_version(kube_version, DEFAULT_KUBE_VERSION) or DEFAULT_KUBE_VERSION
    check_render_target(render_target, version)
    reloader = Reloader(paths, str(topology), sha, version, render_target, seed)
    stop = threading.Event()
    previous: dict[str, str] | None = None
    lock = threading.Lock()

    def report(result: ReloadResult, seconds: float) -> None:
        nonlocal previous
        with lock:
            written: list[str] = []
            removed: list[str] = []
            if result.ok and result.snapshot is not None and out is not None:
                written, removed = write_changed(result.snapshot, out, previous)
                previous = result.snapshot.files()
            if format is WatchFormat.JSON:
                doc = {"ok": result.ok, "generation": result.snapshot.generation if result.snapshot else None,
                       "milliseconds": round(seconds * 1000, 3), "reparsed": list(result.reparsed),
                       "rerendered": list(result.rerendered), "replanned": result.replanned,
                       "plan_note": result.plan_note,
                       "written": written, "removed": removed,
                       "diagnostics": json.loads(_diag_json(result))}
                typer.echo(json.dumps(doc, sort_keys=True))
            else:
                emit_diagnostics(list(result.diagnostics), OutputFormat.TEXT, dict(result.sources), to_stderr=True)
                typer.echo(_describe(result, seconds, len(written), len(removed)))

    started = time.perf_counter()
    report(reloader.load(), time.perf_counter() - started)
    _on_signals(stop.set)
    follow(reloader, report, stop)
    raise typer.Exit(EXIT_OK)


def _diag_json(result: ReloadResult) -> str:
    from intentc.diagnostics import format_json
    return format_json(list(result.diagnostics))
