"""`intentc compile`: intents → plan → Kubernetes manifests on disk."""

from __future__ import annotations

import dataclasses
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
    AllowDirty,
    cannot_write,
    check_render_target,
    say_dirty,
    stamp_or_exit,
    format_option,
    out_dir_option,
    output_dir_or_exit,
    paths_or_exit,
    live_occupancy_or_exit,
    no_intents_or_exit,
    declared,
    the_topology,
    parse_kube_version,
)
from intentc.diagnostics import OutputFormat
from intentc.render.capabilities import DEFAULT_KUBE_VERSION
from intentc.render.targets import DEFAULT_TARGET, TARGETS


@app.command(epilog=f"""Examples:

  intentc compile intents/ --topology clusters/prod.yaml --out-dir build/

  intentc compile intents/ --topology clusters/prod.yaml --out-dir build/ --kube-version 1.34

  intentc compile intents/ -t clusters/prod.yaml -d build/ --commit $GITHUB_SHA -o github

  intentc compile intents/ --clusters clusters/ -d build/        # a fleet: build/<cluster>/...

Writes build/manifests/NN-kind-namespace-name.yaml (NN = apply step: 00
namespaces, 01 RBAC, 02 quotas, 03 priority classes, 04+ waves),
build/plan.json and build/graph.json.  Without --kube-version, manifests
target Kubernetes {DEFAULT_KUBE_VERSION} (the oldest supported) and apply anywhere.
""")
def compile(
    paths: Paths,
    topology: OptionalTopologyFile = None,
    out: Path = out_dir_option(..., "Output directory."),
    commit: Optional[str] = typer.Option(None, "--commit", metavar="SHA",
                                         help="Commit SHA to stamp (default: git HEAD of the first path)."),
    allow_dirty: AllowDirty = False,
    kube_version: Optional[str] = typer.Option(
        None, "--kube-version", metavar="MAJOR.MINOR", help=f"Target Kubernetes MAJOR.MINOR (default {DEFAULT_KUBE_VERSION})."),
    render_target: str = typer.Option(DEFAULT_TARGET, "--render-target", metavar="NAME",
                                      help=f"How GPUs are bound: {', '.join(sorted(TARGETS))}."),
    seed: Seed = 0,
    format: OutputFormat = format_option(OutputFormat.TEXT, "Diagnostics format."),
    jobs: Jobs = 0,
    kubeconfig: LiveKubeconfig = None,
    context: LiveContext = None,
    only_topology_nodes: OnlyTopologyNodes = False,
    exclude: Exclude = None,
    clusters: Optional[Path] = typer.Option(
        None, "--clusters", metavar="DIR",
        help="A fleet: compile for every Cluster in DIR/*.yaml (its topology and render target) "
             "into OUT_DIR/<cluster>/ (docs/fleets.md)."),
) -> None:
    """Compile intents into Kubernetes manifests, plan.json and graph.json; exit 1 on errors.

    Errors inside one tenant's declarations hold back that tenant only: the other
    tenants' manifests are written and the exit code is still 1.  Any other error
    (syntax, cycles, topology) writes nothing."""
    from intentc.pipeline import Driver, Request, Stage
    from intentc.pipeline.provenance import stamped
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION
    from intentc.render.model import short_stamp

    version = parse_kube_version(kube_version, DEFAULT_KUBE_VERSION)
    assert version is not None
    paths_or_exit(paths, format)   # before the commit lookup, which would blame git for a typo
    output_dir_or_exit(out)        # before the work: a file or device there is never replaced
    if clusters is not None:
        if topology is not None or kubeconfig is not None or context is not None:
            usage_error("--clusters takes each cluster's topology and target from its Cluster file; "
                        "drop --topology, --kubeconfig and --context")
        from intentc.cli.fleet import compile_fleet_command
        compile_fleet_command(paths, clusters, out, commit, allow_dirty, version, seed, format, jobs or None,
                              exclude or ())
        return
    check_render_target(render_target, version)
    stamp = stamp_or_exit(paths, [topology] if topology is not None else [], commit, allow_dirty, exclude or ())
    sha = stamp.commit
    driver = Driver(paths, jobs or None, exclude or ())
    if topology is None:
        topology = the_topology(driver)
    live = None
    if kubeconfig is not None or context is not None:
        live = functools.partial(live_occupancy_or_exit, kubeconfig, context, only_topology_nodes)
    unit = driver.run(Request(str(topology), sha, version, render_target, seed, live, out_dir=out), Stage.RENDER)
    assert unit.result is not None
    result = stamped(unit.result, stamp)
    emit_diagnostics(list(result.diagnostics), format, result.sources)
    if result.topology_unreadable:
        raise typer.Exit(EXIT_USAGE)
    if result.rendered is None:
        exit_for(list(result.diagnostics))     # the exit code `check` gives for the same files
    no_intents_or_exit(paths, declared(result.program), list(result.diagnostics))
    try:
        written = driver.run(dataclasses.replace(unit, result=result), Stage.WRITE).written
    except OSError as e:
        usage_error(cannot_write(out, e))
    for c in result.rendered.choices:
        typer.echo(f"note: {c.intent}: {c.decision}: {c.reason}", err=True)
    manifests = sum(1 for w in written if w.startswith("manifests/") and w.endswith(".yaml"))
    typer.echo(f"wrote {manifests} manifests and their Kustomization, plan.json and graph.json to {out.as_posix()} "
               f"(commit {short_stamp(sha)}, Kubernetes {version}, {render_target})", err=True)
    say_dirty(stamp)
    if result.held_tenants:
        typer.echo(f"held back (errors above; nothing of theirs written): {', '.join(result.held_tenants)}",
                   err=True)
        raise typer.Exit(EXIT_FINDINGS)
