"""`intentc plan`: waves and topology-aware GPU placement, as a table, plan.json or a picture."""

from __future__ import annotations

import enum
from pathlib import Path

import typer

from intentc.atomic import write_atomic
from intentc.cli.app import EXIT_USAGE, app, emit_diagnostics, exit_for
from intentc.cli.common import DiagnosticsFormat, Exclude, Jobs, Paths, TopologyFile
from intentc.diagnostics import OutputFormat, sorted_diagnostics
from intentc.sources import read_text


class PlanFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    HTML = "html"


DEFAULT_HTML = "plan.html"


@app.command(epilog="""Examples:

  intentc plan intents/ --topology clusters/prod.yaml

  intentc plan intents/ --topology clusters/prod.yaml --format json > plan.json

  intentc plan intents/ --topology clusters/prod.yaml --format html --out plan.html

  intentc plan intents/ --topology clusters/prod.yaml --format json --seed 7 --out plan.json
""")
def plan(
    paths: Paths,
    topology: TopologyFile,
    format: PlanFormat = typer.Option(PlanFormat.TEXT, "--format", "-f",
                                      help="text: tables; json: plan.json; html: a picture of the cluster."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                       help=f"Write the result here (html default: {DEFAULT_HTML})."),
    seed: int = typer.Option(0, "--seed", min=0, help="Breaks exact ties between equally good nodes."),
    diagnostics_format: DiagnosticsFormat = OutputFormat.TEXT,
    jobs: Jobs = 0,
    exclude: Exclude = None,
) -> None:
    """Place every intent onto the topology: gangs all-or-nothing, `within`/`prefer` scopes,
    SLA order and weighted fair share.  Unplaceable intents are reported (E0601) and exit 1;
    an unreadable topology file exits 2."""
    from intentc.pipeline import check as run_check
    from intentc.plan.html import render_html
    from intentc.plan.jsonio import plan_to_json
    from intentc.plan.planner import make_plan
    from intentc.plan.text import render_text
    from intentc.topology.load import load_topology

    loaded, topo_diags = load_topology(str(topology))
    sources: dict[str, str] = {}
    topo_text = read_text(topology)
    if topo_text is not None:
        sources[topology.as_posix()] = topo_text
    if loaded is None:
        emit_diagnostics(sorted_diagnostics(topo_diags), diagnostics_format, sources, to_stderr=True)
        unreadable = any(d.code.startswith("E00") for d in topo_diags) or not topology.is_file()
        raise typer.Exit(EXIT_USAGE if unreadable else 1)
    result = run_check(paths, jobs=jobs or None, exclude=exclude or ())
    sources.update(result.sources)
    the_plan, plan_diags = make_plan(result.program, loaded, seed)
    diags = sorted_diagnostics(list(result.diagnostics) + topo_diags + plan_diags)
    emit_diagnostics(diags, diagnostics_format, sources, to_stderr=True)

    if format is PlanFormat.JSON:
        text = plan_to_json(the_plan)
    elif format is PlanFormat.HTML:
        text = render_html(the_plan, loaded.topology)
        out = out or Path(DEFAULT_HTML)
    else:
        text = render_text(the_plan)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_atomic(out, text)
        if format is PlanFormat.HTML:
            typer.echo(f"wrote {out.as_posix()}", err=True)
    exit_for(diags)
