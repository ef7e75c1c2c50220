"""What the Kubernetes test bed costs: setup, control-plane start, 512 fake GPU nodes.

    python benchmarks/bench_testenv.py

Measured in one run, each figure next to its baseline:

* `hack/testenv/setup` on a warm cache (the second and every later run)
  against `true` (the cost of starting any process);
* control-plane start: etcd + kube-apiserver alone (what `kube_env` starts
  per test module), then with kube-controller-manager, kube-scheduler and
  kwok (`kube_cluster`), each until the API server answers `/readyz`;
* 512 fake GPU nodes (368 × 8 H100, 144 × 4 GB200, the plan benchmark's
  cluster) created from a Topology file and reported Ready by kwok, against
  creating the same number of ConfigMaps (the API server's write path alone);
* per-module overhead: start + stop of each fixture.

The cold build (first run of the setup script, no Go caches) is not
repeated here: it is measured by running `hack/testenv/setup` with an
empty `INTENTC_TESTENV_CACHE` and reported in the README.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results import write_results  # noqa: E402
from tests.kube_env import KubeEnv, assets_dir  # noqa: E402
from tests.kube_nodes import add_topology  # noqa: E402

SETUP = ROOT / "hack" / "testenv" / "setup"


def timed(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t


def topology_512(path: Path, nodes: int = 512) -> None:
    """The plan benchmark's 512-node shape: HGX racks of 8 × H100 and NVL72-style trays of 4 × GB200
    (`nodes` scales it down, in the same proportions, for the smoke test)."""
    hgx = nodes * 368 // 512
    lines = ["apiVersion: intentc.dev/v1alpha1", "kind: Topology", "metadata: {name: bench512}", "spec:",
             "  levels: [zone, rack, nvlink, node]", "  nodes:"]
    for i in range(hgx):
        lines += [f"    - name: hgx-{i:04d}", "      gpu: {product: H100-80GB, count: 8, memory: 80Gi}",
                  '      cpu: "192"', "      memory: 2Ti",
                  f"      domains: {{zone: z{i % 4}, rack: r{i // 16:03d}, nvlink: hgx-{i:04d}}}"]
    for i in range(nodes - hgx):
        lines += [f"    - name: gb200-{i:04d}", "      gpu: {product: GB200, count: 4, memory: 186Gi}",
                  '      cpu: "144"', "      memory: 1Ti",
                  f"      domains: {{zone: z9, rack: nvl{i // 18:02d}, nvlink: nvl{i // 18:02d}}}"]
    path.write_text("\n".join(lines) + "\n")


def ready_nodes(env: KubeEnv) -> int:
    """Nodes whose Ready condition is True."""
    listed = json.loads(env.kubectl_run("get", "nodes", "-o", "json").stdout)
    return sum(1 for n in listed["items"]
               if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", [])))


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=512, help="fake GPU nodes created (and as many ConfigMaps)")
    args = ap.parse_args()
    assets = assets_dir()
    if assets is None:
        print("needs KUBEBUILDER_ASSETS (run hack/testenv/setup)", file=sys.stderr)
        return 2
    doc: dict[str, object] = {}
    runs = [timed(lambda: subprocess.run([str(SETUP)], capture_output=True, check=True)) for _ in range(3)]
    base = [timed(lambda: subprocess.run(["true"], check=True)) for _ in range(3)]
    doc["setup_cached_s"] = {"intentc": min(runs), "baseline_true": min(base)}

    with tempfile.TemporaryDirectory() as tmp:
        for name, components in (("kube_env", ()), ("kube_cluster", ("controller-manager", "scheduler", "kwok"))):
            env = KubeEnv(assets, Path(tmp) / name, components)
            start = timed(env.start)
            stop = timed(env.stop)
            doc[f"{name}_start_s"] = round(start, 2)
            doc[f"{name}_stop_s"] = round(stop, 2)

        env = KubeEnv(assets, Path(tmp) / "nodes", ("controller-manager", "scheduler", "kwok"))
        env.start()
        try:
            topo = Path(tmp) / "bench512.yaml"
            topology_512(topo, args.nodes)
            nodes = timed(lambda: add_topology(env, str(topo), timeout=600))
            ready = ready_nodes(env)
            cms = {"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default"},
                 "data": {"k": "v"}} for i in range(args.nodes)]}
            baseline = timed(lambda: env.kubectl_run("create", "-f", "-", input=json.dumps(cms), timeout=600))
            key = "nodes_512_ready_s" if args.nodes == 512 else f"nodes_{args.nodes}_ready_s"
            doc[key] = {"intentc_testbed": round(nodes, 2), "nodes_ready": ready,
                        f"baseline_{args.nodes}_configmaps_s": round(baseline, 2), "ratio": round(nodes / baseline, 2)}
        finally:
            env.stop()
    out = write_results("bench_testenv", doc)
    print(json.dumps(doc, indent=2, sort_keys=True))
    print(f"wrote {out}")
    if ready != args.nodes:
        print(f"{ready} of {args.nodes} nodes Ready: the time is not that of the nodes it claims", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
