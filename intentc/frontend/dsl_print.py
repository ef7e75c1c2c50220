"""Canonical DSL text for a `Program`: the engine of `intentc fmt` and of
`intentc convert --to dsl`.

The layout is fixed (two-space indent, one clause per line, clauses in the
order trigger, action, context, constraints, consumes, produces) so that a
diff between two versions of a file shows changes of meaning only.

Comments are not part of the IR, so they are placed by position: the printer
lays out lines, each remembering the source lines it came from; a comment on
its own line is printed before the line whose source comes next, a comment
after code stays at the end of the line that code was printed on, and what
is left goes at the end of the file.  Blank lines next to comments are kept
(collapsed to one), so a file header stays apart from the first block.

`format_source` refuses to return text whose IR or comments differ from the
input's (the black-style safety net): a formatter bug then costs a
diagnostic, never a user's file.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Sequence

from intentc.diagnostics import Diagnostic, Span, error
from intentc.frontend.dsl import Comment, parse_full
from intentc.ir import (CONSTRAINT_KEYS, SETTING_KEYS, Action, Batch, ClusterSelector, Constraints, Context, Dataset, GpuRequest, Intent, ModelSettings,
                        Program, Tenant, Trigger)
from intentc.frontend.sources import SourceFile

# Must accept exactly what the grammar's WORD terminal accepts.
_WORD = re.compile(r"[A-Za-z0-9_.\-]+")
_INDENT = "  "


def quote(s: str) -> str:
    """A DSL string literal (the grammar decodes strings as JSON strings)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:          # lone surrogates: only an escape can carry them
        return json.dumps(s)
    return json.dumps(s, ensure_ascii=False)


def word(s: str) -> str:
    return s if _WORD.fullmatch(s) else quote(s)


def number(n: int | float) -> str:
    # repr keeps every digit; the grammar's WORD has no '+', so 1e+20 is written 1e20.
    return repr(n).replace("e+", "e")


@dataclass
class _Line:
    depth: int
    text: str
    first: int                  # the source lines this line was printed from (0: none)
    last: int
    top: bool = False           # opens a top-level declaration
    compact: bool = False       # a whole declaration on one line (datasets): no blank line between two
    closes: bool = False        # a lone '}' (comments before it are indented one level deeper)
    leading: list[Comment] = field(default_factory=list)
    trailing: list[Comment] = field(default_factory=list)


def _lines_of(span: Span | None) -> tuple[int, int]:
    return (span.line, span.end_line) if span is not None and span.line > 0 else (0, 0)


