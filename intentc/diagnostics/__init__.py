"""Diagnostics are values, not exceptions.

Every stage appends `Diagnostic`s to a list and keeps going, so one run
reports every problem it can find.  A diagnostic always carries a `Span`
so the user can jump to the offending text; the output formats
(text, json, github, sarif, junit) are views of the same list.

Lines and columns are 1-based, end positions are exclusive columns on the
end line (as editors and SARIF count them).

The package holds what every stage reports with: `codes` (the catalogue),
`github` (the one writer of GitHub workflow commands) and `suggest`
(did-you-mean).  The diagnostic itself lives here, in the package's face,
because every module names it and the parse cache pickles it by this path.
"""

from __future__ import annotations

import enum
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from intentc.compact import Compact


@dataclass(frozen=True, order=True, slots=True)
class Span:
    """Where a value was written.  Slotted (72 bytes instead of 112 with an
    instance dictionary): a 100,000-intent repository carries three million."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __reduce__(self) -> tuple[object, ...]:
        # Unpickled by `make_span`: the default for slotted dataclasses
        # (`__setstate__`, one `object.__setattr__` per field) took twice as long.
        return make_span, (self.file, self.line, self.column, self.end_line, self.end_column)

    @classmethod
    def point(cls, file: str, line: int, column: int, width: int = 1) -> "Span":
        return cls(file, line, column, line, column + max(width, 1))

    @classmethod
    def whole_file(cls, file: str) -> "Span":
        return cls(file, 1, 1, 1, 1)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


_new = object.__new__
_SET = tuple(getattr(Span, name).__set__ for name in Span.__slots__)
_SET_FILE, _SET_LINE, _SET_COLUMN, _SET_END_LINE, _SET_END_COLUMN = _SET


def make_span(file: str, line: int, column: int, end_line: int, end_column: int) -> Span:
    """`Span(...)` without the frozen dataclass `__init__` (five guarded
    `object.__setattr__` calls): the parsers build some thirty spans per intent,
    and this is half the cost.  Same value, same type."""
    span = _new(Span)
    _SET_FILE(span, file)
    _SET_LINE(span, line)
    _SET_COLUMN(span, column)
    _SET_END_LINE(span, end_line)
    _SET_END_COLUMN(span, end_column)
    return span




class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class Related(Compact):
    """A second place that belongs to the same finding (e.g. the first definition)."""

    message: str
    span: Span


@dataclass(frozen=True, slots=True)
class Diagnostic(Compact):
    code: str
    severity: Severity
    message: str
    span: Span
    hint: str | None = None
    related: tuple[Related, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[object, ...]:
        s = self.span
        return (s.file, s.line, s.column, self.code, self.message)


# Values quoted in messages are cut to this many characters: a diagnostic
# travels into CI annotations and daemon logs, where a whole value (a token
# in a file that was never YAML) must not.  Source lines shown under a
# message are cut to a window of SOURCE_WINDOW characters around the column.
EXCERPT_CHARS = 40
SOURCE_WINDOW = 160


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """At most `limit` characters of a value, on one line, "…" marking a cut;
    control characters (a terminal escape in a name) are shown as \\uXXXX."""
    text = str(value)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " if c in "\n\r\t" else f"\\u{ord(c):04x}" for c in text)


def error(code: str, message: str, span: Span, hint: str | None = None,
          related: Sequence[Related] = ()) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, hint, tuple(related))


def warning(code: str, message: str, span: Span, hint: str | None = None,
            related: Sequence[Related] = ()) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, span, hint, tuple(related))


MAX_PER_FILE = 1000


def capped(diags: Sequence[Diagnostic], limit: int = MAX_PER_FILE) -> tuple[Diagnostic, ...]:
    """One file's diagnostics, the first `limit` by position and an E0008 after them:
    a file of 4 MiB must not turn into gigabytes of findings."""
    if len(diags) <= limit:
        return tuple(diags)
    kept = sorted(diags, key=Diagnostic.sort_key)[:limit]
    last = kept[-1].span
    return (*kept, error("E0008", f"more than {limit} errors and warnings in this file; the rest are not reported",
                         Span.point(last.file, last.line, last.column), hint="fix the ones above first"))


def capped_per_file(diags: Iterable[Diagnostic], limit: int = MAX_PER_FILE) -> list[Diagnostic]:
    """`capped` for each file of a whole run (the cross-file passes add their own findings)."""
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diags:
        by_file.setdefault(d.span.file, []).append(d)
    return [d for group in by_file.values() for d in capped(group, limit)]


def sorted_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Stable report order: by file, position, code; duplicates dropped."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for d in sorted(diags, key=Diagnostic.sort_key):
        key = (d.sort_key(), d.severity, d.hint)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def has_errors(diags: Iterable[Diagnostic], strict: bool = False) -> bool:
    return any(d.is_error or (strict and d.severity is Severity.WARNING) for d in diags)


# --------------------------------------------------------------------------
# Output formats
# --------------------------------------------------------------------------

class OutputFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"
    JUNIT = "junit"


def _plain(text: str, **_style: object) -> str:
    return text


# What colour says: the severity (as compilers print it), the caret under the text, the hint.
SEVERITY_COLORS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}
# Findings that the file is not an intentc file at all: its text is not shown.
_UNQUOTED = frozenset({"E0206"})


def _caret_block(d: Diagnostic, sources: Mapping[str, str], split: dict[str, list[str]],
                 paint: Callable[..., str] = _plain) -> list[str]:
    text = sources.get(d.span.file)
    if text is None or d.code in _UNQUOTED:
        return []
    lines = split.get(d.span.file)
    if lines is None:                  # once per file, not per diagnostic: 20,000 errors in one file
        lines = split[d.span.file] = text.splitlines()
    if not 1 <= d.span.line <= len(lines):
        return []
    src = lines[d.span.line - 1].expandtabs(1)
    col = max(d.span.column, 1)
    if d.span.end_line == d.span.line:
        width = max(d.span.end_column - col, 1)
    else:
        width = max(len(src) - col + 1, 1)
    if not src.isprintable():              # a terminal escape in the file must not reach the terminal
        src = "".join(c if c.isprintable() else "\ufffd" for c in src)
    if len(src) > SOURCE_WINDOW:            # a window around the column, never a whole long line
        start = max(min(col - SOURCE_WINDOW // 2, len(src) - SOURCE_WINDOW), 0)
        src = src[start:start + SOURCE_WINDOW]
        col = max(col - start, 1)
    width = min(width, max(len(src) - col + 1, 1))
    gutter = f"{d.span.line:>4} | "
    caret = paint("^" * width, fg=SEVERITY_COLORS[d.severity], bold=True)
    return [gutter + src, " " * (len(gutter) - 2) + "| " + " " * (col - 1) + caret]


def format_text(diags: Sequence[Diagnostic], sources: Mapping[str, str], color: bool = False) -> str:
    """The compiler-style report; with `color`, ANSI colours for a terminal
    (the characters are the same, only escape sequences are added)."""
    paint: Callable[..., str] = _plain
    if color:
        from typer import style as paint   # ANSI escapes, as click writes them
    out: list[str] = []
    split: dict[str, list[str]] = {}
    for d in diags:
        label = paint(f"{d.severity.value}[{d.code}]", fg=SEVERITY_COLORS[d.severity], bold=True)
        out.append(f"{paint(str(d.span), bold=True)}: {label}: {d.message}")
        out.extend(_caret_block(d, sources, split, paint))
        for rel in d.related:
            out.append(f"  {rel.span}: {paint('note', fg='cyan')}: {rel.message}")
        if d.hint:
            out.append(f"  = {paint('hint', fg='green')}: {d.hint}")
    errors = sum(d.is_error for d in diags)
    warnings = sum(d.severity is Severity.WARNING for d in diags)
    if diags:
        out.append(f"{errors} error(s), {warnings} warning(s)")
    return "\n".join(out) + ("\n" if out else "")


def to_json_obj(d: Diagnostic) -> dict[str, object]:
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "file": d.span.file,
        "line": d.span.line,
        "column": d.span.column,
        "end_line": d.span.end_line,
        "end_column": d.span.end_column,
        "hint": d.hint,
        "related": [
            {"message": r.message, "file": r.span.file, "line": r.span.line,
             "column": r.span.column}
            for r in d.related
        ],
    }


def format_json(diags: Sequence[Diagnostic]) -> str:
    return json.dumps([to_json_obj(d) for d in diags], indent=2, sort_keys=True) + "\n"


def format_github(diags: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands (`::error file=...::message`)."""
    from intentc.diagnostics.github import Level, command, lines

    kinds = {Severity.ERROR: Level.ERROR, Severity.WARNING: Level.WARNING, Severity.NOTE: Level.NOTICE}
    return lines([command(kinds[d.severity], d.message + (f"\nhint: {d.hint}" if d.hint else ""), d.span, d.code)
                  for d in diags])


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def format_sarif(diags: Sequence[Diagnostic], tool_version: str,
                 rule_help: Mapping[str, str] | None = None) -> str:
    from intentc.diagnostics.codes import CODES   # the catalogue names each rule in SARIF viewers

    levels = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}
    codes = sorted({d.code for d in diags})
    help_text = CODES if rule_help is None else rule_help
    rules = [{"id": c, "shortDescription": {"text": help_text.get(c, c)}} for c in codes]
    results = []
    for d in diags:
        s = d.span
        result: dict[str, object] = {
            "ruleId": d.code,
            "ruleIndex": codes.index(d.code),
            "level": levels[d.severity],
            "message": {"text": d.message + (f" (hint: {d.hint})" if d.hint else "")},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": s.file},
                    "region": {"startLine": s.line, "startColumn": s.column,
                               "endLine": s.end_line, "endColumn": s.end_column},
                }
            }],
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": {"uri": r.span.file},
                                      "region": {"startLine": r.span.line,
                                                 "startColumn": r.span.column}}}
                for i, r in enumerate(d.related)
            ]
        results.append(result)
    return sarif_log(rules, results, tool_version)


