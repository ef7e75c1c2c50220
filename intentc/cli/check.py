"""`intentc check`: parse and validate intents, report diagnostics."""

from __future__ import annotations

import typer

from intentc.cli.app import app, emit_diagnostics, exit_for
from intentc.cli.common import Exclude, Jobs, Paths
from intentc.diagnostics import OutputFormat


@app.command(epilog="""Examples:

  intentc check intents/

  intentc check intents/ --format github      # annotations on the PR

  intentc check a.intent b.yaml --strict      # warnings fail too
""")
def check(
    paths: Paths,
    format: OutputFormat = typer.Option(OutputFormat.TEXT, "--format", "-f", help="Output format."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as errors."),
    jobs: Jobs = 0,
    exclude: Exclude = None,
) -> None:
    """Parse and validate intents; exit 1 when any error is found, 2 when a path cannot be read."""
    from intentc.pipeline import check as run_check

    result = run_check(paths, jobs=jobs or None, exclude=exclude or ())
    diags = list(result.diagnostics)
    emit_diagnostics(diags, format, result.sources)
    if format is OutputFormat.TEXT and not diags:
        p = result.program
        typer.echo(f"ok: {len(p.intents)} intents, {len(p.tenants)} tenants, "
                   f"{len(p.datasets)} datasets, {len(p.topologies)} topologies")
    exit_for(diags, strict)
