"""A sharded inventory of 20,000 objects on the real API server, against the largest single ConfigMap.

    python benchmarks/bench_inventory.py [--objects 20000] [--repeat 3]

Needs the test bed (KUBEBUILDER_ASSETS, tests/kube_env.py): one etcd +
kube-apiserver.  For --objects entries (Jobs across 40 namespaces, as
tests/test_inventory_shards.py builds them) it times, best of --repeat:

* write: `inventory_store.write` of a fresh inventory (encode, shards, index);
* read: `inventory_store.read` (GET the index, one LIST of the shards, digests,
  schema check, decode);
* update: one entry changed and written again (only its shard and the index go out).

Baseline, same run, same server: the largest inventory one ConfigMap holds
(the entry count found by bisection so that `configmaps()` still returns one
object, gzipped under `SHARD_BUDGET`), written and read the same way.
Reported: seconds, per-entry microseconds and the ratio sharded/single per
entry (1.0 = sharding costs nothing per entry), and each shard's size.

Writes benchmarks/results/bench_inventory.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results import write_results  # noqa: E402
from intentc.kube.client import KubeClient  # noqa: E402
from intentc.reconcile import inventory_store  # noqa: E402
from intentc.reconcile.inventory import Entry, Inventory  # noqa: E402
from tests.kube_env import KubeEnv, assets_dir  # noqa: E402
from tests.test_inventory_shards import big_inventory  # noqa: E402


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def largest_single(target: str) -> int:
    lo, hi = 1000, 40_000          # one ConfigMap at lo, several at hi
    while hi - lo > 250:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(big_inventory(target, mid).configmaps()) == 1 else (lo, mid)
    return lo


def measure(c: KubeClient, inv: Inventory, repeat: int) -> dict[str, Any]:
    n = len(inv.entries)
    write_s, present = best(lambda: inventory_store.write(c, inv), repeat)
    read_s, stored = best(lambda: inventory_store.read(c, inv.target), repeat)
    assert stored.inventory == inv, "read back differs"
    one = inv.entries[n // 2]
    changed = inv.with_entries([Entry(one.ref, one.step, "f" * 64, one.commit, one.intent, one.tenant)])
    update_s, _ = best(lambda: inventory_store.write(c, changed, present), 1)
    sizes = [sum(len(v) for v in (b.get("binaryData") or {}).values()) * 3 // 4      # decoded bytes
             for b in inv.configmaps()]
    return {"objects": n, "configmaps": len(sizes), "bytes_per_configmap": sizes,
            "write_s": round(write_s, 3), "read_s": round(read_s, 3), "update_one_s": round(update_s, 3),
            "write_us_per_entry": round(write_s / n * 1e6, 1), "read_us_per_entry": round(read_s / n * 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    assets = assets_dir()
    if assets is None:
        print("needs the test bed: set KUBEBUILDER_ASSETS (hack/testenv/setup)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        env = KubeEnv(assets, Path(tmp) / "env").start()
        try:
            c = KubeClient.connect(str(env.kubeconfig))
            c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "intentc-system"}})
            single_n = largest_single("single")
            single = measure(c, big_inventory("single", single_n), args.repeat)
            sharded = measure(c, big_inventory("sharded", args.objects), args.repeat)
            c.close()
        finally:
            env.stop()
    ratio = {k: round(sharded[k] / single[k], 2) for k in ("write_us_per_entry", "read_us_per_entry")}
    doc = {"baseline": f"single ConfigMap at its largest ({single_n} objects)", "single": single,
           "sharded": sharded, "ratio_sharded_over_single_per_entry": ratio}
    path = write_results("bench_inventory", doc)
    print(f"single ConfigMap, {single_n} objects: write {single['write_s']} s, read {single['read_s']} s")
    print(f"sharded, {args.objects} objects in {sharded['configmaps']} ConfigMaps "
          f"({', '.join(f'{b // 1024} KiB' for b in sharded['bytes_per_configmap'])}): "
          f"write {sharded['write_s']} s, read {sharded['read_s']} s, one-entry update {sharded['update_one_s']} s")
    print(f"per entry, sharded / single: write {ratio['write_us_per_entry']}, read {ratio['read_us_per_entry']}")
    print(f"wrote {path}")
    if args.objects > single_n and sharded["configmaps"] < 2:
        print(f"{args.objects} objects fit one ConfigMap: the sharded inventory was not measured", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
