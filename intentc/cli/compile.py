"""`intentc compile`: intents → plan → Kubernetes manifests on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from intentc.cli.app import (
    EXIT_FINDINGS,
    EXIT_USAGE,
    app,
    emit_diagnostics,
    usage_error,
)
from intentc.cli.common import (
    Jobs,
    Paths,
    Seed,
    TopologyFile,
    check_render_target,
    commit_or_exit,
    parse_kube_version,
)
from intentc.diagnostics import OutputFormat
from intentc.render.capabilities import DEFAULT_KUBE_VERSION
from intentc.render.targets import DEFAULT_TARGET, TARGETS


@app.command(epilog=f"""Examples:

  intentc compile intents/ --topology clusters/prod.yaml --out build/

  intentc compile intents/ --topology clusters/prod.yaml --out build/ --kube-version 1.29

  intentc compile intents/ -t clusters/prod.yaml -o build/ --commit $GITHUB_SHA --format github

Writes build/manifests/NN-kind-namespace-name.yaml (NN = apply step: 00
namespaces, 01 RBAC, 02 quotas, 03 priority classes, 04+ waves),
build/plan.json and build/graph.json.  Without --kube-version, manifests
target Kubernetes {DEFAULT_KUBE_VERSION} (the oldest supported) and apply anywhere.
""")
def compile(
    paths: Paths,
    topology: TopologyFile,
    out: Path = typer.Option(..., "--out", "-o", help="Output directory."),
    commit: Optional[str] = typer.Option(None, "--commit",
                                         help="Commit SHA to stamp (default: git HEAD of the first path)."),
    kube_version: Optional[str] = typer.Option(
        None, "--kube-version", help=f"Target Kubernetes MAJOR.MINOR (default {DEFAULT_KUBE_VERSION})."),
    render_target: str = typer.Option(DEFAULT_TARGET, "--render-target",
                                      help=f"How GPUs are bound: {', '.join(sorted(TARGETS))}."),
    seed: Seed = 0,
    format: OutputFormat = typer.Option(OutputFormat.TEXT, "--format", "-f", help="Diagnostics format."),
    jobs: Jobs = 0,
) -> None:
    """Compile intents into Kubernetes manifests, plan.json and graph.json; exit 1 on errors
    (nothing is written then)."""
    from intentc.compile import compile_paths, write_outputs
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION

    version = parse_kube_version(kube_version, DEFAULT_KUBE_VERSION)
    assert version is not None
    check_render_target(render_target, version)
    sha = commit_or_exit(paths, commit)
    result = compile_paths(paths, str(topology), sha, version, render_target, seed, jobs or None)
    emit_diagnostics(list(result.diagnostics), format, result.sources)
    if result.topology_unreadable:
        raise typer.Exit(EXIT_USAGE)
    if not result.ok or result.rendered is None:
        raise typer.Exit(EXIT_FINDINGS)
    try:
        written = write_outputs(result, out)
    except OSError as e:
        usage_error(f"cannot write {out.as_posix()}: {e}")
    for c in result.rendered.choices:
        typer.echo(f"note: {c.intent}: {c.decision}: {c.reason}", err=True)
    manifests = sum(1 for w in written if w.startswith("manifests/"))
    typer.echo(f"wrote {manifests} manifests, plan.json and graph.json to {out.as_posix()} "
               f"(commit {sha[:12]}, Kubernetes {version}, {render_target})", err=True)
