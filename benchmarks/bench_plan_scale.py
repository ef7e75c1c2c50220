"""Benchmark: how `make_plan` grows with the cluster and the workload (issue 12, item 5).

Run from the repository root:  python benchmarks/bench_plan_scale.py [--big]

The 512-node cluster of bench_plan.py and the 2,000-job DAG workload of
bench_plan_time.py, both scaled by 1, 2 and 4 (8,000 jobs on 2,048 nodes);
`--big` adds 100,000 jobs on about 20,000 nodes (scale 39).  Reported: the
minimum wall time over repeats in this process, and the growth exponent per
doubling, log2(t(2s) / t(s)) (1.0 is linear, 2.0 quadratic).

Writes benchmarks/results/bench_plan_scale.json.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from intentc.plan.planner import make_plan  # noqa: E402


def measure(scale: int, repeat: int) -> dict[str, float | int]:
    topo = build_cluster(368 * scale, 16, 8, 8 * scale, 18)
    program = build_dag_workload(random.Random(SEED), 2000 * scale)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        make_plan(program, topo)
        best = min(best, time.perf_counter() - t0)
    return {"scale": scale, "nodes": len(topo.topology.nodes), "jobs": len(program.intents), "seconds": round(best, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also 100,000 jobs on ~20,000 nodes (minutes)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = [measure(s, args.repeat) for s in (1, 2, 4)]
    for a, b in zip(rows, rows[1:]):
        b["exponent_per_doubling"] = round(math.log2(b["seconds"] / a["seconds"]), 2)
    if args.big:
        rows.append(measure(39, 1))
    for r in rows:
        print(f"{r['jobs']:>7} jobs {r['nodes']:>6} nodes {r['seconds']:>9.3f} s"
              + (f"  exponent {r['exponent_per_doubling']}" if "exponent_per_doubling" in r else ""))
    path = write_results("bench_plan_scale", {"runs": rows})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
