"""What binding on the live cluster costs `intentc apply`, against the preview it starts from.

    python benchmarks/bench_live_binding.py [--jobs 2000] [--cordoned 0.1] [--repeat 2]

Workload: benchmarks/plan_workload.py's seeded DAG of --jobs intents on the
512-node cluster (368 HGX x 8, 144 NVL72-style x 4).  The cluster state is
synthetic (no API server): every topology node Ready, every `1/--cordoned`-th
node cordoned, no pods.

Baseline, same run: the preview apply compiles anyway — `make_plan` +
`render` of the whole program on the empty topology (best of --repeat).
Measured: `LiveBinder.whole` (apply --no-wait: every wave bound at the
start) and `LiveBinder.bind_wave` for each wave (apply --wait), best of
--repeat, with how many intents moved; and, for the case where the cluster
changed nothing, `whole` + every wave on all nodes Ready (the compiled
objects are reused: no re-plan, no render).  Reported as ratios to the
baseline.  Writes benchmarks/results/bench_live_binding.json.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.plan_workload import build_cluster, build_dag_workload  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from intentc.kube.cluster_state import ClusterState  # noqa: E402
from intentc.plan.planner import make_plan  # noqa: E402
from intentc.reconcile.live_binding import LiveBinder  # noqa: E402
from intentc.render import render  # noqa: E402
from intentc.render.capabilities import KubeVersion  # noqa: E402

SEED = 7
VERSION = KubeVersion(1, 37)


def best(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, min(times)


def state(topology: Any, every: int) -> ClusterState:
    nodes = tuple({"metadata": {"name": n.name}, "spec": {"unschedulable": bool(every) and i % every == 0},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}],
                              "allocatable": {"nvidia.com/gpu": str(n.gpu_count)}}}
                  for i, n in enumerate(topology.nodes))
    return ClusterState(nodes, ())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--cordoned", type=float, default=0.1, help="share of nodes cordoned")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    topo = build_cluster(368, 16, 8, 8, 18)
    program = build_dag_workload(random.Random(SEED), args.jobs)

    def preview() -> Any:
        plan, _ = make_plan(program, topo)
        return plan, render(program, plan, "a" * 40, VERSION, topology=topo.topology)
    (plan, rendered), base_s = best(preview, args.repeat)

    def binder(every: int) -> LiveBinder:
        cluster = state(topo.topology, every)
        return LiveBinder(program, topo, plan, rendered, VERSION, lambda: cluster)
    every = round(1 / args.cordoned) if args.cordoned else 0
    changed = binder(every)
    whole, whole_s = best(lambda: changed.whole({}), args.repeat)
    waves = []
    for i, wave in enumerate(plan.waves):
        bound, s = best(lambda i=i: changed.bind_wave(i, {}), args.repeat)
        waves.append({"wave": i, "intents": len(wave), "moved": len(bound.changes), "blocked": len(bound.blocked),
                      "seconds": round(s, 3), "vs_preview": round(s / base_s, 3)})
    same = binder(0)
    _, same_s = best(lambda: (same.whole({}), [same.bind_wave(i, {}) for i in range(len(plan.waves))]), args.repeat)
    doc = {"jobs": args.jobs, "nodes": len(topo.topology.nodes), "cordoned_every": every,
           "objects": len(rendered.manifests), "preview_plan_and_render_s": round(base_s, 3),
           "whole": {"moved": len(whole.changes), "blocked": len(whole.blocked), "seconds": round(whole_s, 3),
                     "vs_preview": round(whole_s / base_s, 3)},
           "waves": waves,
           "unchanged_cluster_all_bindings_s": round(same_s, 4),
           "unchanged_vs_preview": round(same_s / base_s, 4)}
    path = write_results("bench_live_binding", doc)
    print(f"preview (plan + render) {base_s:.2f}s; whole {whole_s:.2f}s ({whole_s / base_s:.2f}x, "
          f"{len(whole.changes)} moved); waves " +
          ", ".join(f"{w['seconds']:.2f}s ({w['moved']} moved)" for w in waves) +
          f"; unchanged cluster {same_s:.4f}s ({same_s / base_s:.4f}x) -> {path}")
    # what was timed must be what is claimed: every intent bound in some wave, and on the
    # cluster that changed nothing the preview's binding kept as it is
    if sum(w["intents"] for w in waves) != args.jobs:
        raise SystemExit(f"the waves hold {sum(w['intents'] for w in waves)} intents, not {args.jobs}")
    kept = same.whole({})
    if kept.changes or kept.blocked:
        raise SystemExit(f"an unchanged cluster moved {len(kept.changes)} and blocked {len(kept.blocked)} intents")


if __name__ == "__main__":
    main()
