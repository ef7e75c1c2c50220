"""A recommendation written into an intent file: only the batch value's text changes (pure).

The IR keeps the exact span of every value (`ModelSettings.spans["batch"]`),
so the edit replaces those characters and nothing else: comments, blank
lines, key order, quoting and indentation stay byte for byte, in the DSL
and in YAML alike.  (A YAML round trip through ruamel.yaml keeps comments
but may re-indent, re-quote and re-wrap what it did not need to touch; a
pull request should show the one value that changed.)  The one layout that
cannot be spliced in place is a YAML block mapping (`batch:` then `auto:
true` / `max: N` on lines of their own): its lines are replaced by a flow
value on the key's line.  The result is parsed again and must give the
intended batch without new errors, or no edit is made.

What is written, per recommendation:

* a fixed `batch: N`: the recommended number;
* `batch: auto` / `auto(max N)`, shrinking: `auto(max M)` — the cap the
  planner clamps its estimate to, so the plan keeps sizing the intent
  for whichever GPUs it chooses and never above what the cluster showed
  fits;
* `batch: auto(max N)` growing where the plan's size was the cap: the cap
  raised to the recommendation;
* `batch: auto` growing where the plan's memory estimate, not a cap, gave
  the size: nothing — raising a cap the planner does not reach changes
  nothing, and a number would stop the planner re-sizing the intent when
  it moves to GPUs of another size.  `--pin-auto` writes the number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from intentc import ir
from intentc.diagnostics import Span
from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile
from intentc.tune.recommend import Direction, Recommendation


@dataclass(frozen=True)
class Target:
    """What the batch of one intent should become, and why (or why not)."""

    batch: ir.Batch | None          # None: left as it is
    why: str


@dataclass(frozen=True)
class Edit:
    file: str
    tenant: str
    intent: str
    old: str                        # the value as written
    new: str                        # what replaced it
    why: str


def target(written: ir.Batch, rec: Recommendation, pin_auto: bool = False) -> Target:
    """The batch to write for `rec` over the `written` one (module docstring)."""
    if rec.direction is Direction.HOLD or rec.batch == rec.current:
        return Target(None, f"kept: {rec.reason}")
    if not written.auto:
        if written.size == rec.batch:
            return Target(None, "already written")
        return Target(ir.batch(False, rec.batch), rec.reason)
    if pin_auto:
        return Target(ir.batch(False, rec.batch), f"{rec.reason} (pinned: --pin-auto)")
    if rec.direction is Direction.SHRINK:
        return Target(ir.batch(True, max=rec.batch), f"{rec.reason}; capped, still sized by the planner")
    if written.max is not None and rec.current >= written.max:
        return Target(ir.batch(True, max=rec.batch), f"{rec.reason}; the plan's size was the cap: cap raised")
    return Target(None, f"kept `batch: auto`: the planner's memory estimate sizes it ({rec.current}), not a cap; "
                        f"recommended {rec.batch} ({rec.reason}); --pin-auto writes the number")


def spelled(b: ir.Batch, dsl: bool) -> str:
    if not b.auto:
        return str(b.size)
    if b.max is None:
        return "auto"
    return f"auto(max {b.max})" if dsl else f"{{auto: true, max: {b.max}}}"


def _offset(starts: Sequence[int], line: int, column: int) -> int:
    return starts[line - 1] + column - 1


def _line_starts(text: str) -> list[int]:
    starts, at = [0], 0
    for line in text.splitlines(keepends=True):
        at += len(line)
        starts.append(at)
    return starts


_KEY = re.compile(r"batch\s*:")


def _region(text: str, span: Span, dsl: bool) -> tuple[int, int, str]:
    """(start, end, prefix): the characters the new value replaces, and what goes before it."""
    starts = _line_starts(text)
    start, end = _offset(starts, span.line, span.column), _offset(starts, span.end_line, span.end_column)
    if dsl or span.line == span.end_line:
        return start, end, ""
    # a YAML block mapping: from after `batch:` to the end of its last line holding a value
    key = None
    for key in _KEY.finditer(text, 0, start):
        pass
    if key is None:
        raise ValueError(f"{span}: no `batch:` key before the value")
    body = text[key.end():end].rstrip()
    lines = body.split("\n")
    while len(lines) > 1 and lines[-1].strip().startswith("#"):
        lines.pop()
    return key.end(), key.end() + len("\n".join(lines).rstrip()), " "


def _batch_of(text: str, file: str, intent: str) -> tuple[ir.Batch | None, int]:
    parsed = parse_source(SourceFile(file, text))
    found = next((i for i in parsed.program.intents if i.name == intent), None)
    settings = found.action.settings if found is not None else None
    return (settings.batch if settings is not None else None), sum(d.is_error for d in parsed.diagnostics)


def rewrite(text: str, file: str, changes: Sequence[tuple[ir.Intent, ir.Batch, str]]) -> tuple[str, list[Edit]]:
    """`text` with each intent's batch value replaced (intents of this file, `changes` as
    (intent, new batch, why)); raises ValueError when a result would not parse back to it."""
    dsl = SourceFile(file, text).is_dsl
    _, errors_before = _batch_of(text, file, "")
    spans = []
    for intent, new, why in changes:
        settings = intent.action.settings
        assert settings is not None and settings.batch is not None
        span = settings.spans.get("batch", ir.NO_SPAN)
        if span is ir.NO_SPAN or span.line == 0:
            raise ValueError(f"{file}: intent {intent.name}: its batch has no source position")
        start, end, prefix = _region(text, span, dsl)
        spans.append((start, end, prefix + spelled(new, dsl), intent, spelled(settings.batch, dsl), why))
    out, edits = text, []
    for start, end, value, intent, old, why in sorted(spans, key=lambda s: s[0], reverse=True):
        edits.append(Edit(file, intent.tenant, intent.name, old, value.strip(), why))
        out = out[:start] + value + out[end:]
    for intent, new, _ in changes:
        got, errors = _batch_of(out, file, intent.name)
        if got != new or errors > errors_before:
            raise ValueError(f"{file}: writing batch {spelled(new, dsl)} into intent {intent.name} would not read "
                             f"back as written; the file is left as it is")
    return out, sorted(edits, key=lambda e: e.intent)