class _Layout:
    def __init__(self) -> None:
        self.lines: list[_Line] = []

    def add(self, depth: int, text: str, span: Span | None = None, last: Span | None = None,
            top: bool = False, closes: bool = False) -> None:
        first, end = _lines_of(span)
        if last is not None and last.line > 0:
            end = last.line
        self.lines.append(_Line(depth, text, first, end, top, closes))

    def close(self, depth: int, span: Span) -> None:
        line = span.end_line if span.line > 0 else 0
        self.lines.append(_Line(depth, "}", line, line, closes=True))

    # -- declarations --------------------------------------------------------

    def tenant(self, t: Tenant) -> None:
        sp = t.spans
        self.add(0, f"tenant {word(t.name)} {{", t.span, sp.get("name", t.span), top=True)
        if t.tier is not None:
            self.add(1, f"tier: {word(t.tier)}", sp.get("tier", t.span))
        if t.weight is not None:
            self.add(1, f"weight: {number(t.weight)}", sp.get("weight", t.span))
        quota = [(k, v) for k, v in (("gpus", None if t.quota_gpus is None else number(t.quota_gpus)),
                                     ("cpu", None if t.quota_cpu is None else word(t.quota_cpu)),
                                     ("memory", None if t.quota_memory is None else word(t.quota_memory)))
                 if v is not None]
        if quota:
            qspans = [sp.get(f"quota_{k}", t.span) for k, _ in quota]
            self.add(1, "quota: " + ", ".join(f"{k} {v}" for k, v in quota), min(qspans), max(qspans))
        if t.group is not None:
            self.add(1, f"group: {quote(t.group)}", sp.get("group", t.span))
        if t.drift is not None:
            self.add(1, f"drift: {word(t.drift)}", sp.get("drift", t.span))
        if t.max_sla is not None:
            self.add(1, f"max_sla: {word(t.max_sla)}", sp.get("max_sla", t.span))
        self.close(0, t.span)

    def dataset(self, d: Dataset) -> None:
        # A dataset has one clause; it reads best on one line, as in docs/writing-intents.md.
        uri = "" if d.uri is None else f" {{ uri: {quote(d.uri)} }}"
        self.add(0, f"dataset {word(d.name)}{uri}", d.span, top=True)
        self.lines[-1].compact = True

    def intent(self, i: Intent) -> None:
        sp = i.spans
        self.add(0, f"intent {word(i.name)} {{", i.span, sp.get("name", i.span), top=True)
        self.add(1, f"trigger: {_trigger(i.trigger)}", sp.get("trigger", i.trigger.span))
        self._action(i.action, sp.get("action", i.action.span))
        self.add(1, f"context: {_context(i.context)}", sp.get("context", i.context.span))
        constraints = _constraints(i.constraints)
        if constraints:
            self.add(1, f"constraints: {constraints}", sp.get("constraints", i.constraints.span))
        for key, refs in (("consumes", i.consumes), ("produces", i.produces)):
            if refs:
                self.add(1, f"{key}: " + ", ".join(word(r.name) for r in refs), sp.get(key, i.span))
        if i.clusters is not None:
            self.add(1, f"clusters: {_clusters(i.clusters)}", sp.get("clusters", i.clusters.span))
        self.close(0, i.span)

    def _action(self, a: Action, span: Span) -> None:
        parts = [word(a.kind)]
        if a.model is not None:
            parts.append(f"model {quote(a.model)}")
        parts.append(f"image {quote(a.image)}")
        if a.command:
            parts.append("command [" + ", ".join(quote(c) for c in a.command) + "]")
        if a.replicas is not None:
            parts.append(f"replicas {number(a.replicas)}")
        if a.port is not None:
            parts.append(f"port {number(a.port)}")
        s = a.settings
        if s is None:
            self.add(1, "action: " + " ".join(parts), span)
            return
        self.add(1, "action: " + " ".join(parts) + " {", span, s.span)
        self._settings(s)
        self.close(1, s.span)

    def _settings(self, s: ModelSettings) -> None:
        if s.batch is not None and _batch(s.batch):
            self.add(2, f"batch: {_batch(s.batch)}", s.spans.get("batch", s.span))
        for key in SETTING_KEYS[1:]:
            value = getattr(s, key)
            if value is not None:
                self.add(2, f"{key}: {_value(value)}", s.spans.get(key, s.span))


def _trigger(t: Trigger) -> str:
    if t.kind == "after" and t.after:
        return "after " + ", ".join(word(r.name) for r in t.after)
    if t.kind == "schedule" and t.schedule is not None:
        return f"schedule {quote(t.schedule)}"
    if t.kind == "manual":
        return "manual"
    return f"on {word(t.kind)}"


def _batch(b: Batch) -> str:
    if b.auto:
        return "auto" if b.max is None else f"auto(max {number(b.max)})"
    return number(b.size) if b.size is not None else ""


def _context(c: Context) -> str:
    items = [f"tenant {word(c.tenant.name)}"]
    if c.tags:
        items.append("tags [" + ", ".join(word(t) for t in c.tags) + "]")
    if c.drift is not None:
        items.append(f"drift {word(c.drift)}")
    return ", ".join(items)


def _gpus(g: GpuRequest) -> str:
    parts = [number(g.count)]
    if g.product is not None:
        parts.append(f"x {quote(g.product)}")
    for key in ("memory", "within", "prefer"):
        value = getattr(g, key)
        if value is not None:
            parts.append(f"{key} {word(value)}")
    return " ".join(parts)


def _value(value: str | int | float) -> str:
    return number(value) if isinstance(value, (int, float)) else word(value)


def _constraints(c: Constraints) -> str:
    items = []
    for key in CONSTRAINT_KEYS:          # the grammar's order, which the printer keeps
        value = getattr(c, key)
        if value is not None:
            items.append(f"gpus {_gpus(value)}" if key == "gpus" else f"{key} {_value(value)}")
    return ", ".join(items)


# --------------------------------------------------------------------------
# Comments
# --------------------------------------------------------------------------

