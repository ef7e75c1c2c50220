"""Benchmark: how `make_plan` grows with the cluster and the workload (issue 12, item 5).

Run from the repository root:  python benchmarks/bench_plan_scale.py [--big] [--baseline PATH]

The 512-node cluster of bench_plan.py and the 2,000-job DAG workload of
bench_plan_time.py, scaled by 1/2, 1, 2 and 4 (1,000 jobs on 256 nodes up to
8,000 on 2,048); `--big` adds 100,000 jobs on 19,968 nodes (the cluster scaled
by 39), run once.  Two workloads per size:

  scaled quotas  the tenants' GPU quotas grow with the cluster: the same work
                 per node, so the growth is the planner's own;
  fixed quotas   the quotas stay at 1,200 and 400 GPUs whatever the cluster: the
                 quota-bound tenants queue more and more of their jobs, so each
                 instant offers more waiting intents (and lower classes wait
                 behind them); the work itself grows faster than the job count.

Reported: CPU seconds of this process (`time.process_time`, the minimum over
repeats: the machine is shared, and wall time counts the other tenants' load),
the wall seconds of that same run, the growth exponent per doubling,
log2(t(2s) / t(s)) (1.0 is linear, 2.0 quadratic), and the load average when
the run started and ended.  With `--baseline PATH` (another checkout, e.g.
the commit before a change) every size is also planned by that checkout's
`make_plan`, in a child process right after ours, so both see the same load:
`baseline_cpu_seconds` and `speedup` (baseline / ours).

Writes benchmarks/results/bench_plan_scale.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the checkout whose planner is measured: this one, or the baseline's in a child process
IMPORT_ROOT = Path(os.environ.get("BENCH_PLAN_ROOT", ROOT))
if str(IMPORT_ROOT) not in sys.path:
    sys.path.insert(0, str(IMPORT_ROOT))

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from intentc.plan.planner import make_plan  # noqa: E402

SWEEP = (0.5, 1, 2, 4)
BIG = (39, 100_000)             # cluster scale, jobs


def measure(scale: float, jobs: int, repeat: int, scaled_quotas: bool) -> dict[str, float | int | str]:
    topo = build_cluster(round(368 * scale), 16, 8, round(8 * scale), 18)
    program = build_dag_workload(random.Random(SEED), jobs, scale if scaled_quotas else 1)
    best_cpu, wall = float("inf"), 0.0
    load = os.getloadavg()[0]
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        plan, _ = make_plan(program, topo)
        cpu = time.process_time() - c0
        if cpu < best_cpu:
            best_cpu, wall = cpu, time.perf_counter() - w0
    return {"quotas": "scaled" if scaled_quotas else "fixed", "nodes": len(topo.topology.nodes), "jobs": jobs,
            "cpu_seconds": round(best_cpu, 3), "wall_seconds": round(wall, 3),
            "makespan_h": round(plan.metrics.makespan_s / 3600, 2),
            "load_average_before": round(load, 2), "load_average_after": round(os.getloadavg()[0], 2)}


def with_baseline(row: dict[str, float | int | str], baseline: Path | None, scale: float, repeat: int,
                  scaled: bool) -> dict[str, float | int | str]:
    """Add the baseline checkout's CPU seconds for the same size (a child process, run now)."""
    if baseline is None:
        return row
    env = dict(os.environ, BENCH_PLAN_ROOT=str(baseline), PYTHONPATH=str(baseline))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           f"{scale},{row['jobs']},{repeat},{int(scaled)}"],
                          env=env, check=True, capture_output=True, text=True)
    base = json.loads(done.stdout)
    return {**row, "baseline_cpu_seconds": base["cpu_seconds"],
            "speedup": round(float(base["cpu_seconds"]) / float(row["cpu_seconds"]), 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also 100,000 jobs on 19,968 nodes, scaled quotas (minutes)")
    ap.add_argument("--big-only", action="store_true",
                    help="only the 100,000-job row, replacing it in the results file (the sweep kept)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout: each size planned by it too, for a ratio")
    ap.add_argument("--child", help=argparse.SUPPRESS)      # "scale,jobs,repeat,scaled": one row as JSON
    args = ap.parse_args()
    if args.child:
        scale, jobs, repeat, scaled = args.child.split(",")
        print(json.dumps(measure(float(scale), int(jobs), int(repeat), scaled == "1")))
        return
    baseline = args.baseline.resolve() if args.baseline else None
    rows: list[dict[str, float | int | str]] = []
    if args.big_only:
        old = json.loads((ROOT / "benchmarks" / "results" / "bench_plan_scale.json").read_text(encoding="utf-8"))
        rows = [r for r in old["runs"] if r["jobs"] != BIG[1]]
        args.big = True
    for scaled in (True, False) if not args.big_only else ():
        sweep = [with_baseline(measure(s, round(2000 * s), args.repeat, scaled), baseline, s, args.repeat, scaled)
                 for s in SWEEP]
        for a, b in zip(sweep, sweep[1:]):
            b["exponent_per_doubling"] = round(math.log2(float(b["cpu_seconds"]) / float(a["cpu_seconds"])), 2)
        rows += sweep
    if args.big:
        rows.append(with_baseline(measure(BIG[0], BIG[1], 1, True), baseline, BIG[0], 1, True))
    for r in rows:
        print(f"{r['quotas']:>7} quotas {r['jobs']:>7} jobs {r['nodes']:>6} nodes {r['cpu_seconds']:>9.3f} s CPU "
              f"{r['wall_seconds']:>9.3f} s wall  load {r['load_average_before']}"
              + (f"  exponent {r['exponent_per_doubling']}" if "exponent_per_doubling" in r else "")
              + (f"  baseline {r['baseline_cpu_seconds']} s ({r['speedup']}x)" if "speedup" in r else ""))
    path = write_results("bench_plan_scale", {"runs": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
