"""The compiler driver: files → IR → semantic passes, as one pure call.

Later stages (graph, plan, render) extend `compile_program`; the CLI and
the daemon call these functions and never wire passes together themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from intentc.diagnostics import Diagnostic, sorted_diagnostics
from intentc.frontend.batch import load
from intentc.ir import Program
from intentc.passes import run_passes


@dataclass(frozen=True)
class Checked:
    program: Program
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]


def prefer_specific(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Where a generic schema error (E02xx) and a domain-rule error (E04xx)
    land on the same span, keep only the domain one: it says more and has
    the suggestion.  YAML gets both checks, the DSL only the second."""
    domain_spans = {d.span for d in diags if d.code.startswith("E04")}
    return [d for d in diags if not (d.code.startswith("E02") and d.span in domain_spans)]


def check(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None) -> Checked:
    loaded = load(paths, jobs=jobs, cache_dir=cache_dir)
    program, pass_diags = run_passes(loaded.program)
    diags = prefer_specific(list(loaded.diagnostics) + pass_diags)
    return Checked(program, tuple(sorted_diagnostics(diags)), loaded.sources)
