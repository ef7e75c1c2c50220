"""Properties of the planner over random topologies and workloads (hypothesis).

Checked on every example, independently of how the planner works inside:
no GPU is given twice, no node beyond its GPUs, gangs are all-or-nothing,
required `within` scopes, product / memory filters and quotas hold, every
GPU intent is either placed or explained, and the plan is the same bytes
across runs and whatever the order of intents, tenants and nodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc import ir
from intentc.ir.quantity import parse_quantity
from intentc.plan.jsonio import plan_to_json, plan_to_obj
from intentc.plan.model import Plan
from intentc.plan.planner import make_plan
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuInfo, GpuMatrix, Link, LinkInfo
from intentc.topology.nvsmi import default_matrix
from tests.plan_verify import order_violations, over_capacity, overlaps

PRODUCTS = ("H100-80GB", "A100-40GB", "GB200", "L40S")
MEMORY = {"H100-80GB": "81559Mi", "A100-40GB": "40Gi", "GB200": "186Gi", "L40S": None}
SCOPES = ("node", "nvlink", "rack", "zone")
LEVEL_SETS = (("zone", "rack", "nvlink", "node"), ("zone", "rack", "node"), ("rack", "nvlink", "node"),
              ("nvlink", "node"), ("zone", "node"), ("node",), ("zone", "rack", "nvlink"))

LINKS = st.one_of(st.builds(lambda n: LinkInfo(Link.NVLINK, n), st.integers(1, 18)),
                  st.sampled_from([LinkInfo(x) for x in Link if x is not Link.NVLINK]))


@st.composite
def matrices(draw: st.DrawFn, n: int) -> GpuMatrix:
    numa = [draw(st.integers(0, 1)) for _ in range(n)]
    links = tuple((i, j, draw(LINKS)) for i in range(n) for j in range(i + 1, n))
    nics = ("mlx5_0", "mlx5_1") if n and draw(st.booleans()) else ()
    nic_links = tuple((nic, g, draw(st.sampled_from([LinkInfo(Link.PIX), LinkInfo(Link.SYS)])))
                      for nic in nics for g in range(n))
    return GpuMatrix(tuple(GpuInfo(i, numa[i], None) for i in range(n)), links, nics, nic_links)


@st.composite
def topologies(draw: st.DrawFn) -> LoadedTopology:
    levels = draw(st.sampled_from(LEVEL_SETS))
    count = draw(st.integers(1, 10))
    nodes, mats = [], []
    for i in range(count):
        gpus = draw(st.sampled_from([0, 1, 2, 4, 4, 8, 8]))
        product = draw(st.sampled_from(PRODUCTS[:2] * 3 + PRODUCTS))
        path = ""
        domains = []
        for level in levels:
            if level == "node":
                continue
            label = draw(st.sampled_from([None, "a", "a", "b", "b"]))   # None: unlabelled
            if label is not None:
                path = f"{path}{label}"
                domains.append((level, f"{level}-{path}"))
        name = f"n{i}"
        nodes.append(ir.TopologyNode(name, gpus, product, MEMORY[product], domains=tuple(domains)))
        mats.append((name, draw(matrices(gpus))))
    return LoadedTopology(ir.Topology("random", levels, tuple(nodes)), tuple(mats))


@st.composite
def programs(draw: st.DrawFn) -> ir.Program:
    tenant_names = [f"t{i}" for i in range(draw(st.integers(1, 4)))]
    tenants = tuple(ir.Tenant(
        t, tier=draw(st.sampled_from([None, "gold", "silver", "bronze"])),
        weight=draw(st.one_of(st.none(), st.integers(1, 5))),
        quota_gpus=draw(st.one_of(st.none(), st.integers(1, 24)))) for t in tenant_names)
    intents = []
    for i in range(draw(st.integers(1, 14))):
        count = draw(st.sampled_from([0, 1, 1, 2, 3, 4, 8, 12, 16]))
        req = None
        if count:
            req = ir.GpuRequest(
                count,
                product=draw(st.sampled_from((None,) * 6 + PRODUCTS + ("h100-80gb", "B200"))),
                memory=draw(st.sampled_from([None] * 6 + ["40Gi", "80Gi", "100Gi"])),
                within=draw(st.one_of(st.none(), st.sampled_from(SCOPES))),
                prefer=draw(st.one_of(st.none(), st.sampled_from(SCOPES))))
        after = (ir.Ref(f"j{i - 1}"),) if i and draw(st.booleans()) else ()
        intents.append(ir.Intent(
            f"j{i}", ir.Trigger("after" if after else "push", after=after),
            ir.Action(draw(st.sampled_from(["batch", "training", "serve"])), "img"),
            ir.Context(ir.Ref(draw(st.sampled_from(tenant_names)))),
            ir.Constraints(gpus=req, sla=draw(st.sampled_from([None, "P0", "P1", "P2", "P3"])))))
    return ir.Program(tenants=tenants, intents=tuple(intents))


def _effective_level(levels: tuple[str, ...], scope: str) -> str:
    """The documented rule: an undeclared scope level means the next declared one inside it."""
    inner_first = SCOPES[:SCOPES.index(scope) + 1][::-1]
    for s in inner_first:
        if s in levels:
            return s
    return "node"


def _held_at(plan: Plan, t: int, tenant: str | None = None) -> int:
    return sum(p.gpu_count for p in plan.placements
               if p.start_s <= t and (p.end_s is None or t < p.end_s) and tenant in (None, p.tenant))


def _check_invariants(program: ir.Program, topo: LoadedTopology, plan: Plan) -> None:
    nodes = {n.name: n for n in topo.topology.nodes}
    intents = {i.name: i for i in program.intents}
    tenants = {t.name: t for t in program.tenants}
    doc = plan_to_obj(plan)
    # never two intents on one GPU at overlapping times, never beyond the node's GPUs
    assert overlaps(doc) == []
    assert over_capacity(doc, {n: nodes[n].gpu_count for n in nodes}) == []
    after = {i.name: [r.name for r in i.trigger.after if r.name in intents] for i in program.intents}
    assert order_violations(doc, after) == []
    for p in plan.placements:
        intent = intents[p.intent]
        req = intent.constraints.gpus
        # gangs: all or nothing
        assert p.gpu_count == intent.gpu_count
        assert p.ready_s <= p.start_s and (p.end_s is None or p.start_s <= p.end_s)
        for a in p.allocations:
            assert a.gpus and list(a.gpus) == sorted(set(a.gpus))
        if req is None:
            assert p.allocations == () and p.interconnect == "none"
            continue
        used = [nodes[a.node] for a in p.allocations]
        if req.product:
            assert all((n.gpu_product or "").lower() == req.product.lower() for n in used)
        if req.memory:
            want = parse_quantity(req.memory)
            assert want is not None
            assert all(n.gpu_memory and parse_quantity(n.gpu_memory) >= want * Decimal("0.97")  # type: ignore[operator]
                       for n in used)
        if req.within:
            level = _effective_level(topo.topology.levels, req.within)
            if level == "node":
                assert len(used) == 1
            else:
                labels = {n.domain(level) for n in used}
                assert len(labels) == 1
                assert None not in labels or len(used) == 1       # unlabelled: a domain of its own
    placed = {p.intent for p in plan.placements}
    unplaced = {u.intent for u in plan.unplaced}
    assert not placed & unplaced
    assert placed | unplaced == set(intents)
    assert all(intents[u.intent].gpu_count > 0 or u.reason == "dependency" for u in plan.unplaced)
    instants = sorted({p.start_s for p in plan.placements})
    for share in plan.tenants:
        t = tenants.get(share.tenant)
        peak = max((_held_at(plan, i, share.tenant) for i in instants), default=0)
        if t is not None and t.quota_gpus is not None:
            assert peak <= t.quota_gpus           # quotas hold at every instant
        assert share.allocated_gpus == peak
    assert plan.metrics.gpus_allocated == max((_held_at(plan, i) for i in instants), default=0)
    assert plan.metrics.gpus_total == sum(max(n.gpu_count, 0) for n in nodes.values())
    assert 0 <= plan.metrics.jain_fairness <= 1


def _shuffled(program: ir.Program, topo: LoadedTopology, rng: random.Random) -> tuple[ir.Program, LoadedTopology]:
    def shuffle(xs: tuple) -> tuple:  # type: ignore[type-arg]
        out = list(xs)
        rng.shuffle(out)
        return tuple(out)
    t = topo.topology
    shuffled_topo = LoadedTopology(ir.Topology(t.name, t.levels, shuffle(t.nodes)), shuffle(topo.matrices))
    return ir.Program(shuffle(program.tenants), (), shuffle(program.intents)), shuffled_topo


PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(topologies(), programs(), st.integers(0, 3))
def test_invariants_hold(topo: LoadedTopology, program: ir.Program, seed: int) -> None:
    plan, diags = make_plan(program, topo, seed)
    _check_invariants(program, topo, plan)
    e0601 = [d for d in diags if d.code == "E0601"]
    # (identical messages at one span are reported once)
    assert {d.message for d in e0601} == {u.message for u in plan.unplaced}
    assert {u.reason for u in plan.unplaced} <= {"no-product", "quota", "no-domain", "fragmentation", "capacity",
                                                 "dependency"}


@PROPS
@given(topologies(), programs(), st.randoms(use_true_random=False), st.integers(0, 3))
def test_same_bytes_across_runs_and_orders(topo: LoadedTopology, program: ir.Program,
                                           rng: random.Random, seed: int) -> None:
    first = plan_to_json(make_plan(program, topo, seed)[0])
    assert plan_to_json(make_plan(program, topo, seed)[0]) == first
    shuffled_program, shuffled_topo = _shuffled(program, topo, rng)
    assert plan_to_json(make_plan(shuffled_program, shuffled_topo, seed)[0]) == first


@PROPS
@given(topologies(), programs())
def test_required_scope_is_never_loosened_by_a_preference(topo: LoadedTopology, program: ir.Program) -> None:
    plan, diags = make_plan(program, topo)
    for d in diags:
        if d.code == "W0601":
            assert not d.is_error
    # an intent with prefer only (no within) and enough room is never unplaced for its scope
    for u in plan.unplaced:
        intent = next(i for i in program.intents if i.name == u.intent)
        gpus = intent.constraints.gpus
        if gpus is not None and gpus.within is None:
            assert u.reason != "fragmentation"


# --------------------------------------------------------------------------
# Crowded mixed clusters: where jobs get moved to make room (plan/repack.py)
# --------------------------------------------------------------------------

def _crowded(pick: Callable[[list[Any]], Any], between: Callable[[int, int], int]) -> tuple[LoadedTopology, ir.Program]:
    """HGX nodes and NVL-style 4-GPU trays, more single-node jobs than fit."""
    nodes = [ir.TopologyNode(f"hgx-{i}", 8, "H100-80GB", MEMORY["H100-80GB"], domains=(("rack", "r1"),))
             for i in range(between(1, 3))]
    nodes += [ir.TopologyNode(f"tray-{i}", 4, "GB200", MEMORY["GB200"], domains=(("rack", "r2"), ("nvlink", "c1")))
              for i in range(between(1, 6))]
    topo = LoadedTopology(ir.Topology("crowded", ("rack", "nvlink", "node"), tuple(nodes)),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))
    intents = []
    for i in range(between(4, 24)):
        count = pick([1, 1, 1, 2, 4, 8, 12])
        within = "nvlink" if count > 8 else pick([None, "node"]) if count > 1 else None
        product = pick([None, None, None, "H100-80GB"]) if count <= 8 else None
        intents.append(ir.Intent(
            f"j{i:02d}", ir.Trigger("push"), ir.Action(pick(["batch"] * 5 + ["serve"]), "img"), ir.Context(ir.Ref(pick(["t1", "t2"]))),
            ir.Constraints(gpus=ir.GpuRequest(count, product, None, within, None),
                           sla=pick(["P0", "P1", "P2", "P3"]), duration=pick(["10m", "30m", "1h", "2h", "5h"]))))
    return topo, ir.Program(tenants=(ir.Tenant("t1"), ir.Tenant("t2")), intents=tuple(intents))


@st.composite
def crowded(draw: st.DrawFn) -> tuple[LoadedTopology, ir.Program]:
    return _crowded(lambda xs: draw(st.sampled_from(xs)), lambda lo, hi: draw(st.integers(lo, hi)))


@PROPS
@given(crowded(), st.randoms(use_true_random=False))
def test_invariants_hold_when_jobs_move(case: tuple[LoadedTopology, ir.Program], rng: random.Random) -> None:
    topo, program = case
    plan, _ = make_plan(program, topo)
    _check_invariants(program, topo, plan)
    shuffled_program, shuffled_topo = _shuffled(program, topo, rng)
    assert plan_to_json(make_plan(shuffled_program, shuffled_topo)[0]) == plan_to_json(plan)


def _admits(intent: ir.Intent, n: ir.TopologyNode) -> bool:
    """The documented filter, computed here: product (any case) and memory with 3 % slack."""
    req = intent.constraints.gpus
    if req is None or n.gpu_count <= 0:
        return False
    if req.product and (n.gpu_product or "").lower() != req.product.lower():
        return False
    if req.memory:
        want = parse_quantity(req.memory)
        return n.gpu_memory is not None and parse_quantity(n.gpu_memory) >= want * Decimal("0.97")  # type: ignore[operator]
    return True


def _fits(intent: ir.Intent, topo: LoadedTopology, plan: Plan, at: int, ignore: frozenset[str]) -> bool:
    """Could `intent` get its GPUs at time `at` if the intents in `ignore` held nothing?  By count
    inside one domain of its `within` level (the whole cluster without one), on the nodes its
    filter admits: the documented feasibility rule, computed from plan.json alone."""
    req = intent.constraints.gpus
    assert req is not None
    free = {n.name: n.gpu_count for n in topo.topology.nodes if _admits(intent, n)}
    for p in plan.placements:
        if p.intent in ignore or p.intent == intent.name or not (p.start_s <= at and (p.end_s is None or at < p.end_s)):
            continue
        for a in p.allocations:
            if a.node in free:
                free[a.node] -= len(a.gpus)
    level = _effective_level(topo.topology.levels, req.within) if req.within else None
    nodes = {n.name: n for n in topo.topology.nodes}
    groups: dict[str, int] = {}
    for name, f in free.items():
        key = "" if level is None else name if level == "node" else (nodes[name].domain(level) or "\0" + name)
        groups[key] = groups.get(key, 0) + f
    return any(f >= req.count for f in groups.values())


def _inversions(program: ir.Program, topo: LoadedTopology, plan: Plan) -> list[str]:
    """Lower-class intents whose GPUs kept a waiting higher-class one (waiting for GPUs, not for its
    own quota) from starting: at some instant while both hold / wait, the higher one would have
    fitted had the lower one not held its GPUs, and does not fit with them held."""
    intents = {i.name: i for i in program.intents}
    quota = {t.name: t.quota_gpus for t in program.tenants}
    rank = {p.intent: int(p.sla[1]) for p in plan.placements}
    by = {p.intent: p for p in plan.placements}
    instants = sorted({p.start_s for p in plan.placements} | {p.end_s for p in plan.placements if p.end_s is not None})
    out = []
    for x in plan.placements:
        if x.start_s == x.ready_s or not x.allocations:
            continue
        # a dependency that is a server makes x ready the moment it starts: what started at
        # that same instant before the server may have been decided before x was ready
        served = {by[r.name].start_s for r in intents[x.intent].trigger.after
                  if r.name in by and by[r.name].end_s is None}
        for y in plan.placements:
            if rank[y.intent] <= rank[x.intent] or not y.allocations or not x.ready_s <= y.start_s < x.start_s:
                continue
            if y.start_s == x.ready_s and y.start_s in served:
                continue
            until = x.start_s if y.end_s is None else min(y.end_s, x.start_s)
            for at in (i for i in instants if y.start_s <= i < until):
                q = quota.get(x.tenant)
                if q is not None and _held_at(plan, at, x.tenant) + x.gpu_count > q:
                    continue
                if _fits(intents[x.intent], topo, plan, at, frozenset({y.intent})) and \
                        not _fits(intents[x.intent], topo, plan, at, frozenset()):
                    out.append(f"{y.intent} ({y.sla}) held GPUs at {at} that {x.intent} ({x.sla}), waiting "
                               f"since {x.ready_s}, could have started on")
                    break
    return out


@PROPS
@given(crowded())
def test_a_lower_class_never_delays_a_higher_one(case: tuple[LoadedTopology, ir.Program]) -> None:
    """The README's rule, over random heterogeneous clusters (HGX nodes and NVLink trays, pinned and
    unpinned jobs, serve and finite ones): a higher class is never held back to make room for a lower one."""
    topo, program = case
    plan, _ = make_plan(program, topo)
    _check_invariants(program, topo, plan)
    assert _inversions(program, topo, plan) == []


@PROPS
@given(topologies(), programs(), st.integers(0, 3))
def test_no_sla_inversion_on_random_topologies(topo: LoadedTopology, program: ir.Program, seed: int) -> None:
    plan, _ = make_plan(program, topo, seed)
    assert _inversions(program, topo, plan) == []


def _reproducer() -> tuple[LoadedTopology, ir.Program]:
    """Issue 12: one 8-GPU H100 node and five 4-GPU GB200 trays in one NVLink domain."""
    nodes = [ir.TopologyNode("h100", 8, "H100-80GB", MEMORY["H100-80GB"], domains=(("rack", "r1"),))]
    nodes += [ir.TopologyNode(f"tray-{i}", 4, "GB200", MEMORY["GB200"], domains=(("rack", "r2"), ("nvlink", "c1")))
              for i in range(5)]
    topo = LoadedTopology(ir.Topology("repro", ("rack", "nvlink", "node"), tuple(nodes)),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))

    def intent(name: str, sla: str, count: int, product: str | None = None, within: str | None = None) -> ir.Intent:
        return ir.Intent(name, ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("t")),
                         ir.Constraints(gpus=ir.GpuRequest(count, product, None, within, None), sla=sla,
                                        duration="1h"))
    return topo, ir.Program(tenants=(ir.Tenant("t"),), intents=(
        intent("a", "P1", 4), intent("b", "P1", 4), intent("c", "P2", 4, "H100-80GB", "node"),
        intent("d", "P3", 8, None, "node"), intent("g", "P3", 12, None, "nvlink")))


@pytest.mark.parametrize("seed", range(6))
def test_issue_reproducer_places_c_before_d_takes_the_h100s(seed: int) -> None:
    topo, program = _reproducer()
    plan, diags = make_plan(program, topo, seed)
    assert not plan.unplaced and not [d for d in diags if d.is_error]
    c, d = plan.placement("c"), plan.placement("d")
    assert c is not None and d is not None
    assert c.start_s == 0 and c.nodes == ("h100",)
    assert d.start_s >= c.end_s  # type: ignore[operator]
    assert _inversions(program, topo, plan) == []


def test_a_gate_that_can_never_open_holds_nothing_back() -> None:
    """Found by hypothesis in CI: a P0 gang (8 GPUs within nvlink) waits behind an
    open-ended serve holding 1 of the node's 8 GPUs, so it can never start.  Its gate
    once held back an unconstrained 1-GPU serve with 7 GPUs free (refused as
    "fragmentation"); a waiting intent that can never start delays nobody."""
    node = ir.TopologyNode("n0", 8, "H100-80GB", MEMORY["H100-80GB"], domains=(("rack", "rack-b"),))
    topo = LoadedTopology(ir.Topology("gate", ("rack", "nvlink", "node"), (node,)),
                          (("n0", default_matrix(8, "H100-80GB")),))

    def intent(name: str, kind: str, count: int, sla: str | None, within: str | None,
               after: str | None = None) -> ir.Intent:
        trigger = ir.Trigger("after", (ir.Ref(after),)) if after else ir.Trigger("push")
        return ir.Intent(name, trigger, ir.Action(kind, "img"), ir.Context(ir.Ref("t")),
                         ir.Constraints(gpus=ir.GpuRequest(count, None, None, within, within), sla=sla))
    program = ir.Program(tenants=(ir.Tenant("t"),), intents=(
        intent("front", "serve", 1, "P0", "nvlink"),
        intent("gang", "training", 8, "P0", "nvlink", after="front"),
        intent("small", "serve", 1, None, None)))
    plan, _ = make_plan(program, topo)
    assert [u.intent for u in plan.unplaced] == ["gang"]
    assert plan.unplaced[0].reason == "capacity"
    small = plan.placement("small")
    assert small is not None and small.start_s == 0
