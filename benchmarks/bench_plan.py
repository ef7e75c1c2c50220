"""Benchmark: intentc's planner against three baselines and a MILP optimum.

Run from the repository root:  python benchmarks/bench_plan.py [--quick]

Cluster (512 nodes, 3,520 GPUs; `plan_workload.py`)
    368 HGX-style nodes x 8 H100-80GB (NVSwitch inside each node, matrix from
    the checked-in `nvidia-smi topo -m` of an HGX H100: 2 NUMA nodes, a PIX
    NIC per GPU), racks of 16 nodes, zones of 8 racks; and 144 rack-scale
    GB200 trays x 4 GPUs in 8 multi-node NVLink domains of 18 trays
    (NVL72-style, as `nvidia.com/gpu.clique` labels them), one rack each.

Workload (2,000 GPU jobs, seed 20230)
    Job sizes follow the shape of the Alibaba GPU cluster trace v2023
    (cluster-trace-gpu-v2023: most jobs ask for a single GPU, a tail of
    2/4/8-GPU jobs and a few multi-node gangs), synthesised with a fixed seed
    (no download).  Sizes 1/2/4/8/16/32 with weights 80/9/5/4/1.2/0.8 %;
    2-8 GPU jobs are single pods (`within node`), 16/32-GPU gangs ask for
    `within nvlink` (half of them) or `within rack` with `prefer nvlink`.  15 %
    of the small jobs pin H100-80GB.  Six tenants (tiers gold/silver/bronze,
    two with quotas) and SLA classes P0-P3 (5/20/50/25 %).

    The headline runs take the first 1,600, 1,800 and all 2,000 jobs: 87 %,
    99 % and 112 % of the cluster's GPUs.

Baselines (`plan_baselines.py`): kube-scheduler's LeastAllocated, first-fit,
    and Kueue TAS domain best-fit without intra-node topology.  All gang-aware,
    all admitting jobs in intentc's own order, so they differ only in *where*.

Optima (`plan_milp.py`, small instances: 16 nodes, 96 GPUs, five seeds)
    scipy.optimize.milp.  The reference is the same admission policy with a
    perfect packer (a job is admitted whenever any arrangement of the jobs
    before it leaves room), so the gap is what placement loses; the optimum
    with no policy at all (most jobs class by class, ignoring fair share) is
    reported next to it for scale.

Measures (the same scoring code for every policy)
    placed jobs, in total and per SLA class; "SLA order" compares the per-class
    counts P0 first (what an SLA-first scheduler maximises: one more P1 job
    outweighs any number of P3 jobs).
    an SLA bound under overload: the most jobs *any* placement could hold
    while placing as many P0, P1 and P2 jobs as intentc (the smallest of each
    class, then the smallest P3 jobs into the GPUs left; topology and quotas
    ignored, so it is an upper bound).
    fragmentation, two ways: idle GPUs on partly used nodes (the plan.json
    metric, shown next to its floor: the least any placement of that many
    GPUs can leave, since nodes have 4 or 8 GPUs), and the expected number of
    free GPUs a job drawn from the workload's own mix could not use (the
    fragmentation measure of Weng et al., "Beware of Fragmentation", USENIX
    ATC '23, which introduced this Alibaba trace, extended to gangs: a job of
    size s `within` level L cannot use the free GPUs of an L-domain with fewer
    than s free).

Prints a table and a list of the issue's targets with met / not met, and
writes benchmarks/results/bench_plan.json.  Timings are wall-clock minima
over repeated runs in this process, reported as ratios.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.plan_baselines import POLICIES, Alloc, terms_of, run_baseline  # noqa: E402
from benchmarks.plan_milp import policy_optimum, unconstrained_optimum  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from benchmarks.plan_workload import SEED, SLA_CLASSES, build_cluster, build_workload, sla_of  # noqa: E402
from intentc import ir  # noqa: E402
from intentc.plan.planner import make_plan  # noqa: E402
from intentc.plan.admission import FairShare  # noqa: E402
from intentc.topology.load import LoadedTopology  # noqa: E402

LOADS = (1600, 1800, 2000)
PLAN_SECONDS_TARGET = 2.0
MILP_PCT_TARGET = 95.0


def run_intentc(program: ir.Program, topo: LoadedTopology) -> Alloc:
    """What intentc runs at plan time 0: the plan is a schedule over time, and this
    benchmark compares placements at one instant (the rest of the jobs are queued;
    bench_plan_time.py measures the schedule over time)."""
    plan, _ = make_plan(program, topo)
    return {p.intent: [(a.node, a.gpus) for a in p.allocations] for p in plan.placements
            if p.allocations and p.start_s == 0}


# --------------------------------------------------------------------------
# Scoring (the same code for every policy)
# --------------------------------------------------------------------------

def _placed_before_first_refusal(alloc: Alloc, program: ir.Program) -> int:
    """Replay the (outcome-dependent) admission order and count the jobs placed
    before the first one refused for lack of room; quota refusals are policy,
    not placement, and are skipped."""
    fair = FairShare(terms_of(program))
    placed = 0
    for intent in fair.order([i for i in program.intents if i.gpu_count], {}):
        if intent.name in alloc:
            fair.charge(intent.tenant, intent.gpu_count)
            placed += 1
        elif not fair.over_quota(intent.tenant, intent.gpu_count):
            break
    return placed


def idle_floor(capacities: Iterable[int], gpus: int) -> int:
    """The fewest idle GPUs on used nodes any placement of `gpus` GPUs can leave:
    the smallest total capacity of a set of nodes holding them, minus `gpus`."""
    reachable = 1                                   # bit s set: some node set has capacity s
    for cap in capacities:
        reachable |= reachable << cap
    total = reachable.bit_length() - 1
    for s in range(gpus, total + 1):
        if reachable >> s & 1:
            return s - gpus
    return 0


def _domain_of(node: ir.TopologyNode, level: str | None) -> str:
    """The node's domain at `level` (None: the whole cluster); an undeclared level is the node."""
    if level is None:
        return ""
    if level == "node":
        return node.name
    return node.domain(level) or node.name


