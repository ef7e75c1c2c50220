"""`intentc convert`: rewrite a file in the other surface (DSL ↔ YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from intentc.cli.app import EXIT_FINDINGS, app, emit_diagnostics, usage_error
from intentc.cli.common import format_option, paths_or_exit, write_output_or_exit
from intentc.diagnostics import OutputFormat
from intentc.frontend.convert import Surface
from intentc.frontend.sources import read_source


@app.command(epilog="""Examples:

  intentc convert intents/nlp/pretrain.intent --to yaml

  intentc convert intents/vision/pipeline.yaml --to dsl --out intents/vision/pipeline.intent
""")
def convert(
    file: Path = typer.Argument(..., metavar="FILE", help="An .intent or .yaml file."),
    to: Surface = typer.Option(..., "--to", help="Target surface."),
    out: Optional[Path] = typer.Option(None, "--out", metavar="FILE", help="Write here instead of stdout (-: stdout)."),
    format: OutputFormat = format_option(OutputFormat.TEXT, "Format of diagnostics."),
) -> None:
    """Convert intents between the DSL and YAML; the result compiles to the same IR."""
    paths_or_exit([file], format, to_stderr=True)
    if file.is_dir():
        usage_error(f"{file.as_posix()}: is a directory; convert takes one file")
    source, diags = read_source(file)
    if source is None:
        emit_diagnostics(diags, format, {}, to_stderr=True)
        raise typer.Exit(EXIT_FINDINGS)
    from intentc.frontend.convert import (
        convert as run_convert,  # printers load only when converting
    )
    text, diags = run_convert(source, to)
    emit_diagnostics(diags, format, {source.path: source.text}, to_stderr=True)
    if text is None:
        raise typer.Exit(EXIT_FINDINGS)
    if out is None:
        typer.echo(text, nl=False)
    else:
        write_output_or_exit(out, text)
