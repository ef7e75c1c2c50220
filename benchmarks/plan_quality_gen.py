"""Random planning instances for bench_plan_quality.py (issue 37), as plain data first.

An instance is a dict of lists and numbers (`make_instance`): nodes with their
GPUs, product and domains, tenants with weights and quotas, jobs with GPUs,
product, `within`, SLA class, duration and what they wait for.  The
independent checker (tests/plan_verify.py) and the lower bound read that data
only; `to_program` / `to_topology` turn it into the planner's input.  The same
seed gives the same instance in any checkout, so the previous commit's planner
(run in a child process) plans the very same instances.

Shapes (each drawn with 20-400 jobs on 4-64 nodes):

  chains     chains of 2-8 jobs per tenant, 1-8 GPUs a job: the critical path matters
  pipelines  each job waits for 0-2 of its tenant's last ten (fan-in and fan-out)
  nvl72      HGX nodes plus one NVL72 domain (18 trays of 4 GB200), 16- and
             32-GPU gangs `within nvlink` that only it can hold: the bottleneck
  quota      H100 and A100 nodes, tenants with tight quotas, half the jobs
             pinned to a product, all four SLA classes
  small      many 1-2 GPU jobs, short durations
  odd        3, 5, 6, 7, 12 and 24 GPUs, `within node` / `rack` / anywhere

Every job can run on an empty cluster within its tenant's quota: a refusal
would make the makespans of the policies incomparable.
"""

from __future__ import annotations

import random
from typing import Any

from intentc import ir
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix

SHAPES = ("chains", "pipelines", "nvl72", "quota", "small", "odd")
SLA_WEIGHTS = (("P0", 0.08), ("P1", 0.22), ("P2", 0.45), ("P3", 0.25))
TIERS = ("gold", "silver", "bronze")

Instance = dict[str, Any]


def _sla(rng: random.Random) -> str:
    return rng.choices([s for s, _ in SLA_WEIGHTS], [w for _, w in SLA_WEIGHTS])[0]


def _minutes(rng: random.Random, low: int, high: int) -> int:
    """A log-uniform duration in whole minutes, in seconds."""
    return int(round(low * (high / low) ** rng.random())) * 60


def _nodes(rng: random.Random, count: int, product: str = "H100-80GB", per_rack: int = 4,
           prefix: str = "hgx", zone: str = "z1") -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        name = f"{prefix}-{i:03d}"
        out.append({"name": name, "gpus": 8, "product": product, "zone": zone,
                    "rack": f"{prefix}-r{i // per_rack:02d}", "nvlink": name})
    return out


def _nvl72(clique: str = "nvl72-a") -> list[dict[str, Any]]:
    return [{"name": f"gb-{t:02d}", "gpus": 4, "product": "GB200", "zone": "zgb", "rack": clique,
             "nvlink": clique} for t in range(18)]


