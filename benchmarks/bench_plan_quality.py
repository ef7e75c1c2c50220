"""Benchmark: the quality of intentc's schedule against simple schedulers (issue 37).

Run from the repository root:
    python benchmarks/bench_plan_quality.py [--per-shape N] [--baseline CHECKOUT] [--variants]

Several hundred random instances (`plan_quality_gen.py`: six shapes, 20-400 jobs on
4-64 nodes, seeded) are planned by intentc and, in the same run, by

  fifo-bestfit     submission order, Kueue TAS BestFit placement (plan_time_baselines.py)
  longest-chain    list scheduling, the longest remaining chain of durations first
  sla-first        SLA class first, then submission order
  baseline         `--baseline CHECKOUT`: intentc's planner of another checkout (e.g. the
                   previous commit, `git worktree add /tmp/plan-base HEAD`), in a child
                   process that builds the very same instances from the same seeds
  only R/Pn/L      with `--variants`: intentc with one of its orderings alone
                   (`schedule.ORDERINGS`: reservations R, shortest first up to class Pn,
                   order L below; the planner plans with each and keeps the best)

Every schedule is checked by tests/plan_verify.py, which reads the instance data and the
placements only (no planner code): GPUs held twice, dependencies, quotas at every instant,
durations, and SLA inversions of two kinds (a higher class delayed by a lower one that
started while it waited, through GPUs or through its tenant's quota).  Reported per policy:
makespan ratios against FIFO + BestFit and against the lower bound (critical path; GPU-
seconds over GPUs, per product; per tenant over its quota): median, p90, max; mean start
delay (start - ready) per SLA class; inversions.

Writes benchmarks/results/bench_plan_quality.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.plan_quality_gen import (SHAPES, Instance, lower_bound, make_instance, to_program,  # noqa: E402
                                         to_topology)
from benchmarks.plan_time_baselines import Run, simulate  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from tests.plan_verify import (order_violations, over_capacity, overlaps, quota_violations,  # noqa: E402
                               ready_times, sla_inversions, wrong_durations)

SLA_CLASSES = ("P0", "P1", "P2", "P3")
Doc = dict[str, Any]

# the child process that plans with another checkout: it imports that checkout's intentc
# and builds the instances with this checkout's generator (plain data in, plain data out)
CHILD = r"""
import importlib.util, json, sys
root, gen_path, specs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, root)
spec = importlib.util.spec_from_file_location("plan_quality_gen", gen_path)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
from intentc.plan.planner import make_plan
from intentc.plan.jsonio import plan_to_obj
out = []
for seed, shape in specs:
    inst = gen.make_instance(seed, shape)
    plan, _ = make_plan(gen.to_program(inst), gen.to_topology(inst))
    doc = plan_to_obj(plan)
    out.append({"placements": doc["placements"], "unplaced": doc["unplaced"]})