def expected_unusable(free: dict[str, int], nodes: dict[str, ir.TopologyNode], program: ir.Program) -> float:
    """Free GPUs a job drawn from the workload's mix could not use, on average
    (Weng et al. ATC '23, with gangs): sum over job shapes (size, `within`) of
    the shape's share of jobs times the free GPUs in domains too small for it."""
    shapes: dict[tuple[int, str | None], int] = {}
    for intent in program.intents:
        g = intent.constraints.gpus
        if g is not None and g.count > 0:
            key = (g.count, g.within)
            shapes[key] = shapes.get(key, 0) + 1
    total = sum(shapes.values())
    expected = 0.0
    for (size, within), count in shapes.items():
        per_domain: dict[str, int] = {}
        for name, f in free.items():
            d = _domain_of(nodes[name], within)
            per_domain[d] = per_domain.get(d, 0) + f
        expected += count / total * sum(f for f in per_domain.values() if f < size)
    return round(expected, 1)


def evaluate(alloc: Alloc, program: ir.Program, topo: LoadedTopology) -> dict[str, object]:
    nodes = {n.name: n for n in topo.topology.nodes}
    intents = {i.name: i for i in program.intents}
    spanning = numa_split = violations = gpus = 0
    by_sla = {s: 0 for s in SLA_CLASSES}
    used: dict[str, int] = {}
    for job, parts in alloc.items():
        intent = intents[job]
        assert sum(len(g) for _, g in parts) == intent.gpu_count, f"{job}: gang split"
        gpus += intent.gpu_count
        by_sla[sla_of(intent)] += 1
        for n, g in parts:
            used[n] = used.get(n, 0) + len(g)
        spanning += len({nodes[n].domain("nvlink") or n for n, _ in parts}) > 1
        within = intent.constraints.gpus.within if intent.constraints.gpus else None
        if within:
            violations += len({_domain_of(nodes[n], within) for n, _ in parts}) > 1
        if len(parts) == 1:
            node, g = parts[0]
            numa = {info.numa_node for info in topo.matrix(node).gpus if info.index in g}
            per_numa = max(sum(1 for i in topo.matrix(node).gpus if i.numa_node == x) for x in numa)
            numa_split += len(numa) > 1 and len(g) <= per_numa
    assert all(used[n] <= nodes[n].gpu_count for n in used), "node over capacity"
    free = {n: spec.gpu_count - used.get(n, 0) for n, spec in nodes.items()}
    return {
        "placed_jobs": len(alloc),
        "placed_by_sla": by_sla,
        "placed_gpus": gpus,
        "placed_before_first_refusal": _placed_before_first_refusal(alloc, program),
        "idle_gpus_on_used_nodes": sum(nodes[n].gpu_count - k for n, k in used.items()),
        "idle_floor": idle_floor((n.gpu_count for n in nodes.values()), gpus),
        "expected_unusable_free_gpus": expected_unusable(free, nodes, program),
        "free_gpus": sum(free.values()),
        "jobs_spanning_nvlink_domains": spanning,
        "numa_split_jobs": numa_split,
        "within_violations": violations,
    }


