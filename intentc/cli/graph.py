"""`intentc graph`: the dependency graph of the intents, as DOT, Mermaid or JSON."""

from __future__ import annotations

import enum

import typer

from intentc.cli.app import app, emit_diagnostics, exit_for
from intentc.cli.common import (DiagnosticsFormat, Exclude, Jobs, Paths, declared, format_option, no_intents_or_exit,
                                paths_or_exit)
from intentc.diagnostics import OutputFormat


class GraphFormat(str, enum.Enum):
    DOT = "dot"
    MERMAID = "mermaid"
    JSON = "json"


@app.command(epilog="""Examples:

  intentc graph intents/ -o dot | dot -Tsvg > graph.svg

  intentc graph intents/ -o mermaid     # paste into a PR description

  intentc graph intents/ -o json | jq '.critical_path'
""")
def graph(
    paths: Paths,
    format: GraphFormat = format_option(GraphFormat.DOT, "Graph output format."),
    diagnostics_format: DiagnosticsFormat = OutputFormat.TEXT,
    jobs: Jobs = 0,
    exclude: Exclude = None,
) -> None:
    """Print the dependency graph (edges from `after` and from datasets) with waves and the
    critical path; cycles and missing datasets are reported on stderr and exit 1."""
    from intentc.graph import digraph as depgraph
    from intentc.pipeline import Driver

    paths_or_exit(paths, diagnostics_format, to_stderr=True)     # no graph of nothing on stdout
    result = Driver(paths, jobs or None, exclude or ()).check()
    g = result.graph
    diags = list(result.diagnostics)
    emit_diagnostics(diags, diagnostics_format, result.sources, to_stderr=True)
    no_intents_or_exit(paths, declared(result.program), diags)
    if format is GraphFormat.JSON:
        text = depgraph.to_json(g, depgraph.waves(g))
    elif format is GraphFormat.MERMAID:
        text = depgraph.to_mermaid(g)
    else:
        text = depgraph.to_dot(g)
    typer.echo(text, nl=False)
    exit_for(diags)
