"""A fleet compile: 50 clusters x 2,000 intents, against one process per cluster.

    python benchmarks/bench_fleet.py [--clusters 50] [--intents 2000]

The repository is benchmarks/bench_reload.py's (`make_repo`: bench_frontend's
intents, half DSL, half YAML, GPU requests on every 20th, a 300-node
topology).  Every 10th DSL intent selects clusters by label
(`clusters: { region: rK }`), every 10th YAML one by env (labels, not names:
the baseline's one-cluster directories know no other cluster's name).  --clusters
Cluster files share the topology; every third renders for Kueue, the rest
for the device plugin.

Measured (the parse cache off everywhere: INTENTC_CACHE_DIR=""):

* fleet: `intentc compile REPO --clusters DIR -o OUT` in one process (parse
  and check once, then plan and render per cluster);
* baseline: the same compile one cluster at a time, `intentc compile REPO
  --clusters DIR_k -o OUT_k` with a directory holding that cluster only, in
  --clusters separate processes, one after the other.

Both must write byte-identical trees (checked).  Reported: seconds of each
and baseline / fleet.  Writes benchmarks/results/bench_fleet.json.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_reload import make_repo  # noqa: E402
from benchmarks.results import write_results  # noqa: E402

SHA = "e" * 40
REGIONS = 5


def cluster_text(k: int, topology: Path) -> str:
    target = "kueue" if k % 3 == 0 else "device-plugin"
    return (f"apiVersion: intentc.dev/v1alpha1\nkind: Cluster\nmetadata: {{name: c{k:02d}}}\nspec:\n"
            f"  context: ctx-{k:02d}\n  topology: {topology}\n  target: {target}\n"
            f"  labels: {{region: r{k % REGIONS}, env: {'prod' if k % 2 else 'staging'}}}\n")


def add_selectors(jobs: list[Path]) -> int:
    picked = 0
    for i, path in enumerate(jobs):
        if i % 10:
            continue
        text = path.read_text()
        if path.suffix == ".intent":
            at = text.rstrip().rfind("}")
            path.write_text(text[:at] + f"  clusters: {{ region: r{i % REGIONS} }}\n}}\n")
        else:
            path.write_text(text.rstrip("\n") + f"\n  clusters: {{matchLabels: {{env: {'prod' if i % 20 else 'staging'}}}}}\n")
        picked += 1
    return picked


def run(args: list[str]) -> float:
    env = {**os.environ, "INTENTC_CACHE_DIR": ""}
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "intentc", *args], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"intentc {' '.join(args)} failed ({res.returncode}):\n{res.stdout[-1500:]}{res.stderr[-1500:]}")
    return time.perf_counter() - t


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=50)
    ap.add_argument("--intents", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        root = Path(tmp)
        repo, topology, jobs = make_repo(root, args.intents)
        selecting = add_selectors(jobs)
        fleet_dir = root / "clusters"
        fleet_dir.mkdir()
        for k in range(args.clusters):
            (fleet_dir / f"c{k:02d}.yaml").write_text(cluster_text(k, topology))
            one = root / "one" / f"c{k:02d}"
            one.mkdir(parents=True)
            (one / f"c{k:02d}.yaml").write_text(cluster_text(k, topology))
        fleet_s = run(["compile", str(repo), "--clusters", str(fleet_dir), "-o", str(root / "out"), "--commit", SHA])
        print(f"fleet: {args.clusters} clusters x {args.intents} intents ({selecting} with clusters:) "
              f"in one process: {fleet_s:.1f} s", flush=True)
        base_s = 0.0
        for k in range(args.clusters):
            base_s += run(["compile", str(repo), "--clusters", str(root / "one" / f"c{k:02d}"),
                           "-o", str(root / "base"), "--commit", SHA])
        identical = all(same_tree(root / "out" / f"c{k:02d}", root / "base" / f"c{k:02d}")
                        for k in range(args.clusters))
        manifests = sum(sum(1 for n in os.listdir(root / "out" / f"c{k:02d}" / "manifests") if n.endswith(".yaml"))
                        for k in range(args.clusters))      # not the Kustomization beside them
    doc = {"clusters": args.clusters, "intents": args.intents, "intents_with_clusters_field": selecting,
           "manifests_written": manifests, "fleet_one_process_s": round(fleet_s, 2),
           "baseline": "one `intentc compile --clusters` process per cluster, sequential",
           "baseline_s": round(base_s, 2), "ratio_baseline_over_fleet": round(base_s / fleet_s, 2),
           "outputs_identical": identical, "cpus": os.cpu_count()}
    path = write_results("bench_fleet", doc)
    print(f"baseline: {args.clusters} processes: {base_s:.1f} s; ratio {base_s / fleet_s:.2f}x; "
          f"{manifests} manifests; identical outputs: {identical}")
    print(f"wrote {path}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
