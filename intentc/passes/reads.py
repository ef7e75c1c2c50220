"""What the global passes read of one file's declarations, as a digest.

`intentc check` of a large repository whose cache is warm but where a few
files were edited (a pull request's run, its cache restored from the default
branch) need not load every file again when the edit is one the global
passes cannot see: a new image, a changed setting, a comment.  Then the
global findings of the last run stand, and only the edited files' own
findings change (`pipeline.basis`).  This digest decides it: equal digests
before and after an edit mean that every global pass and the dependency
findings see the same input from that file.

It covers, with their spans (a finding points at them):

* every tenant, dataset and topology, whole (names, quotas, tiers, groups,
  SLA ceilings, GPU products);
* of each intent: its name, its span and its name's span (duplicates, the
  canonical order), its tenant, `after`, consumed and produced datasets
  (names, tenancy, dependency findings), its action's kind and replicas and
  its GPU request (E0903, products), its SLA class and where it is written
  (E0904).

A global pass that starts reading anything else must add it here; the
differential test (`tests/test_check_patch.py`) edits every kind of field and
compares with a full check.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from typing import Any

from intentc.diagnostics import Span
from intentc.ir import FieldSpans, Intent, Program

_DIGEST = 16


def _plain(v: Any) -> Any:
    """A value as nested tuples of primitives, whose repr is the same for equal values
    (a pickle is not: it shares an object it meets twice, an interned string say)."""
    if v is None or isinstance(v, (str, int, float, bool, bytes)):
        return v
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, FieldSpans):
        return ("spans", v.file, v.keys, v.positions)
    if isinstance(v, Span):
        return (v.file, v.line, v.column, v.end_line, v.end_column)
    if dataclasses.is_dataclass(v):
        return (type(v).__name__,) + tuple(_plain(getattr(v, f.name)) for f in dataclasses.fields(v))
    if isinstance(v, dict):
        return tuple(sorted((k, _plain(x)) for k, x in v.items()))
    raise TypeError(f"no plain form for {type(v).__name__}")


def _intent(i: Intent) -> tuple[Any, ...]:
    c = i.constraints
    return (i.name, _plain(i.span), _plain(i.spans.get("name", i.span)), _plain(i.context.tenant),
            _plain(i.trigger.after), _plain(i.consumes), _plain(i.produces),
            i.action.kind, i.action.replicas, _plain(c.gpus), c.sla, _plain(c.spans.get("sla", c.span)))


def global_reads(program: Program) -> bytes:
    """The digest of what the global passes read of `program` (one file's)."""
    seen = (tuple(_plain(t) for t in program.tenants), tuple(_plain(d) for d in program.datasets),
            tuple(_plain(t) for t in program.topologies), tuple(_intent(i) for i in program.intents))
    return hashlib.blake2b(repr(seen).encode("utf-8", "surrogateescape"), digest_size=_DIGEST).digest()
