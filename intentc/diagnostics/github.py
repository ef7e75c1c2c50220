"""GitHub Actions workflow commands (`::error file=F,line=L::message`), the one
writer for every `-o github` (check, schema-diff, diff, drift).

A workflow command is one line; the runner turns it into an annotation on
the pull request's files (when `file` names one of them) or on the run.
Data and property values have their own escaping rules, as the runner
reads them: `%`, CR and LF everywhere, and `:` and `,` in properties too.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from intentc.diagnostics import Span


class Level(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(level: Level, message: str, span: Span | None = None, title: str | None = None,
            end: bool = True) -> str:
    """One workflow command line (no newline).  `span` places it on a file;
    `end=False` gives only the start position (for spans that mean a point)."""
    props: list[str] = []
    if span is not None:
        props += [f"file={escape_property(span.file)}", f"line={span.line}", f"col={span.column}"]
        if end:
            props += [f"endLine={span.end_line}", f"endColumn={span.end_column}"]
    if title is not None:
        props.append(f"title={escape_property(title)}")
    head = f"::{level.value} {','.join(props)}" if props else f"::{level.value}"
    return f"{head}::{escape_data(message)}"


def lines(commands: list[str]) -> str:
    return "\n".join(commands) + ("\n" if commands else "")
