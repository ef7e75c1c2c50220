"""The check stage: files loaded → the global passes → what `check` reports.

The local passes run per file while loading (`pipeline.loading`), so this stage
is what needs the whole repository: the global passes and the dependency
findings.  The daemon's reloader runs the same passes over its file table
(`global_pass_findings`) and patches their findings edit by edit; `intentc
diff` runs them on each revision.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from intentc.diagnostics import Diagnostic
from intentc.frontend import Loaded
from intentc.frontend.sources import texts_for_carets
from intentc.graph import dependencies
from intentc.ir import Program
from intentc.passes import GLOBAL_PASSES, run_passes
from intentc.pipeline.findings import report

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
        from intentc.graph import digraph

        return digraph.build(self.program)[0]


def global_pass_findings(program: Program) -> list[Diagnostic]:
    """The global passes' findings (the local ones ran in `load`).  A pass only reports: the
    program it returns is the one it was given.  `intentc diff` runs them on each side, the
    daemon's reloader on its file table, without the dependency findings, which their
    plans report."""
    return run_passes(program, GLOBAL_PASSES)[1]


def global_findings(program: Program) -> tuple[Program, list[Diagnostic]]:
    """What needs the whole repository: the global passes and the dependency findings."""
    return program, global_pass_findings(program) + dependencies.diagnostics(program)


def check_loaded(loaded: Loaded) -> Checked:
    """`check` of files already loaded: the global passes and the dependency findings."""
    program, found = global_findings(loaded.program)
    diags = report(loaded.diagnostics, found)
    return Checked(program, tuple(diags), texts_for_carets(diags, loaded.sources), loaded.files)
