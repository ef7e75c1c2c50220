"""The fleet side of `compile`, `drift` and `daemon` (--clusters DIR): one Cluster per file.

Kept apart from the single-cluster commands so that they stay as they were;
each function here is what one of them does when given --clusters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import typer

from intentc.cli.app import EXIT_FINDINGS, EXIT_USAGE, emit_diagnostics, exit_for, usage_error
from intentc.cli.common import cannot_write, paths_or_exit, say_dirty, stamp_or_exit
from intentc.diagnostics import Diagnostic, OutputFormat, has_errors, sorted_diagnostics
from intentc.render.capabilities import KubeVersion
from intentc.render.targets import TARGETS, version_problem

if TYPE_CHECKING:
    from intentc.drift.detect import History
    from intentc.fleet.build import Prepared
    from intentc.fleet.clusters import Cluster, Fleet
    from intentc.fleet.summary import Row


def load_fleet_or_exit(directory: Path, fmt: OutputFormat = OutputFormat.TEXT) -> "Fleet":
    """The fleet in `directory`; its diagnostics printed and exit 1 (2: unreadable) when it has errors."""
    from intentc.fleet.clusters import load_fleet

    paths_or_exit([directory], fmt, to_stderr=True)      # a mistyped --clusters is exit 2, as a path is
    fleet = load_fleet(directory)
    if has_errors(list(fleet.diagnostics)):
        emit_diagnostics(list(fleet.diagnostics), fmt, dict(fleet.sources), to_stderr=True)
        exit_for(list(fleet.diagnostics))
    return fleet


def pick_cluster(fleet: "Fleet", name: str) -> "Cluster":
    from intentc.diagnostics.suggest import did_you_mean

    cluster = fleet.get(name)
    if cluster is None:
        usage_error(f"no cluster {name!r} in {fleet.directory}{did_you_mean(name, fleet.names)} "
                    f"(clusters: {', '.join(fleet.names)})")
    return cluster


def fleet_member_or_exit(name: str | None, directory: Path | None, overridden: bool) -> "Cluster":
    """The Cluster `--cluster NAME --clusters DIR` names, for a command that then takes its
    connection, topology and target from it (`overridden`: one of those was given too)."""
    if name is None or directory is None:
        usage_error("--cluster NAME and --clusters DIR go together")
    if overridden:
        usage_error("--cluster takes the topology and the connection from its Cluster file; drop --topology, "
                    "--kubeconfig and --context")
    return pick_cluster(load_fleet_or_exit(directory), name)


def compile_fleet_command(paths: Sequence[str], directory: Path, out: Path, commit: str | None, allow_dirty: bool,
                          version: KubeVersion, seed: int, fmt: OutputFormat, jobs: int | None,
                          exclude: Sequence[str]) -> None:
    import dataclasses

    from intentc.fleet.build import compile_fleet, write_fleet
    from intentc.pipeline.provenance import stamped
    from intentc.render.model import short_stamp

    fleet = load_fleet_or_exit(directory, fmt)
    # the Cluster files and the topologies they name are inputs as much as the intents
    stamp = stamp_or_exit(paths, [directory, *sorted({c.topology for c in fleet.clusters})], commit, allow_dirty,
                          exclude)
    sha = stamp.commit
    for c in fleet.clusters:
        problem = version_problem(TARGETS[c.target], version)
        if problem:
            usage_error(f"cluster {c.name}: {problem}; pass --kube-version 1.34 or later")
    result = compile_fleet(paths, fleet, sha, version, seed, jobs, exclude)
    result = dataclasses.replace(result, results=tuple((c, stamped(r, stamp)) for c, r in result.results))
    # Every cluster's compile repeats the repository's findings: print each once.
    diags: list[Diagnostic] = list(dict.fromkeys(
        list(result.diagnostics) + [d for _, r in result.results for d in r.diagnostics]))
    sources = dict(result.sources)
    for _, r in result.results:
        sources.update(r.sources)
    emit_diagnostics(sorted_diagnostics(diags), fmt, sources)
    if any(r.topology_unreadable for _, r in result.results):
        raise typer.Exit(EXIT_USAGE)
    if not result.results or any(r.rendered is None for _, r in result.results):
        exit_for(diags)
    try:
        written = write_fleet(result, out)
    except OSError as e:
        usage_error(cannot_write(out, e))
    for cluster, r in result.results:
        n = sum(1 for w in written.get(cluster.name, []) if w.startswith("manifests/") and w.endswith(".yaml"))
        typer.echo(f"{cluster.name}: wrote {n} manifests and their Kustomization, plan.json and graph.json to "
                   f"{(out / cluster.name).as_posix()} ({cluster.target})", err=True)
    typer.echo(f"fleet: {len(result.results)} clusters (commit {short_stamp(sha)}, Kubernetes {version})", err=True)
    say_dirty(stamp)
    held = sorted({t for _, r in result.results for t in r.held_tenants})
    if held:
        typer.echo(f"held back (errors above; nothing of theirs written): {', '.join(held)}", err=True)
        raise typer.Exit(EXIT_FINDINGS)


def _observe_cluster(prep: "Prepared", cluster: "Cluster", sha: str, seed: int, history: "History | None",
                     kube_version: str | None) -> "Row":
    """One row of the fleet summary: connect, compile for the server's version, detect."""
    from intentc.drift.detect import DRIFT_CLASSES, DriftClass
    from intentc.drift.managed import observe
    from intentc.fleet.build import compile_cluster
    from intentc.fleet.summary import Row
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import KubeError

    try:
        client = KubeClient.connect(cluster.kubeconfig, cluster.context)
    except KubeError as e:
        return Row(cluster.name, cluster.target, False, f"cannot connect: {e.message}")
    try:
        try:
            version = KubeVersion.parse(kube_version or client.version())
        except KubeError as e:
            return Row(cluster.name, cluster.target, False, f"unreachable: {e.message}")
        except ValueError as e:
            return Row(cluster.name, cluster.target, True, f"cannot tell the server's version: {e}")
        problem = version_problem(TARGETS[cluster.target], version)
        if problem:
            return Row(cluster.name, cluster.target, True, problem)
        result = compile_cluster(prep, cluster, sha, version, seed)
        if not result.ok or result.rendered is None:
            first = next((d for d in result.diagnostics if d.is_error), None)
            return Row(cluster.name, cluster.target, True, "the intents do not compile for it"
                       + (f": {first.span.file}:{first.span.line}: {first.message}" if first else ""))
        try:
            report, inventory = observe(client, result.rendered.manifests, cluster.name, history)
        except KubeError as e:
            return Row(cluster.name, cluster.target, False, e.message)
        except ValueError as e:
            return Row(cluster.name, cluster.target, True, f"the inventory of target {cluster.name} is unreadable: {e}")
        counts = report.counts()
        return Row(cluster.name, cluster.target, True, None, len({f.ref for f in report.findings}),
                   len({f.ref for f in report.drifted}),
                   tuple((c.value, counts[c]) for c in DRIFT_CLASSES if c is not DriftClass.IN_SYNC and counts[c]),
                   inventory.commit, tuple(f.to_json() for f in report.drifted))
    finally:
        client.close()