def sarif_log(rules: Sequence[Mapping[str, object]], results: Sequence[Mapping[str, object]],
              tool_version: str) -> str:
    """A SARIF 2.1.0 log of one intentc run (diagnostics, or schema-diff findings)."""
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "intentc", "version": tool_version,
                                "informationUri": "https://intentc.dev", "rules": list(rules)}},
            "results": list(results),
        }],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


# JUnit XML, the format CI systems (GitLab, Jenkins, Azure Pipelines, test-report
# actions) show as a test run.  One test suite.  Every error is a failed test case of its
# own (named by file, position and code, its <failure> carrying the code, position and
# message), and every input file without errors is one passing test case, so `failures`
# counts findings, as a reader of the report counts them (a file with 9 errors is 9
# failures, not 1), and `tests` and `failures` on <testsuites> and <testsuite> are the
# <testcase> and <failure> elements there are.  A file's warnings and notes are listed in
# the <system-out> of its first test case.  Built with the standard library's ElementTree,
# which escapes the text; the output has no timestamps or durations, so the same inputs
# give the same bytes.

JUNIT_SUITE = "intentc check"


def _junit_line(d: Diagnostic) -> str:
    hint = f" (hint: {d.hint})" if d.hint else ""
    return f"{d.span}: {d.severity.value}[{d.code}]: {d.message}{hint}"


