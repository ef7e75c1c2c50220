"""`intentc fmt`: rewrite DSL files in the canonical layout."""

from __future__ import annotations

import difflib
from typing import List

import typer

from intentc.atomic import write_atomic
from intentc.cli.app import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, app, emit_diagnostics, usage_error
from intentc.cli.common import Exclude, cannot_write, format_option
from intentc.diagnostics import OutputFormat
from intentc.frontend.sources import DSL_SUFFIXES, SourceFile, decode, discover, display_path, read_guarded


@app.command(epilog="""Examples:

  intentc fmt intents/                 # rewrite every *.intent file in place

  intentc fmt --check intents/         # in CI: exit 1 if any file is not formatted

  intentc fmt --diff intents/nlp/pretrain.intent   # show what would change, write nothing
""")
def fmt(
    paths: List[str] = typer.Argument(..., metavar="PATH", help="Files or directories (searched for *.intent)."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 if a file would change."),
    diff: bool = typer.Option(False, "--diff", help="Print a unified diff instead of writing."),
    format: OutputFormat = format_option(OutputFormat.TEXT, "Format of diagnostics."),
    exclude: Exclude = None,
) -> None:
    """Format *.intent files (idempotent; files with errors are never touched)."""
    from intentc.frontend.dsl_print import format_source

    files, diags = discover(paths, exclude or ())
    unreadable = bool(diags)
    sources: dict[str, str] = {}
    changed: list[str] = []
    for f in files:
        if not f.name.endswith(DSL_SUFFIXES):
            continue
        shown = display_path(f)
        data, read_diags = read_guarded(str(f))
        if data is None:
            unreadable = unreadable or any(d.code == "E0001" for d in read_diags)
            diags.extend(read_diags)
            continue
        text, read_diags = decode(shown, data)
        diags.extend(read_diags)
        if text is None:
            continue
        sources[shown] = text
        new, fmt_diags = format_source(SourceFile(shown, text))
        diags.extend(fmt_diags)
        if new is None or new.encode("utf-8") == data:
            continue
        changed.append(shown)
        if diff:
            typer.echo("".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                    fromfile=shown, tofile=shown)), nl=False)
        if not (check or diff):
            try:
                write_atomic(f, new)        # through a link to the file: the link stays
            except OSError as e:
                usage_error(cannot_write(f, e))
    emit_diagnostics(diags, format, sources, to_stderr=True)
    verb = "would reformat" if (check or diff) else "reformatted"
    for shown in changed:
        typer.echo(f"{verb} {shown}", err=True)
    if unreadable:
        raise typer.Exit(EXIT_USAGE)
    failed = any(d.is_error for d in diags) or (check and bool(changed))
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_OK)

