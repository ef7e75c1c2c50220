"""The semantic diff of declarations: IR against IR, never text against text.

Each declaration becomes plain data through the same rule IR equality uses
(fields with ``compare=False`` - spans - are left out), so reformatting,
comments, moving a declaration to another file, or converting a file from
the DSL to YAML produce no difference at all.  deepdiff then names every
change by its field path (``action.image``, ``constraints.gpus.count``,
``command[2]``); positions come back from the IR's `FieldSpans` on each side.

Set-like fields (tags, consumes, produces, trigger.after) are compared as
sets: listing the same datasets in another order means the same thing.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from intentc.diagnostics import Span
from intentc.ir import NO_SPAN, Declaration, FieldSpans, Program, Ref

Json = Any
UNORDERED = frozenset({"tags", "consumes", "produces", "after", "names"})
KINDS: tuple[tuple[str, str], ...] = (("tenant", "tenants"), ("dataset", "datasets"), ("intent", "intents"),
                                      ("topology", "topologies"))


class Status(str, enum.Enum):
    ADDED = "added"
    REMOVED = "removed"
    RENAMED = "renamed"
    CHANGED = "changed"


@dataclass(frozen=True)
class FieldChange:
    path: str                       # "constraints.gpus.count", "action.command[2]"
    old: Json                       # None when the field was not set
    new: Json
    base_span: Span | None
    head_span: Span | None


@dataclass(frozen=True)
class DeclChange:
    kind: str                       # "tenant" | "dataset" | "intent" | "topology"
    status: Status
    name: str                       # the head name (the base name when removed)
    old_name: str | None            # renamed only
    base_span: Span | None
    head_span: Span | None
    changes: tuple[FieldChange, ...] = ()


def to_data(value: Any, field_name: str = "") -> Json:
    """IR -> JSON-like data, with exactly the fields IR equality compares."""
    if isinstance(value, Ref):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name), f.name)
                for f in dataclasses.fields(value) if f.compare}
    if isinstance(value, tuple):
        items = [to_data(v) for v in value]
        if field_name in UNORDERED:
            return sorted(items, key=repr)
        return items
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _span(s: Span | None) -> Span | None:
    return None if s is None or s == NO_SPAN else s


def span_at(decl: Declaration, path: Sequence[str | int]) -> Span | None:
    """The most precise written position of `path` inside `decl`: the field's
    own span when the IR recorded one, else the closest enclosing node's."""
    best: Span | None = _span(decl.span)
    node: Any = decl
    for key in path:
        if isinstance(key, str) and dataclasses.is_dataclass(node):
            spans = getattr(node, "spans", None)
            if isinstance(spans, FieldSpans):
                best = _span(spans.get(key, NO_SPAN)) or best
            node = getattr(node, key, None)
        elif isinstance(key, int) and isinstance(node, tuple) and 0 <= key < len(node):
            node = node[key]
        else:
            break
        own = getattr(node, "span", None)
        if isinstance(own, Span):
            best = _span(own) or best
    return best


def _leaves(value: Json, prefix: list[str | int]) -> Iterator[tuple[list[str | int], Json]]:
    """A whole sub-object that appeared or disappeared, as one change per set field."""
    if isinstance(value, dict):
        for k in sorted(value):
            if value[k] not in (None, [], {}):
                yield from _leaves(value[k], prefix + [k])
    else:
        yield prefix, value


def _path_text(path: Sequence[str | int]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + p)
    return out


def _set_field(path: list[str | int]) -> list[str | int]:
    """Indices into a set-like field are positions in the *sorted* data, not in
    the IR tuple: such a change is reported (and positioned) on the field itself,
    as an element removed (old) and/or added (new)."""
    for i, p in enumerate(path):
        if isinstance(p, int) and i > 0 and path[i - 1] in UNORDERED:
            return path[:i]
    return path


def field_changes(base: Declaration, head: Declaration) -> tuple[FieldChange, ...]:
    # deepdiff (with numpy behind it) costs a noticeable share of a CLI run's start-up;
    # a diff without changed declarations never needs it.
    from deepdiff import DeepDiff
    from deepdiff.helper import NotPresent

    a, b = to_data(base), to_data(head)
    diff = DeepDiff(a, b, view="tree")
    out: list[FieldChange] = []
    for report in sorted(diff.keys()):
        for level in diff[report]:
            path = list(level.path(output_format="list"))
            old = None if isinstance(level.t1, NotPresent) else level.t1
            new = None if isinstance(level.t2, NotPresent) else level.t2
            pieces = [(path, old, new)]
            if isinstance(new, dict) and old is None:
                pieces = [(p, None, v) for p, v in _leaves(new, path)]
            elif isinstance(old, dict) and new is None:
                pieces = [(p, v, None) for p, v in _leaves(old, path)]
            for p, o, n in pieces:
                p = _set_field(p)
                out.append(FieldChange(_path_text(p), o, n, span_at(base, p), span_at(head, p)))
    return tuple(sorted(out, key=lambda c: (c.path, repr(c.old), repr(c.new))))


def _first_by_name(decls: Sequence[Declaration]) -> dict[str, Declaration]:
    out: dict[str, Declaration] = {}
    for d in decls:
        out.setdefault(d.name, d)
    return out


def _unnamed(d: Declaration) -> Json:
    data = to_data(d)
    data.pop("name", None)
    return data


def diff_declarations(kind: str, base: Sequence[Declaration], head: Sequence[Declaration]) -> list[DeclChange]:
    b, h = _first_by_name(base), _first_by_name(head)
    out: list[DeclChange] = []
    for name in sorted(set(b) & set(h)):
        if b[name] is h[name] or b[name] == h[name]:
            continue
        changes = field_changes(b[name], h[name])
        if changes:                       # empty: only the order of a set-like field differs
            out.append(DeclChange(kind, Status.CHANGED, name, None, _span(b[name].span), _span(h[name].span),
                                  changes))
    removed = [n for n in sorted(b) if n not in h]
    added = [n for n in sorted(h) if n not in b]
    by_content: dict[str, list[str]] = {}
    for n in added:
        by_content.setdefault(repr(_unnamed(h[n])), []).append(n)
    for n in removed:
        twins = by_content.get(repr(_unnamed(b[n])))
        if twins:
            new = twins.pop(0)
            added.remove(new)
            out.append(DeclChange(kind, Status.RENAMED, new, n, _span(b[n].span), _span(h[new].span)))
        else:
            out.append(DeclChange(kind, Status.REMOVED, n, None, _span(b[n].span), None))
    for n in added:
        out.append(DeclChange(kind, Status.ADDED, n, None, None, _span(h[n].span)))
    return sorted(out, key=lambda c: (c.name, c.status.value))


def diff_programs(base: Program, head: Program) -> list[DeclChange]:
    out: list[DeclChange] = []
    for kind, attr in KINDS:
        out.extend(diff_declarations(kind, getattr(base, attr), getattr(head, attr)))
    return out