def sla_bound(program: ir.Program, by_sla: dict[str, int], gpus: int) -> int:
    """The most jobs any placement can hold with at least `by_sla` jobs of every
    class but the last, on `gpus` GPUs (see the module docstring)."""
    sizes = {s: sorted(i.gpu_count for i in program.intents if sla_of(i) == s) for s in SLA_CLASSES}
    *kept, last = SLA_CLASSES
    left = gpus - sum(sum(sizes[s][:by_sla[s]]) for s in kept)
    jobs = sum(by_sla[s] for s in kept)
    for size in sizes[last]:
        if size > left:
            break
        left -= size
        jobs += 1
    return jobs


def sla_order(mine: dict[str, int], theirs: dict[str, int]) -> str:
    """'ahead', 'tied' or 'behind', comparing per-class counts P0 first."""
    for sla in SLA_CLASSES:
        if mine[sla] != theirs[sla]:
            return "ahead" if mine[sla] > theirs[sla] else "behind"
    return "tied"


def timed(fn: Callable[[], Alloc], repeat: int) -> tuple[Alloc, float, float]:
    """Result, best wall-clock seconds and best CPU seconds over `repeat` runs
    (CPU time as well because a shared machine inflates wall time)."""
    wall = cpu = float("inf")
    result: Alloc = {}
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return result, wall, cpu


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------

