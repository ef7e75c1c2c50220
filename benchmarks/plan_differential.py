"""Differential check: does this tree's `make_plan` give the same bytes as another tree's?

A speed-up of the planner must not change a single plan (plan.json is a
user-visible output).  This runs the same deterministic set of workloads
through both trees, each in its own process (the baseline's `intentc` on
`PYTHONPATH`), and compares a digest per case of `plan_to_json` and the
diagnostics (code, severity, message, position, hint).

    python benchmarks/plan_differential.py --baseline /path/to/other/checkout [--cases N] [--big]

The cases: small random topologies and workloads like the property tests'
(levels, unlabelled domains, products, memory filters, quotas, `within` and
`prefer`, chains, serve, busy GPUs and unavailable nodes, seeds 0-3);
crowded HGX + NVLink-tray clusters where jobs get moved to make room; the
benchmark cluster and DAG workload at small scales with many seeds, quotas
scaled and fixed; and bench_plan_scale's four sizes (`--big`: also its
100,000-job row).  Exit status 1 when any case differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRODUCTS = ("H100-80GB", "A100-40GB", "GB200", "L40S")
MEMORY = {"H100-80GB": "81559Mi", "A100-40GB": "40Gi", "GB200": "186Gi", "L40S": None}
SCOPES = ("node", "nvlink", "rack", "zone")
LEVEL_SETS = (("zone", "rack", "nvlink", "node"), ("zone", "rack", "node"), ("rack", "nvlink", "node"),
              ("nvlink", "node"), ("zone", "node"), ("node",), ("zone", "rack", "nvlink"))


def _random_case(rng: random.Random):  # type: ignore[no-untyped-def]
    """A small random topology, workload and occupancy (the property tests' shapes, bigger)."""
    from intentc import ir
    from intentc.plan.model import Busy, Occupancy
    from intentc.topology.load import LoadedTopology
    from intentc.topology.matrix import GpuInfo, GpuMatrix, Link, LinkInfo

    def link() -> LinkInfo:
        if rng.random() < 0.5:
            return LinkInfo(Link.NVLINK, rng.randint(1, 18))
        return LinkInfo(rng.choice([x for x in Link if x is not Link.NVLINK]))

    levels = rng.choice(LEVEL_SETS)
    nodes, mats = [], []
    for i in range(rng.randint(1, 24)):
        gpus = rng.choice([0, 1, 2, 4, 4, 8, 8])
        product = rng.choice(PRODUCTS[:2] * 3 + PRODUCTS)
        path, domains = "", []
        for level in levels:
            if level == "node":
                continue
            label = rng.choice([None, "a", "a", "b", "b", "c"])
            if label is not None:
                path += label
                domains.append((level, f"{level}-{path}"))
        name = f"n{i}"
        nodes.append(ir.TopologyNode(name, gpus, product, MEMORY[product], domains=tuple(domains)))
        numa = [rng.randint(0, 1) for _ in range(gpus)]
        links = tuple((a, b, link()) for a in range(gpus) for b in range(a + 1, gpus))
        mats.append((name, GpuMatrix(tuple(GpuInfo(g, numa[g], None) for g in range(gpus)), links, (), ())))
    topo = LoadedTopology(ir.Topology("random", levels, tuple(nodes)), tuple(mats))
    tenants = tuple(ir.Tenant(f"t{i}", tier=rng.choice([None, "gold", "silver", "bronze"]),
                              weight=rng.choice([None, None, 1, 2, 3, 5]),
                              quota_gpus=rng.choice([None, None, 4, 8, 12, 24]))
                    for i in range(rng.randint(1, 4)))
    intents = []
    for i in range(rng.randint(1, 40)):
        count = rng.choice([0, 1, 1, 2, 3, 4, 8, 12, 16])
        req = None
        if count:
            req = ir.GpuRequest(count, product=rng.choice((None,) * 6 + PRODUCTS + ("h100-80gb", "B200")),
                                memory=rng.choice([None] * 6 + ["40Gi", "80Gi", "100Gi"]),
                                within=rng.choice([None, None, *SCOPES]), prefer=rng.choice([None, None, *SCOPES]))
        after = tuple(ir.Ref(f"j{j}") for j in sorted(rng.sample(range(i), min(i, rng.choice([0, 0, 1, 2])))))
        intents.append(ir.Intent(
            f"j{i}", ir.Trigger("after" if after else "push", after=after),
            ir.Action(rng.choice(["batch", "training", "serve", "inference"]), "img"),
            ir.Context(ir.Ref(rng.choice(tenants).name)),
            ir.Constraints(gpus=req, sla=rng.choice([None, "P0", "P1", "P2", "P3"]),
                           duration=rng.choice([None, "10m", "30m", "1h", "2h", "5h", "90s"]))))
    busy = tuple(Busy(n.name, tuple(sorted(rng.sample(range(n.gpu_count), rng.randint(1, n.gpu_count)))),
                      rng.choice([None, 600, 3600]))
                 for n in nodes if n.gpu_count and rng.random() < 0.15)
    down = frozenset(n.name for n in nodes if rng.random() < 0.05)
    return topo, ir.Program(tenants=tenants, intents=tuple(intents)), Occupancy(busy, down)


def _crowded_case(rng: random.Random):  # type: ignore[no-untyped-def]
    """HGX nodes and NVLink trays, more single-node jobs than fit (jobs get moved)."""
    from intentc import ir
    from intentc.plan.model import Occupancy
    from intentc.topology.load import LoadedTopology
    from intentc.topology.nvsmi import default_matrix
    nodes = [ir.TopologyNode(f"hgx-{i}", 8, "H100-80GB", MEMORY["H100-80GB"], domains=(("rack", "r1"),))
             for i in range(rng.randint(1, 4))]
    nodes += [ir.TopologyNode(f"tray-{i}", 4, "GB200", MEMORY["GB200"], domains=(("rack", "r2"), ("nvlink", "c1")))
              for i in range(rng.randint(1, 8))]
    topo = LoadedTopology(ir.Topology("crowded", ("rack", "nvlink", "node"), tuple(nodes)),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))
    intents = []
    for i in range(rng.randint(4, 40)):
        count = rng.choice([1, 1, 1, 2, 4, 8, 12])
        within = "nvlink" if count > 8 else rng.choice([None, "node"]) if count > 1 else None
        product = rng.choice([None, None, None, "H100-80GB"]) if count <= 8 else None
        intents.append(ir.Intent(
            f"j{i:02d}", ir.Trigger("push"), ir.Action(rng.choice(["batch"] * 5 + ["serve"]), "img"),
            ir.Context(ir.Ref(rng.choice(["t1", "t2"]))),
            ir.Constraints(gpus=ir.GpuRequest(count, product, None, within, None),
                           sla=rng.choice(["P0", "P1", "P2", "P3"]),
                           duration=rng.choice(["10m", "30m", "1h", "2h", "5h"]))))
    quota = rng.choice([None, 8, 16])
    return topo, ir.Program(tenants=(ir.Tenant("t1", quota_gpus=quota), ir.Tenant("t2")),
                            intents=tuple(intents)), Occupancy()


