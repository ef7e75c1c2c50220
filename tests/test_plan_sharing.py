"""`make_plan(previous=...)`: the records a re-plan decides as the plan in force did are
that plan's own objects (the daemon's background re-plan then holds one copy of them, not
two), and the plan is the one made without `previous`."""

from __future__ import annotations

from dataclasses import replace

from intentc import ir
from intentc.plan.planner import make_plan
from tests.test_plan import job, loaded, node, program


def _programs() -> tuple[ir.Program, ir.Program]:
    jobs = [job(f"j{i:02d}", gpus=(i % 3) + 1) for i in range(12)] + [job(f"cpu{i}", gpus=0) for i in range(4)]
    before = program(*jobs)
    # one intent asks for more GPUs: its placement (and what it moves) differs, the rest not
    edited = [replace(j, constraints=replace(j.constraints, gpus=ir.GpuRequest(8))) if j.name == "j11" else j
              for j in jobs]
    return before, program(*edited)


def test_a_replan_shares_the_equal_records_of_the_previous_plan_and_is_the_same_plan() -> None:
    topo = loaded(node("a"), node("b"), node("c"))
    before, after = _programs()
    in_force, _ = make_plan(before, topo)
    alone, alone_diags = make_plan(after, topo)
    shared, shared_diags = make_plan(after, topo, previous=in_force)
    assert shared == alone and shared_diags == alone_diags
    old = {p.intent: p for p in in_force.placements}
    kept = [p for p in shared.placements if p == old[p.intent]]
    assert kept and all(p is old[p.intent] for p in kept)
    assert any(p != old[p.intent] for p in shared.placements)    # the edit moved something
    old_strategies = {s.intent: s for s in in_force.strategies}
    same = [s for s in shared.strategies if s == old_strategies.get(s.intent)]
    assert same and all(s is old_strategies[s.intent] for s in same)


def test_without_a_previous_plan_no_record_is_shared() -> None:
    topo = loaded(node("a"), node("b"), node("c"))
    before, _ = _programs()
    first, _ = make_plan(before, topo)
    second, _ = make_plan(before, topo)
    assert first == second
    assert all(a is not b for a, b in zip(first.placements, second.placements))
