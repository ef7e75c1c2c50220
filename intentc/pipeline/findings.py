"""The report `check` gives, put together from its parts.

Light on purpose: the memo (`pipeline.memo`) and the patch (`pipeline.basis`)
assemble a report without loading the program, so this module imports only
the diagnostics — no passes, no networkx.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from intentc.diagnostics import Diagnostic, Span, capped_per_file, sorted_diagnostics

if TYPE_CHECKING:
    from intentc.ir import Program


@dataclass(frozen=True)
class Counts:
    """What `intentc check` counts when it finds nothing wrong."""

    intents: int
    tenants: int
    datasets: int
    topologies: int

    @classmethod
    def of(cls, program: Program) -> Counts:
        return cls(len(program.intents), len(program.tenants), len(program.datasets), len(program.topologies))


def prefer_specific(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Where a generic schema error (E02xx) lands on or inside the span of a
    domain-rule error (E04xx), keep only the domain one: it says more and has
    the suggestion.  YAML gets both checks, the DSL only the second."""
    domain_spans = [d.span for d in diags if d.code.startswith("E04")]
    return [d for d in diags
            if not (d.code.startswith("E02") and any(_within(d.span, s) for s in domain_spans))]


def _within(inner: Span, outer: Span) -> bool:
    return (inner.file == outer.file
            and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def report(local: Sequence[Diagnostic], found: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The findings as `check` reports them: the files' own (reading, parsing, local
    passes, in file order) then the global ones, the specific preferred, capped per
    file, sorted."""
    return sorted_diagnostics(capped_per_file(prefer_specific(list(local) + list(found))))
