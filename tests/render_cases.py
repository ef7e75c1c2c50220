"""Hand-built programs and plans for renderer / compile / reconciler tests.

They exercise every rendering path (CPU-only, one node over NVLink, a
PCIe set crossing NUMA nodes, a multi-node gang with equal and unequal
GPU counts, serving) without depending on the planner's choices.
"""

from __future__ import annotations

from intentc import ir
from intentc.plan.model import BatchSizing, Metrics, NodeAllocation, Placement, Plan, TenantShare

SHA_A = "a" * 40
SHA_B = "b" * 40


def tenant(name: str, **kw: object) -> ir.Tenant:
    return ir.Tenant(name=name, **kw)  # type: ignore[arg-type]


def intent(name: str, tenant_name: str, kind: str = "batch", *, gpus: int = 0, sla: str | None = None,
           after: tuple[str, ...] = (), image: str = "ghcr.io/acme/job:1.0", **action: object) -> ir.Intent:
    trigger = ir.Trigger("after", tuple(ir.Ref(a) for a in after)) if after else ir.Trigger("push")
    settings = action.pop("settings", None)
    return ir.Intent(
        name=name, trigger=trigger,
        action=ir.Action(kind=kind, image=image, settings=settings, **action),  # type: ignore[arg-type]
        context=ir.Context(ir.Ref(tenant_name)),
        constraints=ir.Constraints(cpu="4", memory="16Gi", sla=sla,
                                   gpus=ir.GpuRequest(gpus, "H100-80GB") if gpus else None),
    )


def sample_program() -> ir.Program:
    tenants = (
        tenant("team-a", tier="gold", quota_gpus=32, quota_cpu="256", quota_memory="2Ti", group="team-a-devs"),
        tenant("team-b", tier="bronze"),
    )
    datasets = (ir.Dataset("corpus-raw", "s3://acme/corpus/raw"), ir.Dataset("corpus-tokens"))
    tok = ir.Intent(
        name="tokenize", trigger=ir.Trigger("push"),
        action=ir.Action("batch", "ghcr.io/acme/tokenizer:1.4", ("tok", "--in", "/data")),
        context=ir.Context(ir.Ref("team-a")), constraints=ir.Constraints(cpu="16", memory="64Gi"),
        consumes=(ir.Ref("corpus-raw"),), produces=(ir.Ref("corpus-tokens"),))
    embed = intent("embed", "team-a", "inference", gpus=8, sla="P1", after=("tokenize",), model="llama3-8b",
                   settings=ir.ModelSettings(ir.Batch(True, max=256), 4096, "retain", "bf16"))
    intents = (
        tok, embed,
        intent("train", "team-a", "training", gpus=16, sla="P0", after=("tokenize",)),
        intent("train-uneven", "team-a", "training", gpus=12, sla="P0", after=("tokenize",)),
        intent("pcie-job", "team-b", gpus=4, sla="P3"),
        intent("chat", "team-b", "serve", gpus=2, sla="P2", after=("embed",), replicas=1, port=8080),
    )
    return ir.Program(tenants, datasets, intents)


def _alloc(node: str, gpus: tuple[int, ...], link: str, numa: tuple[int, ...] = (0,),
           nics: tuple[str, ...] = ()) -> NodeAllocation:
    return NodeAllocation(node, gpus, numa, nics, link)


def sample_plan() -> Plan:
    eight = tuple(range(8))
    placements = (
        Placement("chat", "team-b", (_alloc("gpu-b1", (0, 1), "PIX"),), (("node", "gpu-b1"),), "pcie"),
        Placement("embed", "team-a", (_alloc("gpu-a1", eight, "NV18", (0, 1)),), (("nvlink", "nvl-1"),), "nvlink"),
        Placement("pcie-job", "team-b", (_alloc("gpu-b2", (0, 1, 4, 5), "SYS", (0, 1)),), (("node", "gpu-b2"),), "pcie"),
        Placement("tokenize", "team-a", (), ()),
        Placement("train", "team-a", (_alloc("gpu-a2", eight, "NV18", (0, 1), ("mlx5_0", "mlx5_1")),
                                      _alloc("gpu-a3", eight, "NV18", (0, 1), ("mlx5_0", "mlx5_1"))),
                  (("rack", "r1"), ("nvlink", None)), "network"),
        Placement("train-uneven", "team-a", (_alloc("gpu-a4", eight, "NV18", (0, 1), ("mlx5_0",)),
                                             _alloc("gpu-a5", (0, 1, 2, 3), "NV18", (0,), ("mlx5_2",))),
                  (("rack", "r1"), ("nvlink", None)), "network"),
    )
    return Plan(
        topology="sample",
        waves=(("pcie-job", "tokenize"), ("embed", "train", "train-uneven"), ("chat",)),
        placements=placements, unplaced=(),
        tenants=(TenantShare("team-a", 4, 32, 44, 44), TenantShare("team-b", 1, None, 6, 6)),
        metrics=Metrics(64, 50, 0, 2, 0.9, 7200),
        batches=(BatchSizing("embed", 256, 256, 1248, "as plan/batch_size.py would size it"),),
    )