def drift_fleet_command(paths: Sequence[str], directory: Path, sha: str, seed: int, history: "History | None",
                        kube_version: str | None, as_json: bool) -> None:
    """`intentc drift --clusters DIR`: every cluster compared, one row each; exit the worst."""
    from intentc.fleet.build import prepare
    from intentc.fleet.summary import exit_code, to_json, to_text

    fleet = load_fleet_or_exit(directory)
    prep = prepare(paths, fleet)
    diags = list(prep.diagnostics) + list(prep.checked.diagnostics)
    if has_errors(diags):
        emit_diagnostics(sorted_diagnostics(diags), OutputFormat.TEXT, prep.sources, to_stderr=True)
        typer.echo("intentc: error: the intents do not compile; nothing to compare", err=True)
        raise typer.Exit(EXIT_USAGE)
    rows = [_observe_cluster(prep, c, sha, seed, history, kube_version) for c in fleet.clusters]
    typer.echo(to_json(rows, sha) if as_json else to_text(rows, sha), nl=False)
    raise typer.Exit(exit_code(rows))


def repo_topology(repo: str, cluster: "Cluster") -> str:
    """The cluster's topology as the daemon reads it: a path in the repository when the file
    is inside a local `repo`, else the file itself."""
    from intentc.vcs import gitrepo

    topology = Path(cluster.topology).resolve()
    try:
        root = gitrepo.repo_root(Path(repo)).resolve() if gitrepo.is_local_repository(repo) else None
    except gitrepo.GitError:
        root = None
    return topology.relative_to(root).as_posix() if root is not None and topology.is_relative_to(root) \
        else str(topology)