def _place(lines: list[_Line], comments: Sequence[Comment]) -> list[Comment]:
    """Attach each comment to a printed line; return those left for the end of the file."""
    owner: dict[int, int] = {}
    for idx, ln in enumerate(lines):
        if ln.first:
            for src in range(ln.first, ln.last + 1):
                owner[src] = idx            # the last line printed from a source line wins
    starts = sorted((ln.first, idx) for idx, ln in enumerate(lines) if ln.first)
    keys = [s for s, _ in starts]
    rest: list[Comment] = []
    for c in sorted(comments, key=lambda c: (c.line, c.column)):
        if c.trailing and c.line in owner:
            lines[owner[c.line]].trailing.append(c)
            continue
        at = bisect.bisect_right(keys, c.line)
        if at == len(starts):
            rest.append(c)
        else:
            lines[starts[at][1]].leading.append(c)
    for ln in lines:                        # only one comment fits at the end of a line
        ln.leading.extend(ln.trailing[1:])
        del ln.trailing[1:]
    return rest


_Out = list[tuple[str, str | None]]     # printed lines: code, trailing comment


def _emit_run(out: _Out, indent: str, run: list[Comment], next_line: int) -> None:
    for n, c in enumerate(run):
        out.append((indent + c.text, None))
        following = run[n + 1].line if n + 1 < len(run) else next_line
        if following and following - c.line > 1:
            out.append(("", None))


def _aligned(out: _Out) -> list[str]:
    """Trailing comments on consecutive lines start in one column (as gofmt does)."""
    text: list[str] = []
    n = 0
    while n < len(out):
        end = n
        while end < len(out) and out[end][1] is not None:
            end += 1
        if end == n:
            text.append(out[n][0])
            n += 1
            continue
        width = max(len(code) for code, _ in out[n:end]) + 2
        text.extend(code.ljust(width) + (comment or "") for code, comment in out[n:end])
        n = end
    return text


def _render(lines: list[_Line], rest: list[Comment]) -> str:
    out: _Out = []
    n = 0
    previous_compact = False
    while n < len(lines):
        ln = lines[n]
        if ln.top:
            if out and not (ln.compact and previous_compact):
                out.append(("", None))
            previous_compact = ln.compact
        _emit_run(out, _INDENT * (ln.depth + (1 if ln.closes else 0)), ln.leading, ln.first)
        text = _INDENT * ln.depth + ln.text
        trailing = ln.trailing
        nxt = lines[n + 1] if n + 1 < len(lines) else None
        # An empty block prints as `{}` unless a comment sits inside it.
        if (nxt is not None and nxt.closes and text.endswith("{") and not ln.trailing
                and not nxt.leading):
            text += "}"
            trailing = nxt.trailing
            n += 1
        out.append((text, trailing[0].text if trailing else None))
        n += 1
    if rest:
        if out:
            out.append(("", None))
        _emit_run(out, "", rest, 0)
    return "\n".join(_aligned(out)) + "\n" if out else ""


def format_program(program: Program, comments: Sequence[Comment] = ()) -> str:
    """The canonical DSL text of `program` (declarations in source order)."""
    layout = _Layout()
    decls: list[Tenant | Dataset | Intent] = [*program.tenants, *program.datasets, *program.intents]
    decls.sort(key=lambda d: (d.span.file, d.span.line, d.span.column))
    for d in decls:
        if isinstance(d, Tenant):
            layout.tenant(d)
        elif isinstance(d, Dataset):
            layout.dataset(d)
        else:
            layout.intent(d)
    rest = _place(layout.lines, comments)
    text = _render(layout.lines, rest)
    for topo in program.topologies:
        text += f"\n# topology {topo.name!r} has no DSL form; keep it in YAML\n"
    return text


def format_source(source: SourceFile) -> tuple[str | None, list[Diagnostic]]:
    """Parse and print one DSL file, keeping its comments; None when the file
    has errors (it must not be rewritten) or the result would not mean the same."""
    result = parse_full(source)
    diags = list(result.diagnostics)
    if any(d.is_error for d in diags):
        return None, diags
    text = format_program(result.program, result.comments)
    again = parse_full(SourceFile(source.path, text))
    if (again.program != result.program or any(d.is_error for d in again.diagnostics)
            or sorted(c.text for c in again.comments) != sorted(c.text for c in result.comments)):
        return None, diags + [error("E0108", "intentc fmt could not lay this file out without changing "
                                             "its meaning; the file is left as it is",
                                    Span.point(source.path, 1, 1),
                                    hint="please report this file as a bug in intentc fmt")]
    return text, diags


def _clusters(c: ClusterSelector) -> str:
    if c.by_labels:
        return "{ " + ", ".join(f"{word(k)}: {word(v)}" for k, v in c.match_labels) + " }" if c.match_labels else "{}"
    return "[" + ", ".join(word(n) for n in c.names) + "]"
