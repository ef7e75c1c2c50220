"""Placement rules, one test per rule, plus a golden plan.json for a small example."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentc import ir
from intentc.diagnostics import Span
from intentc.pipeline import check
from intentc.plan.gpuset import GpuChooser
from intentc.plan.jsonio import plan_to_json
from intentc.plan.metrics import jain_index
from intentc.plan.model import NodeAllocation, Placement, Plan, TenantShare
from intentc.plan.placer import Request
from intentc.plan.repack import Seated, _movers
from intentc.plan.planner import make_plan
from intentc.topology.load import LoadedTopology, load_topology
from intentc.topology.matrix import GpuInfo, GpuMatrix, Link, LinkInfo
from intentc.topology.nvsmi import default_matrix
from tests.golden_support import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "plan"
GPUS_SPAN = Span("jobs.intent", 7, 16, 7, 40)


# --------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------

def node(name: str, gpus: int = 8, product: str | None = "H100-80GB", memory: str | None = "80Gi",
         **domains: str) -> ir.TopologyNode:
    return ir.TopologyNode(name, gpus, product, memory, domains=tuple(domains.items()))


def loaded(*nodes: ir.TopologyNode, levels: tuple[str, ...] = ("zone", "rack", "nvlink", "node"),
           matrices: dict[str, GpuMatrix] | None = None) -> LoadedTopology:
    topo = ir.Topology("test", levels, tuple(nodes))
    mats = matrices or {}
    return LoadedTopology(topo, tuple((n.name, mats.get(n.name) or default_matrix(n.gpu_count, n.gpu_product))
                                      for n in nodes))


def job(name: str, tenant: str = "team-a", gpus: int = 1, product: str | None = None,
        memory: str | None = None, within: str | None = None, prefer: str | None = None,
        sla: str | None = None, duration: str | None = "1h", kind: str = "batch") -> ir.Intent:
    req = ir.GpuRequest(gpus, product, memory, within, prefer) if gpus else None
    constraints = ir.Constraints(gpus=req, sla=sla, duration=duration, spans=ir.FieldSpans.of({"gpus": GPUS_SPAN}))
    return ir.Intent(name, ir.Trigger("push"), ir.Action(kind, "img"), ir.Context(ir.Ref(tenant)),
                     constraints)


def serve(name: str, **kw: object) -> ir.Intent:
    """An open-ended intent: it holds its GPUs for the whole plan."""
    return job(name, kind="serve", duration=None, **kw)  # type: ignore[arg-type]


def queued(plan: Plan) -> list[str]:
    """Intents that wait for GPUs (or quota) after they are ready, by name."""
    return [p.intent for p in plan.placements if p.start_s > p.ready_s]


def program(*intents: ir.Intent, tenants: tuple[ir.Tenant, ...] = ()) -> ir.Program:
    return ir.Program(tenants=tenants, intents=intents)


def matrix(n: int, link: dict[tuple[int, int], LinkInfo], default: LinkInfo,
           numa: list[int] | None = None,
           nics: dict[str, list[int]] | None = None) -> GpuMatrix:
    gpus = tuple(GpuInfo(i, numa[i] if numa else 0, None) for i in range(n))
    links = tuple((i, j, link.get((i, j), default)) for i in range(n) for j in range(i + 1, n))
    nic_links = []
    for nic, near in (nics or {}).items():
        for g in range(n):
            nic_links.append((nic, g, LinkInfo(Link.PIX if g in near else Link.SYS)))
    return GpuMatrix(gpus, links, tuple(sorted(nics or {})), tuple(nic_links))


def gpus_of(plan: Plan, intent: str) -> dict[str, tuple[int, ...]]:
    p = plan.placement(intent)
    assert p is not None, f"{intent} was not placed: {plan.unplaced}"
    return {a.node: a.gpus for a in p.allocations}


NV18 = LinkInfo(Link.NVLINK, 18)
SYS = LinkInfo(Link.SYS)


# --------------------------------------------------------------------------
# Domain choice
# --------------------------------------------------------------------------

def test_best_fit_keeps_the_big_rack_whole() -> None:
    # r-a (4 nodes, 32 GPUs) sorts first; first-fit would put the 12-GPU job there
    # and leave no rack able to hold the 32-GPU job.
    nodes = [node(f"a{i}", zone="z", rack="r-a") for i in range(4)] + \
            [node(f"b{i}", zone="z", rack="r-b") for i in range(2)]
    plan, diags = make_plan(program(job("j1-small", gpus=12, within="rack"),
                                    job("j2-big", gpus=32, within="rack")), loaded(*nodes))
    assert not diags
    assert set(gpus_of(plan, "j1-small")) == {"b0", "b1"}
    assert set(gpus_of(plan, "j2-big")) == {"a0", "a1", "a2", "a3"}
    assert dict(plan.placement("j1-small").domains)["rack"] == "r-b"  # type: ignore[union-attr]


def test_small_jobs_stay_off_multi_node_nvlink_domains() -> None:
    # A 1-GPU job fits best (4 free) on a GB200 tray, but taking it would break the
    # 16-GPU NVLink domain; the HGX node is its own NVLink domain and is used instead.
    nodes = [node("hgx-1", zone="z", rack="r1")] + \
            [node(f"nvl-{i}", 4, "GB200", "186Gi", zone="z", rack="r2", nvlink="clique-1") for i in range(4)]
    plan, _ = make_plan(program(job("a-one", gpus=1), job("b-gang", gpus=16, within="nvlink")), loaded(*nodes))
    assert set(gpus_of(plan, "a-one")) == {"hgx-1"}
    gang = plan.placement("b-gang")
    assert gang is not None and gang.interconnect == "nvlink"
    assert dict(gang.domains)["nvlink"] == "clique-1"


def test_without_waiting_gangs_plain_best_fit_packs_the_trays() -> None:
    # No gang needs the NVLink domain, so nothing is kept whole: the 4-GPU tray is the
    # tighter fit and the 8-GPU node stays free for an 8-GPU job.
    nodes = [node("hgx-1", zone="z", rack="r1")] + \
            [node(f"nvl-{i}", 4, "GB200", "186Gi", zone="z", rack="r2", nvlink="clique-1") for i in range(4)]
    plan, _ = make_plan(program(job("a-one", gpus=1), job("b-eight", gpus=8, within="node")), loaded(*nodes))
    assert next(iter(gpus_of(plan, "a-one"))).startswith("nvl-")
    assert list(gpus_of(plan, "b-eight")) == ["hgx-1"]


def test_no_protection_for_a_gang_that_comes_too_late() -> None:
    # The 16-GPU gang is P3: by its turn the P2 jobs have taken 20 of the 24 GPUs,
    # so keeping the NVLink domain whole for it would only strand GPUs.
    nodes = [node("hgx-1", zone="z", rack="r1")] + \
            [node(f"nvl-{i}", 4, "GB200", "186Gi", zone="z", rack="r2", nvlink="clique-1") for i in range(4)]
    smalls = [job(f"s{i}", gpus=1) for i in range(12)] + [job("t-eight", gpus=8, within="node")]
    plan, _ = make_plan(program(*smalls, job("z-gang", gpus=16, within="nvlink", sla="P3")), loaded(*nodes))
    assert plan.placement("t-eight").start_s == 0  # type: ignore[union-attr]
    assert queued(plan) == ["z-gang"] and not plan.unplaced
    assert plan.placement("z-gang").start_s == 3600  # type: ignore[union-attr]
    assert plan.metrics.idle_gpus_on_used_nodes == 0


def test_a_single_node_job_moves_to_make_room_for_a_refused_one() -> None:
    # While the 12-GPU gang waits, the one-GPU job is kept off the NVLink trays and
    # lands on the HGX node; the 8-GPU job then finds 7 free GPUs there and 4 on a
    # tray.  Moving the one-GPU job to the tray makes room, and nothing is refused.
    nodes = [node("hgx-1", zone="z", rack="r1")] + \
            [node(f"t{i}", 4, "GB200", "186Gi", zone="z", rack="r2", nvlink="clique-1") for i in range(4)]
    intents = (job("a-one", gpus=1, sla="P0"), job("g-gang", gpus=12, within="nvlink", sla="P1"),
               job("c-eight", gpus=8, within="node", sla="P2"))
    plan, diags = make_plan(program(*intents), loaded(*nodes))
    assert not plan.unplaced and not diags
    assert list(gpus_of(plan, "c-eight")) == ["hgx-1"]
    [tray] = gpus_of(plan, "a-one")
    assert tray.startswith("t") and tray not in gpus_of(plan, "g-gang")


def test_no_move_when_the_movers_have_nowhere_to_go() -> None:
    # 11 GPUs are free, but the one-GPU job on the HGX node is pinned to H100 and no
    # other node has one: it cannot move, so the refusal stands and nothing changes.
    nodes = [node("hgx-1", zone="z", rack="r1"), node("a100-1", 4, "A100-40GB", "40Gi", zone="z", rack="r1")]
    intents = (serve("a-one", gpus=1, product="H100-80GB", sla="P0"), job("c-eight", gpus=8, within="node"))
    plan, _ = make_plan(program(*intents), loaded(*nodes))
    assert [(u.intent, u.reason) for u in plan.unplaced] == [("c-eight", "fragmentation")]
    assert gpus_of(plan, "a-one") == {"hgx-1": (0,)} and plan.metrics.gpus_allocated == 1


def test_single_gpu_jobs_pack_onto_the_fullest_node() -> None:
    nodes = [node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r")]
    plan, _ = make_plan(program(*(job(f"j{i}") for i in range(9))), loaded(*nodes))
    used = [n for p in plan.placements for n in p.nodes]
    assert used.count("n1") == 8 and used.count("n2") == 1
    assert plan.metrics.idle_gpus_on_used_nodes == 7


def test_multi_node_gang_takes_whole_nodes_then_the_tightest_rest() -> None:
    nodes = [node(n, zone="z", rack="r") for n in ("n1", "n2", "n3")]
    # n3 keeps 5 free after the 3-GPU job (best fit is any empty node; name breaks the tie... n1)
    plan, _ = make_plan(program(job("a-three", gpus=3), job("b-twelve", gpus=12, within="rack")),
                        loaded(*nodes))
    first = gpus_of(plan, "a-three")
    assert list(first) == ["n1"]
    gang = gpus_of(plan, "b-twelve")
    # one whole node (8) and 4 GPUs on the partly used n1 (5 free): the tightest that holds 4
    assert sorted(len(g) for g in gang.values()) == [4, 8]
    assert len(gang.get("n1", ())) == 4


def test_within_node_and_gang_all_or_nothing() -> None:
    nodes = [node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r")]
    plan, diags = make_plan(program(job("a", gpus=6), job("b", gpus=6), job("c", gpus=6, within="node")),
                            loaded(*nodes))
    assert not diags and not plan.unplaced
    # 4 GPUs are free (2 + 2) but no node has 6: c gets nothing, not 4, until a ends
    c = plan.placement("c")
    assert c is not None and c.start_s == 3600 and c.gpu_count == 6 and len(c.nodes) == 1
    assert queued(plan) == ["c"] and plan.metrics.gpus_allocated == 12


def test_prefer_falls_back_with_a_warning() -> None:
    nodes = [node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r")]
    plan, diags = make_plan(program(job("a", gpus=12, prefer="node")), loaded(*nodes))
    assert plan.placement("a") is not None and plan.placement("a").gpu_count == 12  # type: ignore[union-attr]
    [d] = diags
    assert d.code == "W0601" and not d.is_error
    assert d.message == ("12 GPUs prefers one node domain, but the largest node domain has 8 GPUs; "
                         "placed across one rack")
    assert d.hint is not None and "drop `prefer node`" in d.hint


def test_prefer_unmet_for_lack_of_room_suggests_within() -> None:
    nodes = [node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r")]
    intents = (serve("a1", gpus=6), serve("a2", gpus=6), job("b", gpus=4, prefer="node", sla="P3"))
    plan, diags = make_plan(program(*intents), loaded(*nodes))
    assert plan.placement("b") is not None
    [d] = diags
    assert "no node domain had 4 free GPUs when it started; placed across one rack instead" in d.message
    assert d.hint is not None and "within node" in d.hint


def test_prefer_met_gives_no_warning_and_default_is_tightest() -> None:
    nodes = [node("n1", zone="z", rack="r1"), node("n2", zone="z", rack="r2")]
    plan, diags = make_plan(program(job("a", gpus=4, prefer="rack"), job("b", gpus=4)), loaded(*nodes))
    assert not diags
    assert list(gpus_of(plan, "a")) == list(gpus_of(plan, "b")) == ["n1"]


def test_product_and_memory_filters() -> None:
    nodes = [node("a100", 8, "A100-40GB", "40Gi", zone="z", rack="r"),
             node("h100", 8, "H100-80GB", "81559Mi", zone="z", rack="r")]
    plan, _ = make_plan(program(job("big-mem", gpus=2, memory="80Gi"),
                                job("by-product", gpus=2, product="a100-40gb")), loaded(*nodes))
    assert list(gpus_of(plan, "big-mem")) == ["h100"]
    assert list(gpus_of(plan, "by-product")) == ["a100"]


# --------------------------------------------------------------------------
# Inside a node
# --------------------------------------------------------------------------

def test_gpu_set_maximises_nvlink_on_a_mixed_matrix() -> None:
    # GPUs 0-3 reach each other only over SYS; 4-7 are an NVLink quad.
    links = {(i, j): LinkInfo(Link.NVLINK, 4) for i in range(4, 8) for j in range(i + 1, 8)}
    m = matrix(8, links, SYS, numa=[0, 0, 0, 0, 1, 1, 1, 1])
    plan, _ = make_plan(program(job("quad", gpus=4)), loaded(node("n1", zone="z", rack="r"),
                                                             matrices={"n1": m}))
    p = plan.placement("quad")
    assert p is not None
    assert p.allocations[0].gpus == (4, 5, 6, 7)
    assert p.allocations[0].link == "NV4" and p.interconnect == "nvlink"


def test_gpu_set_prefers_more_bonded_links() -> None:
    links = {(0, 1): LinkInfo(Link.NVLINK, 2), (2, 3): LinkInfo(Link.NVLINK, 12),
             (0, 2): LinkInfo(Link.NVLINK, 2)}
    m = matrix(4, links, LinkInfo(Link.PHB))
    chooser = GpuChooser()
    t = chooser.table_id(m, 4)
    assert chooser.choose(t, 0b1111, 2).gpus == (2, 3)
    assert chooser.choose(t, 0b0111, 2).gpus == (0, 1)          # 3 is taken: NV2 beats PHB
    assert chooser.choose(t, 0b1111, 1).link == "X"


def test_gpu_set_keeps_numa_alignment() -> None:
    # Uniform NVSwitch links, GPUs interleaved over two NUMA nodes: "first free 4" would
    # take 0-3 across both; the aligned set is the even GPUs.
    m = matrix(8, {}, NV18, numa=[0, 1, 0, 1, 0, 1, 0, 1])
    plan, _ = make_plan(program(job("four", gpus=4)), loaded(node("n1", zone="z", rack="r"),
                                                             matrices={"n1": m}))
    a = plan.placement("four").allocations[0]  # type: ignore[union-attr]
    assert a.gpus == (0, 2, 4, 6) and a.numa_nodes == (0,)


def test_gpu_set_shares_the_nearest_nic() -> None:
    m = matrix(4, {}, NV18, nics={"mlx5_0": [0, 3], "mlx5_1": [1, 2]})
    plan, _ = make_plan(program(job("pair", gpus=2)), loaded(node("n1", 4, zone="z", rack="r"),
                                                             matrices={"n1": m}))
    a = plan.placement("pair").allocations[0]  # type: ignore[union-attr]
    assert a.gpus == (0, 3) and a.nics == ("mlx5_0",)


def test_gpu_set_leaves_the_rest_aligned() -> None:
    m = matrix(8, {}, NV18, numa=[0, 0, 0, 0, 1, 1, 1, 1])
    plan, _ = make_plan(program(job("a-one"), job("b-three", gpus=3)),
                        loaded(node("n1", zone="z", rack="r"), matrices={"n1": m}))
    assert gpus_of(plan, "a-one") == {"n1": (0,)}
    assert gpus_of(plan, "b-three") == {"n1": (1, 2, 3)}      # NUMA 1 stays whole


# --------------------------------------------------------------------------
# Admission order
# --------------------------------------------------------------------------

def test_sla_class_goes_first_whatever_the_name() -> None:
    plan, _ = make_plan(program(job("aaa-batch", "t1", gpus=8), job("zzz-urgent", "t2", gpus=8, sla="P0")),
                        loaded(node("n1", zone="z", rack="r")))
    assert plan.placement("zzz-urgent").start_s == 0  # type: ignore[union-attr]
    assert queued(plan) == ["aaa-batch"] and plan.placement("aaa-batch").start_s == 3600  # type: ignore[union-attr]


def test_smaller_gangs_first_within_a_tenant_and_class() -> None:
    # 8 GPUs for 12 asked: by name the 8-GPU "a-train" would go first and leave
    # no room for the other three; smaller first refuses one intent, not three.
    intents = (job("a-train", "t1", gpus=8), job("b-eval", "t1", gpus=1), job("c-eval", "t1", gpus=1),
               job("d-tune", "t1", gpus=2))
    plan, _ = make_plan(program(*intents), loaded(node("n1", zone="z", rack="r")))
    assert queued(plan) == ["a-train"]
    # ... but never across SLA classes: a P1 gang still beats P2 singles.
    urgent = (job("a-train", "t1", gpus=8, sla="P1"),) + intents[1:]
    plan, _ = make_plan(program(*urgent), loaded(node("n1", zone="z", rack="r")))
    assert queued(plan) == ["b-eval", "c-eval", "d-tune"]


def test_missing_sla_is_p2() -> None:
    plan, _ = make_plan(program(job("a-none", "t1", gpus=8), job("b-p3", "t1", gpus=8, sla="P3")),
                        loaded(node("n1", zone="z", rack="r")))
    assert queued(plan) == ["b-p3"]


def test_weighted_fair_share() -> None:
    tenants = (ir.Tenant("gold-team", tier="gold"), ir.Tenant("bronze-team", tier="bronze"),
               ir.Tenant("heavy", weight=6))
    intents = [job(f"g{i:02d}", "gold-team") for i in range(20)] + \
              [job(f"b{i:02d}", "bronze-team") for i in range(20)] + \
              [job(f"h{i:02d}", "heavy") for i in range(20)]
    nodes = [node(f"n{i}", zone="z", rack="r") for i in range(3)]     # 24 GPUs for 60 requests
    plan, _ = make_plan(program(*intents, tenants=tenants), loaded(*nodes))
    got: dict[str, int] = {}
    for p in plan.placements:
        if p.start_s == 0:
            got[p.tenant] = got.get(p.tenant, 0) + p.gpu_count
    # After 22 GPUs all three sit exactly at allocated/weight = 2 (2/1, 8/4, 12/6); the
    # last two go by name: bronze-team, then gold-team.
    assert got == {"bronze-team": 3, "gold-team": 9, "heavy": 12}
    weights = {t.tenant: t.weight for t in plan.tenants}
    assert weights == {"gold-team": 4, "bronze-team": 1, "heavy": 6}
    # everything runs in the end, each wave of 24 shared by weight among the tenants still waiting
    assert not plan.unplaced and plan.metrics.makespan_s == 3 * 3600


def test_quota_caps_a_tenant() -> None:
    tenants = (ir.Tenant("capped", quota_gpus=4),)
    plan, diags = make_plan(program(job("a", "capped", gpus=2), job("b", "capped", gpus=2),
                                    job("c", "capped", gpus=2), job("d", "capped", gpus=6), tenants=tenants),
                            loaded(node("n1", zone="z", rack="r")))
    # at every instant the tenant holds at most 4 GPUs: c waits for a or b, though 4 GPUs are idle
    assert queued(plan) == ["c"] and plan.placement("c").start_s == 3600  # type: ignore[union-attr]
    [share] = [t for t in plan.tenants if t.tenant == "capped"]
    assert share.allocated_gpus == 4
    # a gang bigger than the quota can never run
    [u] = plan.unplaced
    assert (u.intent, u.reason) == ("d", "quota")
    assert u.message == "cannot place 6 GPUs: tenant capped has a quota of 4 GPUs"
    assert [d.code for d in diags] == ["E0601"]


# --------------------------------------------------------------------------
# Why not: every reason, with its words and its span
# --------------------------------------------------------------------------

@pytest.mark.parametrize("intents, reason, message", [
    ([job("x", gpus=2, product="A100-80GB")], "no-product",
     'cannot place 2 × A100-80GB: no node of topology "test" has A100-80GB GPUs (it offers H100-80GB)'),
    ([job("x", gpus=2, product="H100-80GB", memory="141Gi")], "no-product",
     ("cannot place 2 × H100-80GB with at least 141Gi each: no H100-80GB node has 141Gi of memory per GPU "
      "(the most is 80Gi)")),
    ([job("x", gpus=16, product="H100-80GB", within="nvlink")], "no-domain",
     "cannot place 16 × H100-80GB within nvlink: the largest nvlink domain has 8 H100-80GB GPUs"),
    ([job("x", gpus=40)], "no-domain", "cannot place 40 GPUs: the cluster has 32 GPUs"),
    # the servers are of a higher class, so they start first in any order the planner tries
    # (with x first, both of these plans would place everything)
    ([serve("a", gpus=5, sla="P1"), serve("b", gpus=5, sla="P1"), serve("c", gpus=5, sla="P1"),
      serve("d", gpus=5, sla="P1"), job("x", gpus=8, within="rack")],
     "fragmentation",
     ("cannot place 8 GPUs within rack: 12 GPUs are free but no rack domain has 8 of them together "
      "(the most in one is 6) once every finite intent has ended (the rest are held open-ended)")),
    ([serve("a", gpus=8, sla="P1"), serve("b", gpus=8, sla="P1"), serve("c", gpus=8, sla="P1"),
      job("x", gpus=12)], "capacity",
     "cannot place 12 GPUs: only 8 of 32 GPUs are free once every finite intent has ended (the rest are "
     "held open-ended)"),
])
def test_unplaced_reasons(intents: list[ir.Intent], reason: str, message: str) -> None:
    nodes = [node(f"n{i}", zone="z", rack=f"r{i // 2}") for i in range(4)]
    plan, diags = make_plan(program(*intents), loaded(*nodes))
    unplaced = {u.intent: u for u in plan.unplaced}
    assert set(unplaced) == {"x"}, plan.unplaced
    assert (unplaced["x"].reason, unplaced["x"].message) == (reason, message)
    errors = [d for d in diags if d.code == "E0601"]
    assert [(d.message, d.span) for d in errors] == [(message, GPUS_SPAN)]
    assert errors[0].hint
    # the rest of the plan is still produced
    assert {p.intent for p in plan.placements} == {i.name for i in intents} - {"x"}


def test_cpu_only_intent_gets_an_empty_placement() -> None:
    plan, diags = make_plan(program(job("etl", gpus=0)), loaded(node("n1", zone="z", rack="r")))
    p = plan.placement("etl")
    assert p is not None and p.allocations == () and p.interconnect == "none"
    assert not diags


def test_node_without_labels_is_its_own_domain() -> None:
    nodes = [node("n1"), node("n2")]                  # no zone/rack/nvlink labels at all
    plan, _ = make_plan(program(job("x", gpus=16, within="rack")), loaded(*nodes))
    assert plan.unplaced[0].reason == "no-domain"
    plan, _ = make_plan(program(job("x", gpus=16)), loaded(*nodes))
    p = plan.placement("x")
    assert p is not None and p.interconnect == "network"
    assert plan.metrics.jobs_spanning_nvlink_domains == 1


def test_undeclared_level_maps_inward() -> None:
    # no rack level: `within rack` means the next declared level inside it (here the node)
    nodes = [node("n1", zone="z"), node("n2", zone="z")]
    plan, _ = make_plan(program(job("x", gpus=12, within="rack")), loaded(*nodes, levels=("zone", "node")))
    assert plan.unplaced[0].reason == "no-domain"
    plan, _ = make_plan(program(job("x", gpus=12, within="zone")), loaded(*nodes, levels=("zone", "node")))
    assert plan.placement("x") is not None


# --------------------------------------------------------------------------
# Metrics, seeds
# --------------------------------------------------------------------------

def test_jain_index() -> None:
    def share(t: str, w: int, req: int, got: int) -> TenantShare:
        return TenantShare(t, w, None, req, got)
    assert jain_index([share("a", 4, 10, 8), share("b", 1, 10, 2)]) == 1.0
    assert jain_index([share("a", 1, 10, 10), share("b", 1, 10, 0)]) == 0.5
    assert jain_index([share("a", 1, 10, 0), share("b", 1, 0, 0)]) == 1.0      # nobody got anything
    assert jain_index([share("a", 1, 10, 4), share("idle", 1, 0, 0)]) == 1.0   # no demand: left out


def test_seed_breaks_ties_differently_but_reproducibly() -> None:
    nodes = [node(f"n{i}", zone="z", rack="r") for i in range(8)]
    prog = program(job("a", gpus=8))
    first = {s: list(gpus_of(make_plan(prog, loaded(*nodes), seed=s)[0], "a")) for s in range(6)}
    assert first[0] == ["n0"]
    assert len({tuple(v) for v in first.values()}) > 1
    assert plan_to_json(make_plan(prog, loaded(*nodes), seed=3)[0]) == \
        plan_to_json(make_plan(prog, loaded(*nodes), seed=3)[0])


# --------------------------------------------------------------------------
# Golden: a small example read from files, as `intentc plan` would
# --------------------------------------------------------------------------

def test_golden_small_example(monkeypatch: pytest.MonkeyPatch) -> None:
    case = GOLDEN / "small"
    monkeypatch.chdir(case)                     # spans relative to the case, as in a repository
    topo, topo_diags = load_topology("cluster.yaml")
    assert topo is not None, topo_diags
    checked = check(["intents.yaml"])
    assert not checked.diagnostics, checked.diagnostics
    plan, diags = make_plan(checked.program, topo)
    assert_golden(case / "plan.json", plan_to_json(plan))
    lines = [f"{d.span}: {d.severity.value}[{d.code}]: {d.message}" for d in diags]
    assert_golden(case / "diagnostics.txt", "\n".join(lines) + "\n")


# --------------------------------------------------------------------------
# Issue 12 placement fixes
# --------------------------------------------------------------------------

def test_unpinned_job_leaves_the_scarce_product_to_the_job_pinned_to_it() -> None:
    # Equal fits (same links, only the product differs).  By name the unpinned job
    # would take the only H100 node at time 0; the pinned job, ready 10 minutes later
    # (too late to move the other one), would then wait an hour while the A100 node idles.
    nodes = [node("a-h100", zone="z", rack="r"), node("b-a100", product="A100-80GB", zone="z", rack="r")]
    same = default_matrix(8, "H100-80GB")
    pinned = job("p-h100", gpus=8, product="H100-80GB", within="node")
    pinned = ir.Intent(pinned.name, ir.Trigger("after", after=(ir.Ref("prep"),)), pinned.action, pinned.context,
                       pinned.constraints)
    intents = (job("u-any", gpus=8, within="node"), job("prep", gpus=0, duration="10m"), pinned)
    plan, _ = make_plan(program(*intents), loaded(*nodes, matrices={"a-h100": same, "b-a100": same}))
    assert gpus_of(plan, "u-any").keys() == {"b-a100"}
    assert gpus_of(plan, "p-h100").keys() == {"a-h100"}
    assert plan.placement("p-h100").start_s == 600 and not queued(plan)  # type: ignore[union-attr]


def test_repack_offers_every_minimal_set_of_moves_cheapest_first() -> None:
    # Occupants of 4, 2 and 1 GPUs, 3 more GPUs needed: the old rule offered only the
    # 4-GPU job (largest first); when it has nowhere to go, the 2 + 1 pair may.
    def seat(name: str, n: int) -> Seated:
        alloc = NodeAllocation("hgx-1", tuple(range(n)))
        return Seated(Request(name, "t", n, None, None, None, None), Placement(name, "t", (alloc,), ()))
    sets = _movers([seat("x-four", 4), seat("y-two", 2), seat("z-one", 1)], 3)
    assert [[s.placement.intent for s in chosen] for chosen in sets] == [["y-two", "z-one"], ["x-four"]]
    assert _movers([seat("x-four", 4)], 5) == [] and _movers([seat("x-four", 4)], 0) == []


def test_within_nvlink_on_a_node_without_nvlink_warns_at_the_clause() -> None:
    within_span = Span("jobs.intent", 7, 30, 7, 44)
    nodes = [node("pcie-1", 4, "L40S", "48Gi", zone="z", rack="r")]
    req = ir.GpuRequest(2, None, None, "nvlink", None, spans=ir.FieldSpans.of({"within": within_span}))
    intent = ir.Intent("x", ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("t")),
                       ir.Constraints(gpus=req, duration="1h", spans=ir.FieldSpans.of({"gpus": GPUS_SPAN})))
    all_sys = matrix(4, {}, SYS)
    plan, diags = make_plan(program(intent), loaded(*nodes, matrices={"pcie-1": all_sys}))
    [d] = diags
    assert d.code == "W0603" and not d.is_error and d.span == within_span
    assert "node pcie-1 has no NVLink between GPUs 0, 1 (weakest link SYS)" in d.message
    assert plan.placement("x").interconnect == "pcie"  # type: ignore[union-attr]