def make_instance(seed: int, shape: str) -> Instance:
    """The instance of `shape` for `seed` (plain data)."""
    rng = random.Random(f"{shape}-{seed}")
    jobs_n = rng.randint(20, 400)
    tenants: list[dict[str, Any]] = [{"name": f"t{k}", "tier": TIERS[k % 3], "quota": None}
                                     for k in range(rng.randint(2, 4))]
    nodes: list[dict[str, Any]]
    if shape == "nvl72":
        nodes = _nodes(rng, rng.randint(4, 46)) + _nvl72()
    elif shape == "quota":
        h = rng.randint(2, 32)
        nodes = _nodes(rng, h) + _nodes(rng, rng.randint(2, 32), "A100-80GB", prefix="a100", zone="z2")
    else:
        nodes = _nodes(rng, rng.randint(4, 64))
    total = sum(n["gpus"] for n in nodes)
    jobs: list[dict[str, Any]] = []
    recent: dict[str, list[str]] = {}
    chain_left: dict[str, int] = {}
    for i in range(jobs_n):
        tenant: str = rng.choice(tenants)["name"]
        job: dict[str, Any] = {"name": f"j{i:04d}", "tenant": tenant, "product": None, "within": None,
                               "sla": _sla(rng), "after": []}
        mine = recent.setdefault(tenant, [])
        if shape == "chains":
            job["gpus"] = rng.choice((1, 2, 4, 8))
            job["within"] = "node" if job["gpus"] > 1 else None
            job["duration"] = _minutes(rng, 10, 180)
            if mine and chain_left.get(tenant, 0) > 0:
                job["after"] = [mine[-1]]
                chain_left[tenant] -= 1
            else:
                chain_left[tenant] = rng.randint(1, 7)
        elif shape == "pipelines":
            job["gpus"] = rng.choice((1, 1, 2, 4, 8, 16))
            job["within"] = "node" if 1 < job["gpus"] <= 8 else ("rack" if job["gpus"] > 8 else None)
            job["duration"] = _minutes(rng, 5, 240)
            if mine and rng.random() < 0.6:
                job["after"] = sorted(set(rng.sample(mine[-10:], min(len(mine[-10:]), rng.choice((1, 1, 2))))))
        elif shape == "nvl72":
            if rng.random() < 0.12:
                job.update(gpus=rng.choice((16, 32)), product="GB200", within="nvlink",
                           duration=_minutes(rng, 60, 360))
            else:
                job["gpus"] = rng.choice((1, 1, 2, 4, 8))
                job["within"] = "node" if job["gpus"] > 1 else None
                job["duration"] = _minutes(rng, 10, 240)
            if mine and rng.random() < 0.3:
                job["after"] = [rng.choice(mine[-10:])]
        elif shape == "quota":
            job["gpus"] = rng.choice((1, 2, 4, 8))
            job["within"] = "node" if job["gpus"] > 1 else None
            if rng.random() < 0.5:
                job["product"] = rng.choice(("H100-80GB", "A100-80GB"))
            job["duration"] = _minutes(rng, 10, 600)
            if mine and rng.random() < 0.25:
                job["after"] = [rng.choice(mine[-10:])]
        elif shape == "small":
            job["gpus"] = rng.choice((1, 1, 1, 2))
            job["duration"] = _minutes(rng, 5, 90)
            if mine and rng.random() < 0.2:
                job["after"] = [rng.choice(mine[-10:])]
        else:                               # odd
            job["gpus"] = rng.choice((3, 5, 6, 7, 12, 24))
            job["within"] = "node" if job["gpus"] <= 8 else rng.choice(("rack", None))
            job["duration"] = _minutes(rng, 10, 300)
            if mine and rng.random() < 0.3:
                job["after"] = [rng.choice(mine[-10:])]
        mine.append(job["name"])
        jobs.append(job)
    if shape == "quota":
        for t in tenants:
            t["quota"] = max(8, rng.choice((8, 16, 24, 32)))
    else:
        for t in tenants:
            if rng.random() < 0.3:
                t["quota"] = max(32, total // rng.choice((2, 3, 4)))
    _fit(jobs, nodes, tenants)
    return {"shape": shape, "seed": seed, "nodes": nodes, "tenants": tenants, "jobs": jobs}


def _fit(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], tenants: list[dict[str, Any]]) -> None:
    """Shrink a job that could never run (no domain big enough, over its tenant's quota)."""
    quota = {t["name"]: t["quota"] for t in tenants}
    for job in jobs:
        while True:
            size = domain_capacity(nodes, job["product"], job["within"])
            q = quota[job["tenant"]]
            if job["gpus"] <= size and (q is None or job["gpus"] <= q):
                break
            job["gpus"] = max(1, job["gpus"] // 2)
            if job["gpus"] <= 8 and job["within"] in ("rack", "nvlink"):
                job["within"] = "node"


def domain_capacity(nodes: list[dict[str, Any]], product: str | None, within: str | None) -> int:
    """The most GPUs of `product` one domain at level `within` holds (anywhere: all of them)."""
    sums: dict[str, int] = {}
    for n in nodes:
        if product is not None and n["product"] != product:
            continue
        key = "*" if within is None else str(n["name"] if within == "node" else n[within])
        sums[key] = sums.get(key, 0) + n["gpus"]
    return max(sums.values(), default=0)


def instances(count_per_shape: int, first_seed: int = 0) -> list[Instance]:
    return [make_instance(seed, shape) for shape in SHAPES for seed in range(first_seed, first_seed + count_per_shape)]


def to_topology(inst: Instance) -> LoadedTopology:
    nodes = tuple(ir.TopologyNode(n["name"], n["gpus"], n["product"], "80Gi",
                                  domains=(("zone", n["zone"]), ("rack", n["rack"]), ("nvlink", n["nvlink"])))
                  for n in inst["nodes"])
    return LoadedTopology(ir.Topology("quality", ("zone", "rack", "nvlink", "node"), nodes),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))


def to_program(inst: Instance) -> ir.Program:
    tenants = tuple(ir.Tenant(t["name"], tier=t["tier"], quota_gpus=t["quota"]) for t in inst["tenants"])
    intents = []
    for j in inst["jobs"]:
        after = tuple(ir.Ref(a) for a in j["after"])
        intents.append(ir.Intent(
            j["name"], ir.Trigger("after" if after else "push", after=after), ir.Action("training", "img"),
            ir.Context(ir.Ref(j["tenant"])),
            ir.Constraints(gpus=ir.GpuRequest(j["gpus"], j["product"], None, j["within"], None), sla=j["sla"],
                           duration=f"{j['duration']}s")))
    return ir.Program(tenants=tenants, intents=tuple(intents))


def lower_bound(inst: Instance) -> int:
    """max(critical path, GPU-seconds over GPUs, per product the pinned GPU-seconds over that
    product's GPUs, per tenant with a quota its GPU-seconds over the quota): no schedule of
    the instance can end earlier."""
    finish: dict[str, int] = {}
    for j in inst["jobs"]:                          # jobs wait only for earlier jobs
        finish[j["name"]] = j["duration"] + max((finish[a] for a in j["after"]), default=0)
    bound = max(finish.values(), default=0)
    gpus_of: dict[str | None, int] = {None: sum(n["gpus"] for n in inst["nodes"])}
    for n in inst["nodes"]:
        gpus_of[n["product"]] = gpus_of.get(n["product"], 0) + n["gpus"]
    work: dict[str | None, int] = {}
    for j in inst["jobs"]:
        seconds = j["gpus"] * j["duration"]
        work[None] = work.get(None, 0) + seconds
        if j["product"] is not None:
            work[j["product"]] = work.get(j["product"], 0) + seconds
    for product, seconds in work.items():
        bound = max(bound, -(-seconds // gpus_of[product]))
    quota = {t["name"]: t["quota"] for t in inst["tenants"]}
    per_tenant: dict[str, int] = {}
    for j in inst["jobs"]:
        per_tenant[j["tenant"]] = per_tenant.get(j["tenant"], 0) + j["gpus"] * j["duration"]
    for tenant, seconds in per_tenant.items():
        if quota[tenant]:
            bound = max(bound, -(-seconds // quota[tenant]))     # its quota caps what it runs at once
    return bound
