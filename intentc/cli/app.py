"""The options every command shares, on the typer application (`cli/lazy.py` makes it)."""

from __future__ import annotations

import enum
import os
import sys
from typing import Any, Mapping, NoReturn

import typer

from intentc import __version__, collector
from intentc.cli import coercion
from intentc.cli.lazy import app
from intentc.diagnostics import Diagnostic, OutputFormat, has_errors, render

# Exit codes (docs/design.md, "Command line and exit codes"): 0 success / nothing found, 1 findings, 2 usage or environment.
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class ColorMode(str, enum.Enum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


COLOR_KEY = "color"
# Set by the root callback, which runs first in every invocation (typer vendors
# click from 0.2x on, so click's own context stack is not a portable place).
_settings: dict[str, ColorMode] = {}


def wants_color(mode: ColorMode, environ: Mapping[str, str], is_terminal: bool) -> bool:
    """--color always/never decide; in auto, a non-empty NO_COLOR turns colour off,
    then a non-empty FORCE_COLOR turns it on, else a terminal gets colour."""
    if mode is not ColorMode.AUTO:
        return mode is ColorMode.ALWAYS
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return is_terminal


def _argument_placeholders() -> None:
    """Recent typer releases print an argument's Python type after its name in
    --help ("PATH... <list[str]>"), and ignore the metavar doing so, which
    options honour.  Give arguments that have a metavar the same treatment.
    Older releases have no such method and print the metavar alone already."""
    from typer import core

    argument = getattr(core, "TyperArgument", None)
    original = getattr(argument, "display_type_rich", None)
    if argument is None or original is None:
        return

    def display_type_rich(self: Any, ctx: Any) -> Any:
        return None if self.metavar is not None else original(self, ctx)

    argument.display_type_rich = display_type_rich


_argument_placeholders()
coercion.install()

def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"intentc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                 help="Print the version and exit."),
    color: ColorMode = typer.Option(ColorMode.AUTO, "--color",
                                    help="Colour diagnostics: auto (on a terminal, unless NO_COLOR is set; "
                                         "FORCE_COLOR forces it), always, never."),
) -> None:
    """intentc: compile intents to plans and manifests, apply them, watch for drift."""
    _settings[COLOR_KEY] = color


def use_color(to_stderr: bool) -> bool:
    """Whether text written to stdout (or stderr) gets colour: --color, else
    NO_COLOR / FORCE_COLOR (the common conventions), else whether it is a terminal."""
    stream = sys.stderr if to_stderr else sys.stdout
    return wants_color(_settings.get(COLOR_KEY, ColorMode.AUTO), os.environ, stream.isatty())


def emit_diagnostics(diags: list[Diagnostic], fmt: OutputFormat, sources: dict[str, str],
                     to_stderr: bool = False) -> None:
    """Print diagnostics; commands whose stdout is a result (a plan, a graph)
    send them to stderr so the result stays machine-readable."""
    color = fmt is OutputFormat.TEXT and use_color(to_stderr)
    out = render(diags, fmt, sources, __version__, color=color)
    if out:
        typer.echo(out, nl=False, err=to_stderr, color=color or None)   # click strips escapes off a terminal


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
    """Run the command line; typer/click usage errors already exit 2."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


def console() -> None:
    """The `intentc` program (console script, ``python -m intentc``): `main`, in a
    process that ends when it does, so a command may leave what it built to the end
    of the process (`collector.hold`) and it is not freed.  Callers that go on after
    `main` (a test's wrapper, a benchmark) call `main` itself."""
    collector.hold_until_exit()
    try:
        main()
    except SystemExit as done:
        if done.code is not None and not isinstance(done.code, int):
            raise
        collector.exit_held(done.code or 0)
