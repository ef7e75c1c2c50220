"""`intentc apply`: reconcile a cluster to the compiled plan with server-side apply."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Optional

import typer

from intentc.cli.app import EXIT_FINDINGS, EXIT_USAGE, app, emit_diagnostics, exit_for
from intentc.cli.common import (
    AllowDirty,
    Commit,
    DryRun,
    InventoryTarget,
    Kubeconfig,
    KubeContext,
    KubeVersionOverride,
    OnlyTopologyNodes,
    Exclude,
    Paths,
    RenderTarget,
    OptionalTopologyFile,
    Seed,
    check_render_target,
    check_target_served,
    say_dirty,
    stamp_or_exit,
    connect_or_exit,
    dry_run_option,
    duration_option,
    format_option,
    paths_or_exit,
    the_topology,
)
from intentc.cli.progress import StderrProgress
from intentc.diagnostics import OutputFormat
from intentc.reconcile.inventory import DEFAULT_TARGET_NAME
from intentc.render.targets import DEFAULT_TARGET


class Binding(str, enum.Enum):
    LIVE = "live"
    PREVIEW = "preview"


class ApplyFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


@app.command(epilog="""Examples:

  intentc apply intents/ --topology clusters/prod.yaml

  intentc apply intents/ -t clusters/prod.yaml --dry-run

  intentc apply intents/ -t clusters/prod.yaml --dry-run=server   # the API server validates, admits, writes nothing

  intentc apply intents/ -t clusters/prod.yaml --prune --timeout 15m

  intentc apply intents/ -t clusters/prod.yaml --no-wait -o json --context prod-eu

  intentc apply intents/ --cluster prod-eu-1 --clusters clusters/     # one cluster of a fleet

