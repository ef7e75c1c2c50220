"""`intentc compile`: intents → plan → Kubernetes manifests on disk."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

import typer

from intentc.cli.app import (
    EXIT_FINDINGS,
    EXIT_USAGE,
    app,
    emit_diagnostics,
    exit_for,
    usage_error,
)
from intentc.cli.common import (
    Exclude,
    Jobs,
    LiveContext,
    OptionalTopologyFile,
    LiveKubeconfig,
    OnlyTopologyNodes,
    Paths,
    Seed,
    check_render_target,
    commit_or_exit,
    live_occupancy_or_exit,
    the_topology,
    parse_kube_version,
)
from intentc.diagnostics import OutputFormat
from intentc.render.capabilities import DEFAULT_KUBE_VERSION
from intentc.render.targets import DEFAULT_TARGET, TARGETS


@app.command(epilog=f"""Examples:

  intentc compile intents/ --topology clusters/prod.yaml --out build/

  intentc compile intents/ --topology clusters/prod.yaml --out build/ --kube-version 1.29

  intentc compile intents/ -t clusters/prod.yaml -d build/ --commit $GITHUB_SHA --format github

  intentc compile intents/ --clusters clusters/ -o build/        # a fleet: build/<cluster>/...

Writes build/manifests/NN-kind-namespace-name.yaml (NN = apply step: 00
namespaces, 01 RBAC, 02 quotas, 03 priority classes, 04+ waves),
build/plan.json and build/graph.json.  Without --kube-version, manifests
target Kubernetes {DEFAULT_KUBE_VERSION} (the oldest supported) and apply anywhere.
""")
def compile(
    paths: Paths,
    topology: OptionalTopologyFile = None,
    # compile writes a tree: -o names where, as `kubectl kustomize -o PATH` does (the one
    # command whose -o is not a format; its diagnostics format is --format).
    out: Path = typer.Option(..., "--out", "-o", metavar="DIR", help="Output directory."),
    commit: Optional[str] = typer.Option(None, "--commit", metavar="SHA",
                                         help="Commit SHA to stamp (default: git HEAD of the first path)."),
    kube_version: Optional[str] = typer.Option(
        None, "--kube-version", metavar="MAJOR.MINOR", help=f"Target Kubernetes MAJOR.MINOR (default {DEFAULT_KUBE_VERSION})."),
    render_target: str = typer.Option(DEFAULT_TARGET, "--render-target", metavar="NAME",
                                      help=f"How GPUs are bound: {', '.join(sorted(TARGETS))}."),
    seed: Seed = 0,
    format: OutputFormat = typer.Option(OutputFormat.TEXT, "--format", help="Diagnostics format."),
    jobs: Jobs = 0,
    kubeconfig: LiveKubeconfig = None,
    context: LiveContext = None,
    only_topology_nodes: OnlyTopologyNodes = False,
    exclude: Exclude = None,
    clusters: Optional[Path] = typer.Option(
        None, "--clusters", metavar="DIR",
        help="A fleet: compile for every Cluster in DIR/*.yaml (its topology and render target) "
             "into OUT/<cluster>/ (docs/fleets.md)."),
) -> None:
    """Compile intents into Kubernetes manifests, plan.json and graph.json; exit 1 on errors.

    Errors inside one tenant's declarations hold back that tenant only: the other
    tenants' manifests are written and the exit code is still 1.  Any other error
    (syntax, cycles, topology) writes nothing."""
    from intentc.compile import compile_paths, write_outputs
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION

    version = parse_kube_version(kube_version, DEFAULT_KUBE_VERSION)
    assert version is not None
    if clusters is not None:
        if topology is not None or kubeconfig is not None or context is not None:
            usage_error("--clusters takes each cluster's topology and target from its Cluster file; "
                        "drop --topology, --kubeconfig and --context")
        from intentc.cli.fleet import compile_fleet_command
        compile_fleet_command(paths, clusters, out, commit_or_exit(paths, commit), version, seed, format,
                              jobs or None, exclude or ())
        return
    check_render_target(render_target, version)
    sha = commit_or_exit(paths, commit)
    if topology is None:
        topology = the_topology(paths, exclude or ())
    live = None
    if kubeconfig is not None or context is not None:
        live = functools.partial(live_occupancy_or_exit, kubeconfig, context, only_topology_nodes)
    result = compile_paths(paths, str(topology), sha, version, render_target, seed, jobs or None,
                           exclude or (), live)
    emit_diagnostics(list(result.diagnostics), format, result.sources)
    if result.topology_unreadable:
        raise typer.Exit(EXIT_USAGE)
    if result.rendered is None:
        exit_for(list(result.diagnostics))     # the exit code `check` gives for the same files
    try:
        written = write_outputs(result, out)
    except OSError as e:
        usage_error(f"cannot write {out.as_posix()}: {e}")
    for c in result.rendered.choices:
        typer.echo(f"note: {c.intent}: {c.decision}: {c.reason}", err=True)
    manifests = sum(1 for w in written if w.startswith("manifests/"))
    typer.echo(f"wrote {manifests} manifests, plan.json and graph.json to {out.as_posix()} "
               f"(commit {sha[:12]}, Kubernetes {version}, {render_target})", err=True)
    if result.held_tenants:
        typer.echo(f"held back (errors above; nothing of theirs written): {', '.join(result.held_tenants)}",
                   err=True)
        raise typer.Exit(EXIT_FINDINGS)
