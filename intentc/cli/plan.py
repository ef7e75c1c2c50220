"""`intentc plan`: waves and topology-aware GPU placement, as a table, plan.json or a picture."""

from __future__ import annotations

import enum
import functools
from pathlib import Path

import typer

from intentc.atomic import STDOUT, is_stdout
from intentc.cli.app import EXIT_USAGE, app, emit_diagnostics, exit_for
from intentc.cli.common import (DiagnosticsFormat, Exclude, Jobs, LiveContext, LiveKubeconfig, OnlyTopologyNodes, Paths,
                                TopologyFile, declared, format_option, live_occupancy_or_exit, no_intents_or_exit,
                                paths_or_exit, write_output_or_exit)
from intentc.diagnostics import OutputFormat, sorted_diagnostics


class PlanFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    HTML = "html"


DEFAULT_HTML = "plan.html"


@app.command(epilog="""Examples:

  intentc plan intents/ --topology clusters/prod.yaml

  intentc plan intents/ --topology clusters/prod.yaml -o json > plan.json

  intentc plan intents/ --topology clusters/prod.yaml -o html --out plan.html

  intentc plan intents/ --topology clusters/prod.yaml -o json --seed 7 --out plan.json

  intentc plan intents/ --topology clusters/prod.yaml --context prod-eu    # on what the cluster has free now

Without --kubeconfig/--context the plan is a preview on the empty topology
(plan.json: "basis": {"kind": "preview"}); with them it leaves out what the
cluster cannot give now — missing, cordoned, NotReady or tainted nodes, GPUs
held by pods this target does not own (other intentc targets included) —
and says why ("basis": {"kind": "live", "notes": [...]}).
""")
def plan(
    paths: Paths,
    topology: TopologyFile,
    format: PlanFormat = format_option(PlanFormat.TEXT, "text: tables; json: plan.json; html: a GPU timeline per node."),
    out: Path | None = typer.Option(None, "--out", metavar="FILE",
                                       help=f"Write the result here ({STDOUT}: stdout; html default: {DEFAULT_HTML})."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Breaks exact ties between equally good nodes."),
    diagnostics_format: DiagnosticsFormat = OutputFormat.TEXT,
    jobs: Jobs = 0,
    kubeconfig: LiveKubeconfig = None,
    context: LiveContext = None,
    only_topology_nodes: OnlyTopologyNodes = False,
    exclude: Exclude = None,
) -> None:
    """Schedule every intent onto the topology over time (start and end in plan time; what does
    not fit yet is queued): gangs all-or-nothing, `within`/`prefer` scopes, SLA order, weighted
    fair share and quotas at every instant.  Intents that can never run are reported (E0601) and exit 1;
    an unreadable topology file exits 2."""
    from intentc.pipeline import Driver, Request, Stage
    from intentc.plan.html import render_html, waits_for
    from intentc.plan.jsonio import plan_to_json
    from intentc.plan.text import render_text

    paths_or_exit(paths, diagnostics_format, to_stderr=True)     # no plan of nothing on stdout
    driver = Driver(paths, jobs or None, exclude or ())
    topo = driver.topology(str(topology))       # read before the check: an unreadable one ends the run
    if topo.loaded is None:
        sources = {topology.as_posix(): topo.text} if topo.text is not None else {}
        emit_diagnostics(sorted_diagnostics(topo.diagnostics), diagnostics_format, sources, to_stderr=True)
        raise typer.Exit(EXIT_USAGE if topo.unreadable else 1)
    live = None
    if kubeconfig is not None or context is not None:
        live = functools.partial(live_occupancy_or_exit, kubeconfig, context, only_topology_nodes)
    result = driver.run(Request(str(topology), seed=seed, live=live), Stage.PLAN).result
    assert result is not None and result.program is not None and result.plan is not None
    assert result.topology is not None
    the_plan, diags, sources = result.plan, list(result.diagnostics), result.sources
    emit_diagnostics(diags, diagnostics_format, sources, to_stderr=True)
    no_intents_or_exit(paths, declared(result.program), diags)

    if format is PlanFormat.JSON:
        text = plan_to_json(the_plan)
    elif format is PlanFormat.HTML:
        text = render_html(the_plan, result.topology.topology, waits_for(result.program))
        out = out or Path(DEFAULT_HTML)
    else:
        text = render_text(the_plan)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_output_or_exit(out, text)
        if format is PlanFormat.HTML and not is_stdout(out):
            typer.echo(f"wrote {out.as_posix()}", err=True)
    exit_for(diags)
