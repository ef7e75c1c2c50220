"""A crowded plan: 10,000 GPU intents on 300 eight-GPU nodes, this tree against another.

    python benchmarks/bench_plan_crowded.py --baseline DIR [--intents 10000] [--repeat 3]

bench_plan_scale.py plans a workload sized to its cluster; here the cluster is
small for the work, as on a shared cluster in a busy week: bench_frontend's
repository (every intent asks for 1 to 8 GPUs, `after` chains, four tenants)
on bench_reload's topology (3 racks of 100 eight-GPU nodes, 2,400 GPUs).
Most intents queue, and every refusal at an instant may look for a node to
make room on (`plan/repack.make_room`) — the path this benchmark exists for.

Each tree (this one, and `--baseline`, another checkout such as the commit
before a change) plans the same checked program in a child process of its
own (`PYTHONPATH` = that tree), alternating, `--repeat` times; reported per
tree: the minimum CPU seconds of `make_plan` alone (`time.process_time`, the
parse not counted), a digest of plan.json and the diagnostics (the two trees
must agree: a speed-up may not change a plan), and the load average.
Writes benchmarks/results/bench_plan_crowded.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.proc import loadavg  # noqa: E402
from benchmarks.results import write_results  # noqa: E402

CHILD = """
import hashlib, json, sys, time
from intentc.pipeline import check
from intentc.plan.jsonio import plan_to_json
from intentc.plan.planner import make_plan
from intentc.topology.load import load_topology
checked = check([sys.argv[1]])
loaded, _ = load_topology(sys.argv[2])
start = time.process_time()
plan, diags = make_plan(checked.program, loaded, 0)
cpu = time.process_time() - start
digest = hashlib.sha256(plan_to_json(plan).encode())
for d in diags:
    digest.update(repr((d.code, d.message, str(d.span), d.hint)).encode())
print(json.dumps({"cpu_s": round(cpu, 3), "digest": digest.hexdigest()[:16],
                  "placed": sum(1 for p in plan.placements if p.allocations), "unplaced": len(plan.unplaced)}))
"""


def plan_once(tree: Path, repo: Path, topology: Path) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONSAFEPATH="1", INTENTC_CACHE_DIR="")
    done = subprocess.run([sys.executable, "-c", CHILD, str(repo), str(topology)], env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout), load=loadavg())


def main() -> None:
    from benchmarks.bench_frontend import generate
    from benchmarks.bench_reload import topology_text
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="another intentc checkout")
    ap.add_argument("--intents", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo, topology = Path(tmp) / "repo", Path(tmp) / "topology.yaml"
        generate(repo, args.intents)
        topology.write_text(topology_text())
        runs: dict[str, list[dict[str, object]]] = {"this": [], "baseline": []}
        for _ in range(args.repeat):
            for label, tree in (("this", ROOT), ("baseline", args.baseline.resolve())):
                runs[label].append(plan_once(tree, repo, topology))
                print(label, runs[label][-1], flush=True)
    best = {label: min(float(r["cpu_s"]) for r in rs) for label, rs in runs.items()}  # type: ignore[arg-type]
    digests = {str(r["digest"]) for rs in runs.values() for r in rs}
    doc = {"intents": args.intents, "nodes": 300, "baseline": str(args.baseline), "runs": runs,
           "cpu_s": best, "speedup": round(best["baseline"] / best["this"], 2), "same_plan": len(digests) == 1}
    write_results("bench_plan_crowded", doc)
    print(f"make_plan CPU, min of {args.repeat}: this {best['this']:.2f} s, baseline {best['baseline']:.2f} s "
          f"({doc['speedup']}x); same plan: {doc['same_plan']}")
    if len(digests) != 1:
        sys.exit("the two trees made different plans")


if __name__ == "__main__":
    main()
