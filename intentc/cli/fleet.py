"""The fleet side of `compile`, `drift` and `daemon` (--clusters DIR): one Cluster per file.

Kept apart from the single-cluster commands so that they stay as they were;
each function here is what one of them does when given --clusters.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import typer

from intentc.cli.app import EXIT_FINDINGS, EXIT_USAGE, emit_diagnostics, exit_for, usage_error
from intentc.diagnostics import Diagnostic, OutputFormat, has_errors, sorted_diagnostics
from intentc.render.capabilities import KubeVersion
from intentc.render.targets import TARGETS, version_problem

if TYPE_CHECKING:
    from intentc.fleet.clusters import Cluster, Fleet


def load_fleet_or_exit(directory: Path, fmt: OutputFormat = OutputFormat.TEXT) -> "Fleet":
    """The fleet in `directory`; its diagnostics printed and exit 1 (2: unreadable) when it has errors."""
    from intentc.fleet.clusters import load_fleet

    fleet = load_fleet(directory)
    if has_errors(list(fleet.diagnostics)):
        emit_diagnostics(list(fleet.diagnostics), fmt, dict(fleet.sources), to_stderr=True)
        exit_for(list(fleet.diagnostics))
    return fleet


def pick_cluster(fleet: "Fleet", name: str) -> "Cluster":
    from intentc.suggest import did_you_mean

    cluster = fleet.get(name)
    if cluster is None:
        usage_error(f"no cluster {name!r} in {fleet.directory}{did_you_mean(name, fleet.names)} "
                    f"(clusters: {', '.join(fleet.names)})")
    return cluster


def compile_fleet_command(paths: Sequence[str], directory: Path, out: Path, sha: str, version: KubeVersion,
                          seed: int, fmt: OutputFormat, jobs: int | None, exclude: Sequence[str]) -> None:
    from intentc.fleet.build import compile_fleet, write_fleet

    fleet = load_fleet_or_exit(directory, fmt)
    for c in fleet.clusters:
        problem = version_problem(TARGETS[c.target], version)
        if problem:
            usage_error(f"cluster {c.name}: {problem}; pass --kube-version 1.34 or later")
    result = compile_fleet(paths, fleet, sha, version, seed, jobs, exclude)
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
        usage_error(f"cannot write {out.as_posix()}: {e}")
    for cluster, r in result.results:
        n = sum(1 for w in written.get(cluster.name, []) if w.startswith("manifests/"))
        typer.echo(f"{cluster.name}: wrote {n} manifests, plan.json and graph.json to "
                   f"{(out / cluster.name).as_posix()} ({cluster.target})", err=True)
    typer.echo(f"fleet: {len(result.results)} clusters (commit {sha[:12]}, Kubernetes {version})", err=True)
    held = sorted({t for _, r in result.results for t in r.held_tenants})
    if held:
        typer.echo(f"held back (errors above; nothing of theirs written): {', '.join(held)}", err=True)
        raise typer.Exit(EXIT_FINDINGS)
