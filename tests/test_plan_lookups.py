"""Per-intent look-ups in a plan read the placements once, not once per intent.

`Plan.placement(name)` scans the placements; the daemon's `Desired.of`
called it per intent through `wave_budgets`, which made every reload's
`Desired` quadratic: at 100,000 intents the 100k soak
(benchmarks/bench_soak_100k.py) never got past the first one in 15 minutes
(docs/reload.md).  `diff_plans` did the same per placement.  These tests
count the passes over the placements.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from intentc.pipeline import compile_paths
from intentc.diff.plan_diff import diff_plans
from intentc.plan.model import Plan, Placement
from intentc.reconcile.timeouts import WaveBudgets, wave_budgets
from tests.test_reload_replan import COMMIT, chains, make_tree


class Counted(tuple[Placement, ...]):
    """The placements, counting the passes made over them."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        Counted.passes += 1
        return super().__iter__()


def compiled(tmp_path: Path) -> tuple[object, Plan]:
    src, topo = make_tree(tmp_path, chains())
    result = compile_paths([str(src)], str(topo), COMMIT)
    assert result.ok and result.plan is not None and result.program is not None
    assert len(result.plan.placements) == 12
    return result.program, result.plan


def test_wave_budgets_reads_the_placements_once(tmp_path: Path) -> None:
    program, plan = compiled(tmp_path)
    expected = wave_budgets(program, plan)       # type: ignore[arg-type]
    counted = replace(plan, placements=Counted(plan.placements))
    Counted.passes = 0
    assert wave_budgets(program, counted) == expected     # type: ignore[arg-type]
    assert len(expected) == 12 and Counted.passes == 1


def test_the_daemons_lazy_budgets_equal_wave_budgets_without_a_pass(tmp_path: Path) -> None:
    """`Desired` keeps `WaveBudgets` (made per wave when read, not 100,000 at once): the
    same budgets, each found by binary search, never by a pass over the placements."""
    program, plan = compiled(tmp_path)
    expected = wave_budgets(program, plan)       # type: ignore[arg-type]
    counted = replace(plan, placements=Counted(plan.placements))
    lazy = WaveBudgets(program, counted)         # type: ignore[arg-type]
    Counted.passes = 0
    for name in reversed(sorted(expected)):      # out of wave order: each wave made again
        assert lazy[name] == expected[name]
    assert Counted.passes == 0
    assert dict(lazy) == expected and len(lazy) == len(expected) == 12
    assert "nope" not in lazy and lazy.get("nope") is None
    assert len(plan.waves) > 1


def test_diff_plans_reads_each_plans_placements_a_fixed_number_of_times(tmp_path: Path) -> None:
    _, plan = compiled(tmp_path)
    moved = replace(plan, placements=tuple(reversed(plan.placements)))
    expected = diff_plans(plan, moved)
    Counted.passes = 0
    assert diff_plans(replace(plan, placements=Counted(plan.placements)),
                      replace(moved, placements=Counted(moved.placements))) == expected
    assert Counted.passes <= 3
