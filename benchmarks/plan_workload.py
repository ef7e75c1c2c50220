"""The benchmark cluster and the synthetic Alibaba-shaped workload (see bench_plan.py).

Shared by the baselines, the MILP and the scoring, so every policy sees the
very same nodes and jobs.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from intentc import ir
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuMatrix
from intentc.topology.nvsmi import default_matrix, parse

ROOT = Path(__file__).resolve().parent.parent
SEED = 20230
SIZES = (1, 2, 4, 8, 16, 32)
SIZE_WEIGHTS = (0.80, 0.09, 0.05, 0.04, 0.012, 0.008)
SLA = (("P0", 0.05), ("P1", 0.20), ("P2", 0.50), ("P3", 0.25))
SLA_CLASSES = tuple(s for s, _ in SLA)
TENANTS = (("ads", "gold", None), ("llm", "gold", 1200), ("search", "silver", None),
           ("vision", "silver", None), ("research", "bronze", 400), ("interns", "bronze", None))
HGX_TOPO = ROOT / "tests" / "fixtures" / "nvidia-smi" / "real-hgx-h100-xd670.txt"


def _hgx_matrix() -> GpuMatrix:
    matrix, diags = parse(HGX_TOPO.read_text(encoding="utf-8"), str(HGX_TOPO))
    if matrix is None:
        raise SystemExit(f"cannot parse {HGX_TOPO}: {diags}")
    return matrix


def build_cluster(hgx_nodes: int, hgx_per_rack: int, racks_per_zone: int,
                  gb_domains: int, gb_per_domain: int) -> LoadedTopology:
    hgx = _hgx_matrix()
    gb = default_matrix(4, "GB200")
    # (the HGX matrix object is shared by every HGX node, so GpuChooser builds its table once)
    nodes, mats = [], []
    for i in range(hgx_nodes):
        rack = i // hgx_per_rack
        zone = rack // racks_per_zone
        name = f"hgx-{i:03d}"
        nodes.append(ir.TopologyNode(name, 8, "H100-80GB", "81559Mi",
                                     domains=(("zone", f"z{zone + 1}"), ("rack", f"r{rack + 1:02d}"))))
        mats.append((name, hgx))
    for d in range(gb_domains):
        for t in range(gb_per_domain):
            name = f"gb-{_letters(d)}{t:02d}"
            clique = f"nvl72-{_letters(d)}"
            nodes.append(ir.TopologyNode(name, 4, "GB200", "189471Mi",
                                         domains=(("zone", "zgb"), ("rack", clique), ("nvlink", clique))))
            mats.append((name, gb))
    return LoadedTopology(ir.Topology("bench", ("zone", "rack", "nvlink", "node"), tuple(nodes)), tuple(mats))


def _letters(d: int) -> str:
    """a .. z, then ba, bb, ... (base 26), so clusters of any size get distinct domain names."""
    out = ""
    while True:
        d, r = divmod(d, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
        if d == 0:
            return out


def _intent(name: str, tenant: str, size: int, rng: random.Random) -> ir.Intent:
    product = within = prefer = None
    if size <= 8:
        within = "node" if size > 1 else None
        if rng.random() < 0.15:
            product = "H100-80GB"
    elif rng.random() < 0.5:
        within = "nvlink"
    else:
        within, prefer = "rack", "nvlink"
    sla = rng.choices([s for s, _ in SLA], [w for _, w in SLA])[0]
    kind = "training" if size >= 8 else rng.choice(["batch", "inference", "serve"])
    return ir.Intent(name, ir.Trigger("push"), ir.Action(kind, "img"), ir.Context(ir.Ref(tenant)),
                     ir.Constraints(gpus=ir.GpuRequest(size, product, None, within, prefer), sla=sla))


def build_workload(rng: random.Random, jobs: int | None = None, demand: int | None = None,
                   sizes: tuple[int, ...] = SIZES, weights: tuple[float, ...] = SIZE_WEIGHTS) -> ir.Program:
    """`jobs` jobs, or jobs until their GPUs reach `demand`."""
    tenants = tuple(ir.Tenant(n, tier=tier, quota_gpus=q) for n, tier, q in TENANTS)
    share = [4, 3, 2, 2, 1, 1]                      # tenants do not submit equally
    intents: list[ir.Intent] = []
    total = 0
    while (jobs is not None and len(intents) < jobs) or (demand is not None and total < demand):
        size = rng.choices(sizes, weights)[0]
        tenant = rng.choices([t[0] for t in TENANTS], share)[0]
        intents.append(_intent(f"job-{len(intents):04d}", tenant, size, rng))
        total += size
    return ir.Program(tenants=tenants, intents=tuple(intents))


def sla_of(intent: ir.Intent) -> str:
    return intent.constraints.sla or "P2"


# --------------------------------------------------------------------------
# Over time: a DAG workload with Alibaba-2023-shaped durations (bench_plan_time.py)
# --------------------------------------------------------------------------

# cluster-trace-gpu-v2023 job durations are heavy-tailed: most jobs run minutes to
# an hour, a tail runs many hours.  A log-normal with a 45-minute median and sigma
# 1.0 (clipped to 5 min .. 8 h) gives that shape; bigger gangs run longer
# (training), as in the trace.  Pipelines are short (at most 3 jobs deep), so the
# critical path stays within a working day and the GPUs, not one long chain,
# decide the makespan as far as possible with 2,000 jobs on 3,520 GPUs.
DURATION_MEDIAN_S = 2700
DURATION_SIGMA = 1.0
DEPENDS = 0.35          # share of jobs that wait for 1-2 earlier jobs of their tenant
MAX_DEPTH = 3           # jobs per pipeline at most


def _duration(rng: random.Random, size: int) -> int:
    seconds = rng.lognormvariate(0, DURATION_SIGMA) * DURATION_MEDIAN_S * (1 + size.bit_length() / 4)
    return int(min(max(seconds, 300), 8 * 3600)) // 60 * 60


def build_dag_workload(rng: random.Random, jobs: int, quota_scale: float = 1) -> ir.Program:
    """`jobs` finite GPU jobs (no serve: the benchmark measures a makespan), about a third
    of them in pipelines (`after` 1-2 recent jobs of the same tenant), each with a duration.
    `quota_scale` multiplies the tenants' GPU quotas (for the same workload per node on a
    bigger cluster)."""
    base = build_workload(rng, jobs=jobs)
    if quota_scale != 1:
        base = replace(base, tenants=tuple(
            replace(t, quota_gpus=round(t.quota_gpus * quota_scale)) if t.quota_gpus else t for t in base.tenants))
    recent: dict[str, list[str]] = {}
    depth: dict[str, int] = {}
    intents = []
    for intent in base.intents:
        earlier = [n for n in recent.setdefault(intent.tenant, [])[-20:] if depth[n] < MAX_DEPTH]
        after: tuple[ir.Ref, ...] = ()
        if earlier and rng.random() < DEPENDS:
            picks = sorted(set(rng.sample(earlier, min(len(earlier), rng.choice((1, 1, 2))))))
            after = tuple(ir.Ref(n) for n in picks)
        depth[intent.name] = 1 + max((depth[r.name] for r in after), default=0)
        kind = intent.action.kind if intent.action.kind != "serve" else "inference"
        c = intent.constraints
        intents.append(ir.Intent(
            intent.name, ir.Trigger("after" if after else "push", after=after), ir.Action(kind, "img"),
            intent.context, ir.Constraints(gpus=c.gpus, sla=c.sla,
                                           duration=f"{_duration(rng, intent.gpu_count)}s")))
        recent[intent.tenant].append(intent.name)
    return ir.Program(tenants=base.tenants, intents=tuple(intents))
