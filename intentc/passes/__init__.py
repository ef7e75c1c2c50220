"""Semantic passes, in the order they run.

Each pass is a plain function `Program -> (Program, diagnostics)`; a pass
never raises on bad input and never stops the next pass from running, so a
single run reports every problem.  Add a pass by writing a module and
listing its function in `PASSES` (and in `LOCAL_PASSES` when it judges each
declaration on its own).
"""

from __future__ import annotations

from typing import Callable

from intentc.diagnostics import Diagnostic
from intentc.ir import Program
from intentc.passes.domain import check_domain
from intentc.passes.duplicates import check_duplicates
from intentc.passes.kube_limits import check_kube_limits
from intentc.passes.names import resolve_names
from intentc.passes.products import check_gpu_products
from intentc.passes.tags import check_tags
from intentc.passes.tenancy import check_tenancy

Pass = Callable[[Program], tuple[Program, list[Diagnostic]]]

PASSES: tuple[Pass, ...] = (
    check_duplicates,
    resolve_names,
    check_domain,
    check_kube_limits,
    check_gpu_products,
    check_tenancy,
    check_tags,
)

# Local passes look at one declaration at a time, so the loader runs them per
# file, next to parsing: their diagnostics are cached with the file and
# computed in the parse workers.  Global passes need the whole repository.
LOCAL_PASSES: tuple[Pass, ...] = (check_domain, check_kube_limits, check_tags)
GLOBAL_PASSES: tuple[Pass, ...] = tuple(p for p in PASSES if p not in LOCAL_PASSES)


def run_passes(program: Program, passes: tuple[Pass, ...] | None = None) -> tuple[Program, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    for p in PASSES if passes is None else passes:
        program, found = p(program)
        diags.extend(found)
    return program, diags
