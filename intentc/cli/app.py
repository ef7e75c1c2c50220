"""The typer application and the options every command shares."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from intentc import __version__
from intentc.diagnostics import Diagnostic, OutputFormat, has_errors, render

# Exit codes (DESIGN.md): 0 success / nothing found, 1 findings, 2 usage or environment.
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="intentc",
    help="GitOps compiler and drift controller for AI batch and inference workloads.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"intentc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """intentc: compile intents to plans and manifests, apply them, watch for drift."""


def emit_diagnostics(diags: list[Diagnostic], fmt: OutputFormat, sources: dict[str, str],
                     to_stderr: bool = False) -> None:
    """Print diagnostics; commands whose stdout is a result (a plan, a graph)
    send them to stderr so the result stays machine-readable."""
    out = render(diags, fmt, sources, __version__)
    if out:
        typer.echo(out, nl=False, err=to_stderr)


# A path that cannot be read is an environment problem, not a finding in the intents.
UNREADABLE_PATH = "E0001"


def exit_for(diags: list[Diagnostic], strict: bool = False) -> NoReturn:
    """2 when an input could not be read, 1 for errors (and warnings with
    `strict`), else 0 — the same rule for every command that reports."""
    if any(d.code == UNREADABLE_PATH for d in diags):
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_FINDINGS if has_errors(diags, strict) else EXIT_OK)


def usage_error(message: str) -> NoReturn:
    typer.echo(f"intentc: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def main() -> None:
    """Console entry point; typer/click usage errors already exit 2."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
