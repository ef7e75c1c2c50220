"""The compiler driver: files → IR → semantic passes, as one pure call.

Later stages (graph, plan, render) extend `compile_program`; the CLI and
the daemon call these functions and never wire passes together themselves.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from intentc import dependencies
from intentc.diagnostics import Diagnostic, Span, capped_per_file, sorted_diagnostics
from intentc.frontend import Loaded
from intentc.frontend.batch import Reused, load
from intentc.ir import Program
from intentc.passes import GLOBAL_PASSES, run_passes
from intentc.progress import Progress, silent
from intentc.sources import texts_for_carets

__all__ = ["Checked", "check", "check_loaded", "global_findings", "prefer_specific", "report", "texts_for_carets"]

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Checked:
    program: Program
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]
    files: tuple[str, ...] = ()      # every file checked (`sources` holds only the texts diagnostics need)

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The dependency graph, built when first asked for: `check` reports its
        findings (`dependencies.diagnostics`) without it, or networkx."""
        from intentc import graph

        return graph.build(self.program)[0]


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


def check(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
          use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = (),
          reuse: Reused | None = None) -> Checked:
    """Everything `intentc check` reports: parse, semantic passes, dependency graph (files
    matching `exclude` left out).  `progress` hears how parsing, the long part, advances;
    `reuse`: see `frontend.batch.load`."""
    return check_loaded(load(paths, jobs=jobs, cache_dir=cache_dir, use_cache=use_cache, progress=progress,
                             exclude=exclude, reuse=reuse))


def global_findings(program: Program) -> tuple[Program, list[Diagnostic]]:
    """What needs the whole repository: the global passes (the local ones ran in
    `load`) and the dependency findings."""
    program, pass_diags = run_passes(program, GLOBAL_PASSES)
    return program, pass_diags + dependencies.diagnostics(program)


def report(local: Sequence[Diagnostic], found: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The findings as `check` reports them: the files' own (reading, parsing, local
    passes, in file order) then the global ones, the specific preferred, capped per
    file, sorted."""
    return sorted_diagnostics(capped_per_file(prefer_specific(list(local) + list(found))))


def check_loaded(loaded: Loaded) -> Checked:
    """`check` of files already loaded: the global passes and the dependency graph."""
    program, found = global_findings(loaded.program)
    diags = report(loaded.diagnostics, found)
    return Checked(program, tuple(diags), texts_for_carets(diags, loaded.sources), loaded.files)