json.dump(out, sys.stdout)
"""


def _runs_doc(runs: list[Run]) -> Doc:
    return {"placements": [{"intent": r.intent, "tenant": r.tenant, "start_s": r.start, "end_s": r.end,
                            "ready_s": r.ready, "allocations": [{"node": n, "gpus": list(g)} for n, g in r.allocations]}
                           for r in runs], "unplaced": []}


def _order(inst: Instance) -> dict[str, int]:
    return {j["name"]: i for i, j in enumerate(inst["jobs"])}


def fifo(inst: Instance) -> Doc:
    order = _order(inst)
    return _runs_doc(simulate(to_program(inst), to_topology(inst), lambda i: (order[i.name],)))


def longest_chain(inst: Instance) -> Doc:
    order = _order(inst)
    rest: dict[str, int] = {}
    succs: dict[str, list[str]] = {j["name"]: [] for j in inst["jobs"]}
    for j in inst["jobs"]:
        for a in j["after"]:
            succs[a].append(j["name"])
    for j in reversed(inst["jobs"]):
        rest[j["name"]] = j["duration"] + max((rest[s] for s in succs[j["name"]]), default=0)
    return _runs_doc(simulate(to_program(inst), to_topology(inst), lambda i: (-rest[i.name], order[i.name])))


def sla_first(inst: Instance) -> Doc:
    order = _order(inst)
    sla = {j["name"]: int(j["sla"][1:]) for j in inst["jobs"]}
    return _runs_doc(simulate(to_program(inst), to_topology(inst), lambda i: (sla[i.name], order[i.name])))


def intentc(inst: Instance, orderings: tuple[Any, ...] | None = None) -> Doc:
    """intentc's plan; `orderings`: only these of `schedule.ORDERINGS` (None: the planner's own choice)."""
    from intentc.plan import planner
    from intentc.plan.jsonio import plan_to_obj
    default = planner.ORDERINGS
    if orderings is not None:
        planner.ORDERINGS = orderings
    try:
        plan, _ = planner.make_plan(to_program(inst), to_topology(inst))
    finally:
        planner.ORDERINGS = default
    doc = plan_to_obj(plan)
    return {"placements": doc["placements"], "unplaced": doc["unplaced"]}


def baseline_docs(checkout: Path, specs: list[tuple[int, str]]) -> list[Doc]:
    gen = ROOT / "benchmarks" / "plan_quality_gen.py"
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(gen), json.dumps(specs)],
                          env=env, check=True, capture_output=True, text=True, cwd=str(checkout))
    docs: list[Doc] = json.loads(done.stdout)
    return docs


def check(inst: Instance, doc: Doc) -> dict[str, Any]:
    """What the independent checker finds in one schedule, and its numbers."""
    jobs, nodes = inst["jobs"], inst["nodes"]
    quotas = {t["name"]: t["quota"] for t in inst["tenants"]}
    after = {j["name"]: list(j["after"]) for j in jobs}
    broken = (len(overlaps(doc)) + len(order_violations(doc, after))
              + len(over_capacity(doc, {n["name"]: n["gpus"] for n in nodes}))
              + len(quota_violations(doc, quotas)) + len(wrong_durations(doc, jobs)))
    inv = sla_inversions(doc, jobs, nodes, quotas)
    ready = ready_times(doc, jobs)
    delays: dict[str, list[int]] = {c: [] for c in SLA_CLASSES}
    sla = {j["name"]: j["sla"] for j in jobs}
    for p in doc["placements"]:
        delays[sla[p["intent"]]].append(p["start_s"] - ready[p["intent"]])
    return {"makespan": max((p["end_s"] for p in doc["placements"]), default=0),
            "ran": len(doc["placements"]), "unplaced": len(doc["unplaced"]), "broken": broken,
            "gpu_inversions": len(inv["gpu"]), "quota_inversions": len(inv["quota"]),
            "delay_sum": {c: sum(v) for c, v in delays.items()}, "delay_n": {c: len(v) for c, v in delays.items()}}


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summarise(rows: list[dict[str, Any]], policies: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pol in policies:
        vs_fifo = [r[pol]["makespan"] / r["fifo-bestfit"]["makespan"] for r in rows]
        vs_lb = [r[pol]["makespan"] / r["lower_bound"] for r in rows]
        delay = {c: (sum(r[pol]["delay_sum"][c] for r in rows) / max(1, sum(r[pol]["delay_n"][c] for r in rows)))
                 for c in SLA_CLASSES}
        out[pol] = {
            "vs_fifo": {"median": round(statistics.median(vs_fifo), 4), "p90": round(_pct(vs_fifo, 0.9), 4),
                        "max": round(max(vs_fifo), 4),
                        "at_most_fifo": sum(x <= 1.0 + 1e-9 for x in vs_fifo),
                        "above_1_10": sum(x > 1.10 + 1e-9 for x in vs_fifo)},
            "vs_lower_bound": {"median": round(statistics.median(vs_lb), 4), "p90": round(_pct(vs_lb, 0.9), 4),
                               "max": round(max(vs_lb), 4)},
            "mean_delay_min": {c: round(v / 60, 1) for c, v in delay.items()},
            "gpu_inversions": sum(r[pol]["gpu_inversions"] for r in rows),
            "quota_inversions": sum(r[pol]["quota_inversions"] for r in rows),
            "plans_with_inversions": sum(1 for r in rows if r[pol]["gpu_inversions"] + r[pol]["quota_inversions"]),
            "broken": sum(r[pol]["broken"] for r in rows),
            "unplaced": sum(r[pol]["unplaced"] for r in rows),
            "cpu_seconds": round(sum(r[pol].get("cpu", 0.0) for r in rows), 2),
        }
    return out


def run(per_shape: int, baseline: Path | None, variants: bool,
        progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    specs = [(seed, shape) for shape in SHAPES for seed in range(per_shape)]
    policies: dict[str, Callable[[Instance], Doc]] = {
        "intentc": intentc, "fifo-bestfit": fifo, "longest-chain": longest_chain, "sla-first": sla_first}
    if variants:
        from intentc.plan.schedule import ORDERINGS
        for o in ORDERINGS:
            policies[f"only {o.reserve}/P{o.shortest_to}/{o.low}"] = lambda inst, o=o: intentc(inst, (o,))
    base: list[Doc] | None = None
    if baseline is not None:
        before = os.times()
        base = baseline_docs(baseline, specs)
        after = os.times()
        child = after.children_user - before.children_user + after.children_system - before.children_system
        progress(f"baseline planned {len(base)} instances in {child:.1f} s CPU (its child process)")
    rows = []
    for n, (seed, shape) in enumerate(specs):
        inst = make_instance(seed, shape)
        row: dict[str, Any] = {"seed": seed, "shape": shape, "jobs": len(inst["jobs"]), "nodes": len(inst["nodes"]),
                               "lower_bound": lower_bound(inst)}
        for name, fn in policies.items():
            c0 = time.process_time()
            doc = fn(inst)
            cpu = time.process_time() - c0
            row[name] = check(inst, doc)
            row[name]["cpu"] = cpu
        if base is not None:
            row["baseline"] = check(inst, base[n])
        rows.append(row)
        if n % 50 == 49:
            progress(f"{n + 1} / {len(specs)} instances")
    names = list(policies) + (["baseline"] if base is not None else [])
    return {"instances": len(rows), "per_shape": per_shape, "shapes": list(SHAPES),
            "summary": summarise(rows, names),
            "per_shape_summary": {shape: summarise([r for r in rows if r["shape"] == shape], names)
                                  for shape in SHAPES},
            "rows": [{k: ({kk: vv for kk, vv in v.items() if kk not in ("delay_sum", "delay_n", "cpu")}
                          if isinstance(v, dict) else v) for k, v in r.items()} for r in rows]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-shape", type=int, default=50, help="instances per shape (six shapes)")
    ap.add_argument("--baseline", type=Path, help="another checkout whose planner plans the same instances")
    ap.add_argument("--variants", action="store_true", help="also intentc with each of its orderings alone")
    ap.add_argument("--name", default="bench_plan_quality", help="results file name")
    args = ap.parse_args()
    doc = run(args.per_shape, args.baseline.resolve() if args.baseline else None, args.variants,
              lambda s: print(s, file=sys.stderr, flush=True))
    for pol, s in doc["summary"].items():
        print(f"{pol:>14}: vs FIFO median {s['vs_fifo']['median']:.3f} p90 {s['vs_fifo']['p90']:.3f} "
              f"max {s['vs_fifo']['max']:.3f} (<= FIFO on {s['vs_fifo']['at_most_fifo']}, >1.10x on "
              f"{s['vs_fifo']['above_1_10']}); vs bound median {s['vs_lower_bound']['median']:.3f} "
              f"p90 {s['vs_lower_bound']['p90']:.3f} max {s['vs_lower_bound']['max']:.3f}; delay min "
              f"{s['mean_delay_min']}; inversions gpu {s['gpu_inversions']} quota {s['quota_inversions']}; "
              f"broken {s['broken']}; unplaced {s['unplaced']}")
    path = write_results(args.name, doc)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
