"""The background full re-plan shares the records of the plan in force that it decides
alike (docs/reload.md, Memory: the full plan's peak): the daemon then holds one copy of
them, not two, across the swap."""

from __future__ import annotations

from pathlib import Path

from tests.test_reload_replan import job, listening, make_tree, same_as_full


def test_the_swapped_full_plan_shares_the_placements_it_decides_alike(tmp_path: Path) -> None:
    # job-00..02 hold n0..n2 from time 0, job-04 (P3) waits; made P0 the full plan starts it
    # first (the incremental plan does not move the others for it); jobs 05..08 ask no GPUs
    jobs = {i: job(i, gpus=8, sla="P2") for i in range(3)}
    jobs[4] = job(4, gpus=8, sla="P3")
    jobs.update({i: job(i, gpus=0) for i in range(5, 9)})
    src, topo = make_tree(tmp_path, jobs)
    r, _, swapped = listening(src, topo)
    (src / "job-04.intent").write_text(job(4, gpus=8, sla="P0"))
    incremental = r.update([src / "job-04.intent"]).snapshot
    assert incremental is not None
    assert swapped.wait(120) and r.settle(120)
    full = r.current
    assert full is not None and full.plan != incremental.plan
    old = {p.intent: p for p in incremental.plan.placements}
    alike = [p for p in full.plan.placements if p == old[p.intent]]
    assert len(alike) >= 4 and all(p is old[p.intent] for p in alike)
    assert any(p != old[p.intent] for p in full.plan.placements)
    same_as_full(r, src, topo)