Order: namespaces, RBAC, quotas, priority classes, then the intents; with
--wait (default) each intent is created once the intents it depends on
(after, datasets) have succeeded and, where pods are pinned to nodes, the
intent the plan runs before it on its GPUs has ended, as the plan starts it.
Just before intents are created, those whose planned GPUs the cluster cannot
give now (node cordoned, NotReady, tainted, GPUs held by other pods or by
intents still running) are re-planned: the report says where the binding
differs from the compiled preview and why, and an intent that does not fit
waits (an Event on the target says why) until its budget runs out.  An
intent that fails holds back only what depends on it.  --no-wait binds every wave
on the cluster as it is at the start.  A cluster with none of the
topology's nodes gets the preview as compiled.
Objects whose intentc.dev/spec-hash already matches get no request.
Exit 0 applied, 1 failed (conflict, invalid object, failed Job, timeout,
or a tenant held back by its errors: the other tenants are applied, the held
one is neither applied nor pruned), 2 cluster unreachable / bad kubeconfig / usage.
""")
def apply(
    paths: Paths,
    topology: OptionalTopologyFile = None,
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    dry_run: DryRun = dry_run_option(
        "Print what would change, write nothing: client (bare --dry-run) compares with the live objects; "
        "server also sends each change to the API server as a dry run (dryRun=All: validation, admission, "
        "field ownership)."),
    prune: bool = typer.Option(False, "--prune", help="Delete managed objects that are no longer desired."),
    wait: bool = typer.Option(True, "--wait/--no-wait",
                              help="Create each intent once its own prerequisites are done, and wait for it to be "
                                   "healthy; --no-wait creates everything at once."),
    timeout: Optional[float] = duration_option(
        None, "--timeout",
        "How long each intent may take to become healthy (default: from the intent: duration x (1 + slack) "
        "+ 5m for a Job, 10m for a serve intent to be available)."),
    binding: Binding = typer.Option(Binding.LIVE, "--binding",
                                    help="live: bind on what the cluster has free (with --wait, each intent again "
                                         "just before it is created); preview: the empty-cluster plan, as compiled."),
    only_topology_nodes: OnlyTopologyNodes = False,
    force_conflicts: bool = typer.Option(False, "--force-conflicts", help="Take ownership of fields other managers own."),
    target: InventoryTarget = DEFAULT_TARGET_NAME,
    commit: Commit = None,
    allow_dirty: AllowDirty = False,
    kube_version: KubeVersionOverride = None,
    render_target: RenderTarget = DEFAULT_TARGET,
    workers: int = typer.Option(8, "--workers", min=1, metavar="N", help="Concurrent requests within a step."),
    lock_timeout: float = duration_option("10m", "--lock-timeout", "How long to wait while another apply holds "
                                                                   "the target."),
    seed: Seed = 0,
    # Internal, for benchmarks/bench_fidelity.py's baselines only: "waves" releases whole waves
    # (the behaviour before per-intent release), "poll" releases each intent but learns that Jobs
    # ended by reading them once a second (before the watch), "edges" releases each intent on its
    # graph edges alone under kueue (Kueue's order, before the plan's), "unordered" releases each
    # intent without its quota-bound tenant's start order; not part of the CLI's contract.
    release: str = typer.Option("intents", "--release", hidden=True),
    format: ApplyFormat = format_option(ApplyFormat.TEXT),
    exclude: Exclude = None,
    cluster: Optional[str] = typer.Option(None, "--cluster", metavar="NAME",
                                          help="Apply this Cluster of --clusters DIR: its connection, topology, "
                                               "render target and intents; inventory target NAME (docs/fleets.md)."),
    clusters: Optional[Path] = typer.Option(None, "--clusters", metavar="DIR", help="The fleet's Cluster files."),
) -> None:
    """Compile, then server-side apply the result to a cluster, each intent as its prerequisites end."""
    from intentc.kube.cluster_state import read_cluster_state
    from intentc.pipeline import Driver, Request
    from intentc.pipeline.provenance import stamped
    from intentc.policy import BUILTIN
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.reconcile.release import WAVES, release_order
    from intentc.reconcile.sync import ApplyOptions, Reconciler
    from intentc.reconcile.timeouts import wave_budgets

    paths_or_exit(paths, to_stderr=format is ApplyFormat.JSON)
    only = None
    if cluster is not None or clusters is not None:
        from intentc.cli.fleet import fleet_member_or_exit
        from intentc.fleet.select import for_cluster
        member = fleet_member_or_exit(cluster, clusters, topology is not None or kubeconfig is not None
                                      or context is not None)
        topology, kubeconfig, context = Path(member.topology), member.kubeconfig, member.context
        render_target, target, only = member.target, member.name, for_cluster(member.name, member.label_map)
    driver = Driver(paths, exclude=exclude or ())
    if topology is None:
        topology = the_topology(driver)
    check_render_target(render_target)
    stamp = stamp_or_exit(paths, [topology], commit, allow_dirty, exclude or ())
    sha = stamp.commit
    client, version = connect_or_exit(kubeconfig, context, kube_version, pool_size=max(workers, 4))
    check_render_target(render_target, version)
    check_target_served(client, render_target)
    result = stamped(driver.compile(Request(str(topology), sha, version, render_target, seed, only=only)), stamp)
    diag_format = OutputFormat.JSON if format is ApplyFormat.JSON else OutputFormat.TEXT
    if result.topology_unreadable or result.rendered is None:
        emit_diagnostics(list(result.diagnostics), diag_format, result.sources)
        if result.topology_unreadable:
            raise typer.Exit(EXIT_USAGE)
        exit_for(list(result.diagnostics))
    emit_diagnostics(list(result.diagnostics), OutputFormat.TEXT, result.sources, to_stderr=True)
    say_dirty(stamp)
    assert result.program is not None and result.plan is not None
    options = ApplyOptions(target=target, dry_run=dry_run is not DryRun.NONE,
                           server_dry_run=dry_run is DryRun.SERVER, prune=prune, wait=wait, timeout=timeout,
                           force_conflicts=force_conflicts, workers=workers, lock_wait=lock_timeout,
                           budgets=wave_budgets(result.program, result.plan), watch=release != "poll",
                           release=WAVES if release == "waves" else
                           release_order(result.program, result.plan.placements,
                                         release != "edges" or render_target != "kueue",
                                         tenant_order=release != "unordered"))
    binder = None
    if binding is Binding.LIVE and render_target != "kueue" and result.topology is not None:
        # Kueue admits on live state itself; every other target pins what the plan says
        binder = LiveBinder(result.program, result.topology, result.plan, result.rendered, version,
                            lambda: read_cluster_state(client), result.policies or BUILTIN, seed,
                            cluster_nodes=not only_topology_nodes)
    try:
        with StderrProgress() as progress:
            outcome = Reconciler(client, options, progress=progress, binder=binder).apply(result.rendered)
    finally:
        client.close()
    typer.echo(outcome.to_json() if format is ApplyFormat.JSON else outcome.to_text(), nl=False)
    if result.held_tenants:     # the others were applied; the run still has findings
        typer.echo(f"held back (not applied, not pruned): {', '.join(result.held_tenants)}", err=True)
        raise typer.Exit(max(outcome.exit_code, EXIT_FINDINGS))
    raise typer.Exit(outcome.exit_code)
