"""The plan benchmark's own machinery (benchmarks/plan_*.py): scoring, baselines and MILP.

No timings here.  These check that the numbers bench_plan.py reports can be
trusted: every policy's placement is scored by the same checks (gangs whole,
capacity, `within`), and the lexicographic MILP optimum is never beaten in
SLA order by any feasible placement, intentc's or a baseline's.
"""

from __future__ import annotations

import random

from benchmarks.bench_plan import evaluate, idle_floor, run_intentc, sla_bound, sla_order
from benchmarks.bench_plan_time import lower_bound
from benchmarks.bench_plan_time import run_intentc as time_intentc
from benchmarks.plan_baselines import POLICIES, run_baseline
from benchmarks.plan_milp import policy_optimum, unconstrained_optimum
from benchmarks.plan_time_baselines import fifo_bestfit, list_scheduler
from benchmarks.plan_workload import build_cluster, build_dag_workload, build_workload
from intentc import ir


def test_small_instance_scores_and_optima_agree() -> None:
    topo = build_cluster(8, 4, 2, 2, 4)                           # 16 nodes, 96 GPUs
    program = build_workload(random.Random(3), demand=120, sizes=(1, 2, 4, 8, 16),
                             weights=(0.70, 0.10, 0.09, 0.07, 0.04))
    best = unconstrained_optimum(program, topo, time_limit=60.0)
    same_policy = policy_optimum(program, topo, time_limit=60.0)
    assert best["proven_optimal"] and same_policy["proven_optimal"]
    runs = {"intentc": evaluate(run_intentc(program, topo), program, topo)}
    runs |= {name: evaluate(run_baseline(policy, program, topo), program, topo) for name, policy in POLICIES}
    for name, r in runs.items():
        assert r["within_violations"] == 0, name
        assert r["placed_gpus"] <= 96 and r["idle_gpus_on_used_nodes"] >= r["idle_floor"], name
        # the optimum is a lexicographic maximum: nothing feasible is ahead of it
        assert sla_order(r["placed_by_sla"], best["placed_by_sla"]) in ("behind", "tied"), name  # type: ignore[arg-type]
    assert sla_order(same_policy["placed_by_sla"], best["placed_by_sla"]) in ("behind", "tied")  # type: ignore[arg-type]


def test_idle_floor_and_sla_bound() -> None:
    assert idle_floor([8, 8, 4], 13) == 3          # 13 GPUs need 16 of capacity (8 + 8 or 8 + 4 + 4)
    assert idle_floor([8, 8, 4], 12) == 0
    assert idle_floor([8, 8, 4], 20) == 0
    program = build_workload(random.Random(1), jobs=50)
    counts = {"P0": 0, "P1": 0, "P2": 0, "P3": 0}
    # keeping nothing of P0-P2, every GPU goes to the smallest P3 jobs
    p3 = sorted(i.gpu_count for i in program.intents if (i.constraints.sla or "P2") == "P3")
    assert sla_bound(program, counts, sum(p3)) == len(p3)
    assert sla_bound(program, counts, 0) == 0


def test_gang_aware_bound_counts_nvlink_units() -> None:
    """Two 32-GPU gangs fill a 72-GPU NVLink domain (its last 8 GPUs serve no gang), so two
    32s and a 16 of an hour each take 5 units of 16 GPUs for an hour on 4 units: >= 1.25 h,
    above GPU-time / GPUs (80 GPU-h on 88 GPUs) and the critical path (1 h); every schedule
    must respect it."""
    topo = build_cluster(2, 2, 1, 1, 18)                          # 16 HGX GPUs + one 72-GPU domain
    base = build_dag_workload(random.Random(1), 5)
    tenant = base.tenants[0].name
    gangs = tuple(ir.Intent(name, ir.Trigger("push"), ir.Action("training", "img"), ir.Context(ir.Ref(tenant)),
                            ir.Constraints(gpus=ir.GpuRequest(count=size, within="nvlink"), duration="3600s"))
                  for name, size in (("a", 32), ("b", 32), ("c", 16)))
    program = ir.Program(tenants=base.tenants, intents=gangs)
    bound = lower_bound(program, topo)
    assert bound["critical_path_s"] == 3600 and bound["work_over_gpus_s"] == -(-80 * 3600 // 88)
    assert bound["nvlink_gangs_s"] == bound["gang_aware_bound_s"] == 4500
    for runs in (time_intentc(program, topo), fifo_bestfit(program, topo), list_scheduler(program, topo)):
        assert max(r.end for r in runs) >= bound["gang_aware_bound_s"]
