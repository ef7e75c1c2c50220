"""`intentc drift` and `intentc rollback`: compare a cluster with the intents, and go back."""

from __future__ import annotations

import enum
import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from intentc.cli.app import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    app,
    emit_diagnostics,
    usage_error,
)
from intentc.cli.common import (
    DryRun,
    InventoryTarget,
    Kubeconfig,
    KubeContext,
    KubeVersionOverride,
    Paths,
    RenderTarget,
    OptionalTopologyFile,
    RepoTopologyFile,
    Seed,
    check_render_target,
    cluster_errors,
    commit_or_exit,
    connect_or_exit,
    dry_run_option,
    duration_option,
    format_option,
    paths_or_exit,
    the_topology,
)
from intentc.diagnostics import OutputFormat
from intentc.reconcile.inventory import DEFAULT_TARGET_NAME, LAST_GOOD
from intentc.render.targets import DEFAULT_TARGET

if TYPE_CHECKING:
    from intentc.drift.detect import History, Report
    from intentc.ir import Program


class ReportFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


class DriftFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


def _history(paths: list[str], sha: str) -> History | None:
    """The branch history behind `sha`, when the inputs live in a git repository."""
    from intentc.drift.detect import History
    from intentc.vcs import gitrepo

    first = Path(paths[0]) if paths else Path(".")
    where = first if first.is_dir() else first.parent
    try:
        return History(gitrepo.rev_list(where, sha), gitrepo.newer_than(where, sha))
    except gitrepo.GitError:
        return None


def _in_repo(root: Path, topology: str) -> str:
    """A relative path names a file in the repository (read from the revision);
    an absolute one is made repository-relative when it is inside the
    repository, and read from disk as given when it is not."""
    p = Path(topology)
    if not p.is_absolute():
        return p.as_posix()
    p = p.resolve()
    return p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)


def work_directory(root: Path) -> Path:
    """Where a revision's files are exported to compile them (a cache, outside the repository)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "intentc" / "rollback"
    return base / hashlib.sha256(str(root).encode()).hexdigest()[:16]


def _show(value: Any) -> str:
    return "<absent>" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def report_text(report: Report, target: str, commit: str) -> str:
    from intentc.drift.detect import DRIFT_CLASSES, DriftClass

    objects = len({f.ref for f in report.findings})
    lines = [f"intentc drift: target {target}, commit {commit[:12]}, {objects} objects"]
    for f in report.drifted:
        lines.append(f"  {f.drift.value:<9} {f.ref}: {f.message}")
        for c in f.changes:
            lines.append(f"              {c.path}: {_show(c.desired)} -> {_show(c.live)}  (by {c.manager})")
    counts = report.counts()
    found = ", ".join(f"{counts[c]} {c.value}" for c in DRIFT_CLASSES if c is not DriftClass.IN_SYNC and counts[c])
    lines.append(f"drift: {found}; {counts[DriftClass.IN_SYNC]} in sync" if found
                 else f"in sync: {counts[DriftClass.IN_SYNC]} objects")
    return "\n".join(lines) + "\n"


def report_github(report: Report, target: str, commit: str, program: Program | None) -> str:
    """Workflow commands: one annotation per drifted object, on the declaration
    of the intent (or tenant) it was rendered from; objects that belong to
    neither (orphans) go on the run.  An object changed, missing or from an
    unknown commit is an error; an orphan or a stale one a warning."""
    from intentc.diagnostics import github as gh
    from intentc.drift.detect import DriftClass

    warn = {DriftClass.ORPHAN, DriftClass.STALE}
    out = [gh.command(gh.Level.NOTICE, report_text(report, target, commit).splitlines()[-1],
                      title=f"intentc drift: target {target}, commit {commit[:12]}")]
    for f in report.drifted:
        decl = None
        if program is not None:
            decl = (program.intent(f.intent) if f.intent else None) or (program.tenant(f.tenant) if f.tenant else None)
        body = [f"{f.ref}: {f.message}"] + [f"{c.path}: {_show(c.desired)} -> {_show(c.live)} (by {c.manager})"
                                            for c in f.changes]
        level = gh.Level.WARNING if f.drift in warn else gh.Level.ERROR
        out.append(gh.command(level, "\n".join(body), decl.span if decl is not None else None,
                              f"intentc drift: {f.drift.value} {f.ref}", end=False))
    return gh.lines(out)


@app.command(epilog="""Examples:

  intentc drift intents/ --topology clusters/prod.yaml

  intentc drift intents/ -t clusters/prod.yaml -o github   # annotations in a scheduled workflow

  intentc drift intents/ -t clusters/prod.yaml --context prod-eu -o json

  intentc drift intents/ --clusters clusters/ -o json     # a fleet: one row per cluster