def cases(n: int, big: bool) -> Iterator[tuple[str, object, object, object, int]]:
    """(case id, topology, program, occupancy, seed), the same sequence in every tree."""
    from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload, build_workload
    from intentc.plan.model import Occupancy
    for i in range(n):
        rng = random.Random(i)
        topo, program, occ = _random_case(rng)
        yield f"random-{i}", topo, program, occ, i % 4
    for i in range(n // 2):
        topo, program, occ = _crowded_case(random.Random(10_000 + i))
        yield f"crowded-{i}", topo, program, occ, i % 3
    for i in range(n // 20):
        rng = random.Random(20_000 + i)
        scale = rng.choice([0.05, 0.1, 0.2])
        topo = build_cluster(max(1, round(368 * scale)), 16, 8, max(1, round(8 * scale)), 18)
        jobs = rng.choice([50, 150, 400])
        if i % 3 == 2:
            program = build_workload(rng, jobs=jobs)       # no DAG, serve included
        else:
            program = build_dag_workload(rng, jobs, scale if i % 3 == 0 else 1)
        yield f"bench-small-{i}", topo, program, Occupancy(), i % 2
    sizes = [(0.5, 1000), (1, 2000), (2, 4000), (4, 8000)] + ([(39, 100_000)] if big else [])
    for scale, jobs in sizes:
        topo = build_cluster(round(368 * scale), 16, 8, round(8 * scale), 18)
        for scaled in (True, False) if jobs < 100_000 else (True,):
            program = build_dag_workload(random.Random(SEED), jobs, scale if scaled else 1)
            yield f"bench-scale-{jobs}-{'scaled' if scaled else 'fixed'}", topo, program, Occupancy(), 0


def digests(n: int, big: bool) -> dict[str, str]:
    from intentc.plan.jsonio import plan_to_json
    from intentc.plan.planner import make_plan
    out = {}
    for name, topo, program, occ, seed in cases(n, big):
        plan, diags = make_plan(program, topo, seed, occ)  # type: ignore[arg-type]
        h = hashlib.sha256(plan_to_json(plan).encode())
        for d in diags:
            s = d.span
            h.update(repr((d.code, d.severity.value, d.message, s.file, s.line, s.column, d.hint)).encode())
        out[name] = h.hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, help="the other checkout (its intentc and benchmarks are imported)")
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--big", action="store_true", help="also the 100,000-job bench_plan_scale row (minutes)")
    ap.add_argument("--digests", action="store_true", help=argparse.SUPPRESS)   # the child's mode
    args = ap.parse_args()
    if args.digests:
        sys.path.insert(0, os.environ["PLAN_DIFF_ROOT"])
        print(json.dumps(digests(args.cases, args.big)))
        return
    if args.baseline is None:
        ap.error("--baseline is required")
    results = []
    for root in (args.baseline.resolve(), ROOT):
        env = dict(os.environ, PYTHONPATH=str(root), PLAN_DIFF_ROOT=str(root))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--digests", "--cases", str(args.cases)]
        done = subprocess.run(cmd + (["--big"] if args.big else []), env=env, cwd=root, check=True,
                              capture_output=True, text=True)
        results.append(json.loads(done.stdout))
    base, ours = results
    differ = sorted(k for k in base if base[k] != ours.get(k))
    print(f"{len(base)} cases, {len(differ)} differ" + (": " + ", ".join(differ[:20]) if differ else ""))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