RATIO_KEYS = ("placed_jobs", "placed_gpus", "placed_before_first_refusal", "idle_gpus_on_used_nodes",
              "expected_unusable_free_gpus", "jobs_spanning_nvlink_domains", "numa_split_jobs", "wall_s", "cpu_s")


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def big_run(jobs: int, repeat: int) -> dict[str, object]:
    """The 512-node cluster with the first `jobs` jobs of the seeded 2,000-job workload."""
    topo = build_cluster(368, 16, 8, 8, 18)
    full = build_workload(random.Random(SEED), jobs=2000)
    program = ir.Program(tenants=full.tenants, intents=full.intents[:jobs])
    demand = sum(i.gpu_count for i in program.intents)
    capacity = sum(n.gpu_count for n in topo.topology.nodes)
    runs: dict[str, dict[str, object]] = {}
    alloc, wall, cpu = timed(lambda: run_intentc(program, topo), repeat)
    runs["intentc"] = {**evaluate(alloc, program, topo), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
    for name, policy in POLICIES:
        alloc, wall, cpu = timed(lambda p=policy: run_baseline(p, program, topo), repeat)  # type: ignore[misc]
        runs[name] = {**evaluate(alloc, program, topo), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
    mine = runs["intentc"]
    versus = {}
    for name, r in runs.items():
        if name == "intentc":
            continue
        row: dict[str, object] = {key: _ratio(float(mine[key]), float(r[key])) for key in RATIO_KEYS}  # type: ignore[arg-type]
        row["sla_order"] = sla_order(mine["placed_by_sla"], r["placed_by_sla"])  # type: ignore[arg-type]
        versus[name] = row
    return {"nodes": len(topo.topology.nodes), "gpus": capacity, "jobs": len(program.intents),
            "demand_gpus": demand, "load_pct": round(100 * demand / capacity), "runs": runs,
            "sla_bound_jobs": sla_bound(program, mine["placed_by_sla"], capacity),  # type: ignore[arg-type]
            "intentc_vs_baseline": versus}


def small_runs(seeds: Iterable[int], time_limit: float) -> list[dict[str, object]]:
    out = []
    for seed in seeds:
        topo = build_cluster(8, 4, 2, 2, 4)                      # 16 nodes, 96 GPUs
        program = build_workload(random.Random(seed), demand=120, sizes=(1, 2, 4, 8, 16),
                                 weights=(0.70, 0.10, 0.09, 0.07, 0.04))
        mine = evaluate(run_intentc(program, topo), program, topo)
        start = time.perf_counter()
        best = policy_optimum(program, topo, time_limit)
        solve_s = time.perf_counter() - start
        bound = unconstrained_optimum(program, topo, time_limit)
        baselines = {name: evaluate(run_baseline(p, program, topo), program, topo) for name, p in POLICIES}
        row: dict[str, object] = {"seed": seed, "jobs": len(program.intents), "intentc": mine, "milp": best,
                                  "milp_unconstrained": bound, "milp_seconds": round(solve_s, 2),
                                  "baselines": baselines}
        if "placed_gpus" in best:
            row["pct_of_optimum_jobs"] = round(100 * mine["placed_jobs"] / best["placed_jobs"], 1)  # type: ignore[operator]
            row["pct_of_optimum_gpus"] = round(100 * mine["placed_gpus"] / best["placed_gpus"], 1)  # type: ignore[operator]
        if "placed_jobs" in bound:
            row["pct_of_unconstrained_jobs"] = round(100 * mine["placed_jobs"] / bound["placed_jobs"], 1)  # type: ignore[operator]
        out.append(row)
    return out


# --------------------------------------------------------------------------
# Targets (issue #3), judged from the numbers above
# --------------------------------------------------------------------------

def targets(bigs: list[dict[str, object]], small: list[dict[str, object]]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []

    def add(name: str, met: bool, detail: str) -> None:
        out.append({"target": name, "met": met, "detail": detail})

    full = next(b for b in bigs if b["jobs"] == 2000)
    wall = full["runs"]["intentc"]["wall_s"]  # type: ignore[index]
    add("2,000-job plan in under 2 s", wall < PLAN_SECONDS_TARGET, f"{wall} s")
    for big in bigs:
        runs: dict[str, dict[str, object]] = big["runs"]  # type: ignore[assignment]
        mine = runs["intentc"]
        others = {n: r for n, r in runs.items() if n != "intentc"}
        load = f"{big['load_pct']} % load"
        jobs = ", ".join(f"{n} {r['placed_jobs']}" for n, r in others.items())
        add(f"more jobs placed than every baseline ({load})",
            all(mine["placed_jobs"] > r["placed_jobs"] for r in others.values()),  # type: ignore[operator]
            f"intentc {mine['placed_jobs']}; {jobs}; at most {big['sla_bound_jobs']} for any placement "
            f"with intentc's P0-P2 counts")
        add(f"ahead of every baseline in SLA order ({load})",
            all(sla_order(mine["placed_by_sla"], r["placed_by_sla"]) == "ahead"  # type: ignore[arg-type]
                for r in others.values()),
            "; ".join(f"{n}: {sla_order(mine['placed_by_sla'], r['placed_by_sla'])}"  # type: ignore[arg-type]
                      for n, r in others.items()))
        idle = ", ".join(f"{n} {r['idle_gpus_on_used_nodes']}" for n, r in others.items())
        add(f"idle GPUs on used nodes at the floor and no more than any baseline's ({load})",
            mine["idle_gpus_on_used_nodes"] == mine["idle_floor"]
            and all(mine["idle_gpus_on_used_nodes"] <= r["idle_gpus_on_used_nodes"]  # type: ignore[operator]
                    for r in others.values()),
            f"intentc {mine['idle_gpus_on_used_nodes']} (floor {mine['idle_floor']}); {idle}")
        unusable = ", ".join(f"{n} {r['expected_unusable_free_gpus']}" for n, r in others.items())
        add(f"less fragmentation (unusable free GPUs) than every baseline ({load})",
            all(mine["expected_unusable_free_gpus"] < r["expected_unusable_free_gpus"]  # type: ignore[operator]
                for r in others.values()),
            f"intentc {mine['expected_unusable_free_gpus']}; {unusable}")
    solved = [r for r in small if "pct_of_optimum_jobs" in r]
    worst = min((float(r["pct_of_optimum_jobs"]) for r in solved), default=0.0)  # type: ignore[arg-type]
    add(f"within {100 - MILP_PCT_TARGET:.0f} % of the MILP optimum's jobs (same policy, perfect packing) "
        f"on every small instance",
        bool(solved) and len(solved) == len(small) and worst >= MILP_PCT_TARGET,
        ", ".join(f"seed {r['seed']}: {r.get('pct_of_optimum_jobs')} %" for r in small))
    zero = [r for r in solved if r["milp"]["jobs_spanning_nvlink_domains"] == 0]  # type: ignore[index]
    add("zero NVLink-spanning jobs wherever the optimum has zero",
        all(r["intentc"]["jobs_spanning_nvlink_domains"] == 0 for r in zero),  # type: ignore[index]
        f"{len(zero)} of {len(solved)} instances have an optimum with zero; intentc: "
        + ", ".join(str(r["intentc"]["jobs_spanning_nvlink_domains"]) for r in zero))  # type: ignore[index]
    return out


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

COLUMNS = (("placed_jobs", "jobs"), ("placed_by_sla", "P0/P1/P2/P3"), ("placed_gpus", "GPUs"),
           ("placed_before_first_refusal", "before 1st refusal"), ("idle_gpus_on_used_nodes", "idle on used"),
           ("idle_floor", "idle floor"), ("expected_unusable_free_gpus", "unusable free"),
           ("jobs_spanning_nvlink_domains", "NVL-spanning"), ("numa_split_jobs", "NUMA-split"),
           ("within_violations", "within viol."), ("wall_s", "wall s"), ("cpu_s", "cpu s"))


def _cell(value: object) -> str:
    if isinstance(value, dict):
        return "/".join(str(value[s]) for s in SLA_CLASSES)
    return str(value)


def _big_table(big: dict[str, object]) -> list[str]:
    runs: dict[str, dict[str, object]] = big["runs"]  # type: ignore[assignment]
    width = max(len(h) for _, h in COLUMNS)
    lines = [f"{big['nodes']} nodes, {big['gpus']} GPUs; {big['jobs']} jobs asking for {big['demand_gpus']} GPUs "
             f"({big['load_pct']} % load)",
             f"{'policy':>16}" + "".join(f"{h:>{width + 1}}" for _, h in COLUMNS)]
    for name, r in runs.items():
        lines.append(f"{name:>16}" + "".join(f"{_cell(r[c]):>{width + 1}}" for c, _ in COLUMNS))
    lines.append(f"SLA bound: at most {big['sla_bound_jobs']} jobs for any placement with intentc's P0-P2 counts")
    lines.append("intentc / baseline (jobs, GPUs, before 1st refusal: higher is better; the rest: lower)")
    ratios: dict[str, dict[str, object]] = big["intentc_vs_baseline"]  # type: ignore[assignment]
    for name, r in ratios.items():
        lines.append(f"  vs {name:<16} " + "  ".join(f"{k}={v}" for k, v in r.items()))
    return lines


def _table(bigs: list[dict[str, object]], small: list[dict[str, object]], goals: list[dict[str, object]]) -> str:
    lines: list[str] = []
    for big in bigs:
        lines += _big_table(big) + [""]
    lines.append("small instances (16 nodes, 96 GPUs) vs the MILP optimum of the same admission policy "
                 "(perfect packing)")
    for row in small:
        m: dict[str, object] = row["milp"]  # type: ignore[assignment]
        mine: dict[str, object] = row["intentc"]  # type: ignore[assignment]
        lines.append(
            f"  seed {row['seed']}: {row['jobs']} jobs; jobs {mine['placed_jobs']}/{m.get('placed_jobs')} "
            f"({row.get('pct_of_optimum_jobs')}%; by SLA {_cell(mine['placed_by_sla'])} vs "
            f"{_cell(m.get('placed_by_sla', {s: '?' for s in SLA_CLASSES}))}), GPUs "
            f"{mine['placed_gpus']}/{m.get('placed_gpus')} ({row.get('pct_of_optimum_gpus')}%), idle on used "
            f"{mine['idle_gpus_on_used_nodes']} vs {m.get('idle_gpus_on_used_nodes')}, NVL-spanning "
            f"{mine['jobs_spanning_nvlink_domains']} vs {m.get('jobs_spanning_nvlink_domains')}, "
            f"proven optimal={m.get('proven_optimal')} ({row['milp_seconds']} s); with no policy: "
            f"{row.get('milp_unconstrained', {}).get('placed_jobs')} jobs "  # type: ignore[attr-defined]
            f"({row.get('pct_of_unconstrained_jobs')}%)")
    lines += ["", "targets"]
    for goal in goals:
        lines.append(f"  [{'met' if goal['met'] else 'NOT MET'}] {goal['target']}: {goal['detail']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one timing run, two small seeds, short MILP limit")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    bigs = [big_run(jobs, repeat) for jobs in LOADS]
    small = small_runs([1, 2] if args.quick else [1, 2, 3, 4, 5], 20.0 if args.quick else 60.0)
    goals = targets(bigs, small)
    print(_table(bigs, small, goals))
    path = write_results("bench_plan", {"seed": SEED, "large": bigs, "small": small, "targets": goals})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
