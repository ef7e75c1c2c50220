"""`shape`: an IR value with every field and position spelled out, for ==.

The IR's own equality leaves positions out (the same intent written in DSL
and in YAML is equal); the differential tests of the compiled modules need
them in, and the types too."""

from __future__ import annotations

from typing import Any

from intentc.compact import Compact
from intentc.diagnostics import Diagnostic, Span
from intentc.ir import FieldSpans


def shape(value: Any) -> Any:
    if isinstance(value, FieldSpans):
        return ("spans", value.file, value.keys, value.items, value.own())
    if isinstance(value, (Span, Diagnostic)):
        return type(value).__name__, repr(value), getattr(value, "span", None)
    if isinstance(value, Compact):
        names = [n for k in type(value).__mro__ for n in getattr(k, "__slots__", ())]
        return type(value).__name__, [(n, shape(getattr(value, n))) for n in names]
    if isinstance(value, (tuple, list)):
        return type(value).__name__, [shape(v) for v in value]
    if isinstance(value, dict):
        return sorted((k, shape(v)) for k, v in value.items())
    if hasattr(value, "__dataclass_fields__"):
        return type(value).__name__, repr(value)
    return type(value).__name__, value