Classes: modified (a field intentc sets was changed by another field
manager, named), missing, orphan (labelled managed-by=intentc and neither
desired nor in any inventory, or in this target's inventory but no longer
desired: an apply without --prune or an interrupted prune left it), stale (applied from a commit older than the
one that changed it), foreign (commit-sha not in the repository's history).
Fields only other managers set (defaults, HPA, status) are never drift.
Exit 0 in sync, 1 drift found, 2 errors (compile, kubeconfig, cluster).
""")
def drift(
    paths: Paths,
    topology: OptionalTopologyFile = None,
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    target: InventoryTarget = DEFAULT_TARGET_NAME,
    commit: Optional[str] = typer.Option(None, "--commit", metavar="SHA", help="Commit SHA the intents are at (default: git HEAD)."),
    kube_version: KubeVersionOverride = None,
    render_target: RenderTarget = DEFAULT_TARGET,
    seed: Seed = 0,
    format: DriftFormat = format_option(DriftFormat.TEXT),
    clusters: Optional[Path] = typer.Option(
        None, "--clusters", metavar="DIR",
        help="A fleet: compare every Cluster in DIR/*.yaml (inventory target = the cluster's name); "
             "one row per cluster, exit code the worst (docs/fleets.md)."),
) -> None:
    """Compare the cluster with the compiled intents (read-only); exit 1 on drift."""
    from intentc.drift.managed import observe
    from intentc.pipeline import Driver, Request

    paths_or_exit(paths, to_stderr=True)
    if clusters is not None:
        if topology is not None or kubeconfig is not None or context is not None or format is DriftFormat.GITHUB:
            usage_error("--clusters reads each cluster's topology and connection from its Cluster file; "
                        "drop --topology, --kubeconfig and --context (formats: text, json)")
        from intentc.cli.fleet import drift_fleet_command
        sha = commit_or_exit(paths, commit)
        drift_fleet_command(paths, clusters, sha, seed, _history(paths, sha), kube_version,
                            format is DriftFormat.JSON)
    driver = Driver(paths)
    if topology is None:
        topology = the_topology(driver)
    check_render_target(render_target)
    sha = commit_or_exit(paths, commit)
    client, version = connect_or_exit(kubeconfig, context, kube_version)
    check_render_target(render_target, version)
    try:
        result = driver.compile(Request(str(topology), sha, version, render_target, seed))
        diag_format = {DriftFormat.JSON: OutputFormat.JSON, DriftFormat.GITHUB: OutputFormat.GITHUB}.get(
            format, OutputFormat.TEXT)
        if not result.ok or result.rendered is None:
            emit_diagnostics(list(result.diagnostics), diag_format, result.sources, to_stderr=True)
            typer.echo("intentc: error: the intents do not compile; nothing to compare", err=True)
            raise typer.Exit(EXIT_USAGE)
        with cluster_errors(target):
            report, _ = observe(client, result.rendered.manifests, target, _history(paths, sha))
    finally:
        client.close()
    if format is DriftFormat.JSON:
        doc = {"target": target, "commit": sha, **report.to_json()}
        typer.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
    elif format is DriftFormat.GITHUB:
        typer.echo(report_github(report, target, sha, result.program), nl=False)
    else:
        typer.echo(report_text(report, target, sha), nl=False)
    raise typer.Exit(EXIT_FINDINGS if report.has_drift else EXIT_OK)


@app.command(epilog="""Examples:

  intentc rollback --to last-good --topology clusters/prod.yaml --dry-run

  intentc rollback --to last-good -t clusters/prod.yaml --reason "bad tokenizer image"

  intentc rollback --to last-good -t clusters/prod.yaml --dry-run=server   # the API server checks it too

  intentc rollback --to HEAD~2 --repo . --path intents -t clusters/prod.yaml -o json

Compiles the chosen commit from git history (read from the object
database; nothing is checked out), applies it with server-side apply and
quarantines the commit it replaces, so `intentc daemon` does not apply
that commit again; a newer commit on the branch clears the quarantine.
Exit 0 rolled back, 1 the apply failed, 2 nothing to roll back to / errors.
""")
def rollback(
    *,  # keyword-only, so the required --topology below (no `=` default) can stay after --to, its place in --help
    to: str = typer.Option(..., "--to", metavar="REV", help=f"`{LAST_GOOD}` (from the inventory) or a git revision."),
    topology: RepoTopologyFile,
    repo: Path = typer.Option(Path("."), "--repo", metavar="DIR", help="The git repository of the intents."),
    path: List[str] = typer.Option(["intents"], "--path", metavar="PATH", help="Intent paths inside the repository (repeatable)."),
    kubeconfig: Kubeconfig = None,
    context: KubeContext = None,
    target: InventoryTarget = DEFAULT_TARGET_NAME,
    dry_run: DryRun = dry_run_option(
        "Show what would change; write and quarantine nothing: client (bare --dry-run) compares with the "
        "live objects; server also sends each change to the API server as a dry run (dryRun=All)."),
    prune: bool = typer.Option(True, "--prune/--no-prune", help="Delete objects only the rolled-back commit had."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for each wave to be healthy."),
    timeout: float = duration_option("5m", "--timeout", "How long to wait for health, in all."),
    reason: str = typer.Option("rolled back by hand", "--reason", metavar="MESSAGE", help="Recorded with the quarantine and the Event."),
    kube_version: KubeVersionOverride = None,
    render_target: RenderTarget = DEFAULT_TARGET,
    seed: Seed = 0,
    format: ReportFormat = format_option(ReportFormat.TEXT),
) -> None:
    """Apply an earlier commit (default: the last known-good one) and quarantine the current one."""
    from intentc.drift.rollback import RepoSource, RollbackError
    from intentc.drift.rollback import rollback as run_rollback
    from intentc.reconcile.sync import ApplyOptions
    from intentc.vcs import gitrepo

    check_render_target(render_target)
    paths_or_exit([repo], to_stderr=True)
    try:
        root = gitrepo.repo_root(repo)
    except gitrepo.GitError as e:
        usage_error(str(e))
    source = RepoSource(str(root), tuple(path), _in_repo(root, topology), render_target=render_target, seed=seed)
    client, version = connect_or_exit(kubeconfig, context, kube_version)
    options = ApplyOptions(target=target, dry_run=dry_run is not DryRun.NONE, server_dry_run=dry_run is DryRun.SERVER,
                           prune=prune, wait=wait, timeout=timeout)
    try:
        with cluster_errors(target):
            outcome = run_rollback(client, replace(source, kube_version=version), work_directory(root),
                                   to, reason=reason, options=options)
    except RollbackError as e:
        usage_error(e.message)
    finally:
        client.close()
    if format is ReportFormat.JSON:
        doc = {"from": outcome.from_commit, "to": outcome.to_commit, "reason": outcome.reason,
               "dryRun": outcome.dry_run, "quarantined": outcome.quarantined,
               "apply": json.loads(outcome.applied.to_json())}
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        typer.echo(outcome.to_text(), nl=False)
    raise typer.Exit(outcome.applied.exit_code)