def format_junit(diags: Sequence[Diagnostic], files: Sequence[str]) -> str:
    """`diags` as a JUnit report listing every one of `files`, those without errors as passing."""
    import xml.etree.ElementTree as ET   # only a JUnit report pays for it

    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for d in diags:
        by_file[d.span.file].append(d)
    names = sorted(set(files) | set(by_file))
    errors = [d for f in names for d in by_file[f] if d.is_error]
    tests = len(errors) + sum(1 for f in names if not any(d.is_error for d in by_file[f]))
    counts = {"tests": str(tests), "failures": str(len(errors)), "errors": "0"}
    suites = ET.Element("testsuites", {"name": "intentc", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": JUNIT_SUITE, **counts, "skipped": "0"})
    for name in names:
        found = by_file[name]
        cases = []
        for d in (d for d in found if d.is_error):
            case = ET.SubElement(suite, "testcase", classname=JUNIT_SUITE,
                                 name=f"{name}:{d.span.line}:{d.span.column} {d.code}", file=name,
                                 line=str(d.span.line))
            failure = ET.SubElement(case, "failure", type=d.code,
                                    message=f"{d.span.line}:{d.span.column}: {d.code}: {d.message}")
            failure.text = _junit_line(d)
            cases.append(case)
        if not cases:
            cases.append(ET.SubElement(suite, "testcase", classname=JUNIT_SUITE, name=name, file=name))
        notes = [_junit_line(d) for d in found if d.severity is not Severity.ERROR]
        if notes:
            ET.SubElement(cases[0], "system-out").text = "\n".join(notes)
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def render(diags: Sequence[Diagnostic], fmt: OutputFormat, sources: Mapping[str, str],
           tool_version: str = "0", color: bool = False) -> str:
    """`diags` in `fmt`; `color` applies to text only.  JUnit lists every file
    of `sources` (the inputs read), those without findings as passing."""
    if fmt is OutputFormat.JSON:
        return format_json(diags)
    if fmt is OutputFormat.GITHUB:
        return format_github(diags)
    if fmt is OutputFormat.SARIF:
        return format_sarif(diags, tool_version)
    if fmt is OutputFormat.JUNIT:
        return format_junit(diags, list(sources))
    return format_text(diags, sources, color)
