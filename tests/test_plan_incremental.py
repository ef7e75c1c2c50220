"""The incremental planner (plan/incremental.py): an edit re-places only what it touches.

Checked with the planner's independent invariant checks (tests/plan_verify.py
via `_check_invariants`): no GPU given twice at overlapping times, none beyond
a node's GPUs, dependencies, gangs all or nothing, filters and `within`,
quotas at every instant, tenant peaks.  Beyond those, everything the plan
derives from placements (strategies, batch sizes, metrics) must equal what
the full planner's own functions compute from the incremental placements.
The critical path and the refused chain depend on the plan only through
what it refuses (`metrics.critical_paths`): they must be a full plan's
where that refuses the same intents.  It may not: the incremental planner
moves nothing untouched to make room, so it can place an intent the full
planner refuses (an edited `serve` queued behind a kept gang that the full
plan starts first, leaving the gang no room).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import networkx as nx
from hypothesis import assume, given
from hypothesis import strategies as st

from intentc import ir
from intentc.graph import digraph
from intentc.plan import metrics as plan_metrics
from intentc.plan.batch_size import size_batches
from intentc.plan.incremental import Fallback, PlanIndex, Replanned
from intentc.plan.model import Plan
from intentc.plan.planner import make_plan
from intentc.plan.strategy import decide
from intentc.policy import BUILTIN
from intentc.topology.load import LoadedTopology
from tests.test_plan_properties import PROPS, PRODUCTS, _check_invariants, programs, topologies

SERVE = ir.ActionKind.SERVE.value


def _index(program: ir.Program, topo: LoadedTopology) -> tuple[Plan, PlanIndex]:
    plan, _ = make_plan(program, topo)
    g, _ = digraph.build(program)
    return plan, PlanIndex(program, plan, g, topo, 0, BUILTIN)


def _edited(program: ir.Program, new: ir.Intent) -> ir.Program:
    return replace(program, intents=tuple(new if i.name == new.name else i for i in program.intents))


def _file_intents(program: ir.Program):  # type: ignore[no-untyped-def]
    return lambda f: [i for i in program.intents if i.span.file == f]


def _held_at_zero(plan: Plan, topo: LoadedTopology) -> int:
    held: dict[str, int] = {}
    for p in plan.placements:
        if p.start_s == 0:
            for a in p.allocations:
                held[a.node] = held.get(a.node, 0) + len(a.gpus)
    caps = {n.name: n.gpu_count for n in topo.topology.nodes}
    return sum(caps[n] - k for n, k in held.items() if 0 < k < caps[n])


def _check_derived(program: ir.Program, topo: LoadedTopology, plan: Plan) -> None:
    """What the plan derives from placements equals the full planner's functions on them
    (and, where the full plan refuses nothing, it places the same intents)."""
    full, _ = make_plan(program, topo)
    batches, _ = size_batches(program.intents, plan.placements, topo.topology)
    assert plan.batches == batches
    assert plan.strategies == decide(program.intents, plan.placements, topo.topology)
    m = plan.metrics
    _check_paths(program, plan, full)
    assert m.makespan_s == max((p.end_s for p in plan.placements if p.end_s is not None), default=0)
    assert m.queued == sum(p.start_s > p.ready_s for p in plan.placements)
    assert m.gpu_seconds == sum(p.gpu_count * (p.end_s - p.start_s) for p in plan.placements if p.end_s is not None)
    assert m.jobs_spanning_nvlink_domains == sum(p.interconnect == "network" for p in plan.placements)
    assert m.idle_gpus_on_used_nodes == _held_at_zero(plan, topo)
    assert m.jain_fairness == plan_metrics.jain_index(plan.tenants)
    requested: dict[str, int] = {}
    for i in program.intents:
        requested[i.tenant] = requested.get(i.tenant, 0) + max(i.gpu_count, 0)
    assert {s.tenant: s.requested_gpus for s in plan.tenants} == {t: requested.get(t, 0) for t in
                                                                  (s.tenant for s in plan.tenants)}
    if not full.unplaced:
        assert [p.intent for p in plan.placements] == sorted(p.intent for p in full.placements)


def _paths(plan: Plan) -> tuple[tuple[str, ...], int, tuple[str, ...], int]:
    m = plan.metrics
    return m.critical_path, m.critical_path_s, m.refused_path, m.refused_path_s


def _check_paths(program: ir.Program, plan: Plan, full: Plan) -> None:
    """The critical path over the intents `plan` runs and its longest refused chain: those
    of the one definition (`metrics.critical_paths`) over the edited program, and the full
    plan's own where it refuses the same intents."""
    g = digraph.dependencies(program)
    durations = {n: digraph.duration_seconds(i) for n, i in digraph.unique_intents(program).items()}
    refused = {u.intent for u in plan.unplaced}
    assert _paths(plan) == plan_metrics.critical_paths(list(nx.topological_sort(g)),
                                                       lambda n: tuple(g.predecessors(n)), durations, refused)
    if refused == {u.intent for u in full.unplaced}:
        assert _paths(plan) == _paths(full)


@st.composite
def edits(draw: st.DrawFn, program: ir.Program) -> ir.Intent:
    """A planner-affecting edit of one intent: GPU count, product, SLA, duration or kind."""
    old = draw(st.sampled_from(program.intents))
    c = old.constraints
    what = draw(st.sampled_from(["count", "product", "sla", "duration", "kind"]))
    if what == "count":
        n = draw(st.sampled_from([0, 1, 2, 4, 8]))
        gpus = None if n == 0 else replace(c.gpus, count=n) if c.gpus else ir.GpuRequest(n)
        c = replace(c, gpus=gpus)
    elif what == "product" and c.gpus is not None:
        c = replace(c, gpus=replace(c.gpus, product=draw(st.sampled_from((None,) + PRODUCTS))))
    elif what == "sla":
        c = replace(c, sla=draw(st.sampled_from([None, "P0", "P1", "P2", "P3"])))
    elif what == "duration":
        c = replace(c, duration=draw(st.sampled_from(["10m", "1h", "3h", "1d"])))
    else:
        return replace(old, action=replace(old.action, kind=draw(st.sampled_from(["batch", "training", SERVE]))))
    return replace(old, constraints=c)


@PROPS
@given(topologies(), programs(), st.data())
def test_an_incremental_plan_keeps_every_invariant(topo: LoadedTopology, program: ir.Program,
                                                   data: st.DataObject) -> None:
    plan, index = _index(program, topo)
    assume(not plan.unplaced)                 # a reload starts from a plan in force: nothing refused
    new = data.draw(edits(program))
    edited = _edited(program, new)
    got = index.replan([new], _file_intents(edited))
    assert index.plan is plan                 # replan leaves the index as it was
    full, _ = make_plan(edited, topo)
    if isinstance(got, Fallback):
        # only when the intent cannot be placed without moving others
        assert "no room" in got.reason, got
        return
    assert isinstance(got, Replanned)
    _check_invariants(edited, topo, got.plan)
    if got.plan.unplaced:
        # never placeable: refused as the full planner refuses it, with what waits for it
        refused = {(u.intent, u.reason, u.message) for u in got.plan.unplaced}
        assert refused <= {(u.intent, u.reason, u.message) for u in full.unplaced}
        _, full_diags = make_plan(edited, topo)
        errors = [d for d in got.diagnostics if d.code == "E0601"]
        assert errors and all(d in full_diags for d in errors)
        _check_paths(edited, got.plan, full)
        return
    _check_derived(edited, topo, got.plan)
    # every intent a full plan places is placed (the incremental one refuses nothing)
    assert {p.intent for p in got.plan.placements} >= {p.intent for p in full.placements}
    # only the edited intent and what waits for it moved
    before = {p.intent: p for p in plan.placements}
    moved = {p.intent for p in got.plan.placements if p != before[p.intent]}
    assert moved <= set(got.replaced) and new.name in got.replaced


def _applied(index: PlanIndex, program: ir.Program, data: st.DataObject,
             steps: int) -> Iterator[tuple[ir.Program, Replanned]]:
    """Up to `steps` drawn edits, each planned on `index` and applied to it: the edited
    program and the plan, until one falls back or refuses something."""
    for _ in range(steps):
        new = data.draw(edits(program))
        program = _edited(program, new)
        got = index.replan([new], _file_intents(program))
        if isinstance(got, Fallback) or got.plan.unplaced:
            return
        index.apply(got)
        yield program, got


@PROPS
@given(topologies(), programs(), st.data())
def test_edits_in_a_row_keep_the_index_in_step(topo: LoadedTopology, program: ir.Program,
                                               data: st.DataObject) -> None:
    """After `apply`, the index is that of the new plan: a second edit on top of it is
    as good as one on an index built from scratch."""
    plan, index = _index(program, topo)
    assume(not plan.unplaced)
    for program, got in _applied(index, program, data, 3):
        _check_invariants(program, topo, got.plan)
        _check_derived(program, topo, got.plan)
        g, _ = digraph.build(program)
        fresh = PlanIndex(program, got.plan, g, topo, 0, BUILTIN)
        assert (fresh.holds, fresh.total, fresh.ends, fresh.held0, fresh.used) == \
               (index.holds, index.total, index.ends, index.held0, index.used)
        assert {k: v for k, v in fresh.timeline.items() if v} == {k: v for k, v in index.timeline.items() if v}
        assert {k: v for k, v in fresh.by_domain.items() if v} == {k: v for k, v in index.by_domain.items() if v}
        assert (fresh.dist, fresh.prev) == (index.dist, index.prev)
        assert fresh._critical({}, {}) == index._critical({}, {}) == (got.plan.metrics.critical_path,
                                                                     got.plan.metrics.critical_path_s)


@PROPS
@given(topologies(), programs(), st.data())
def test_an_index_rebased_on_the_full_plan_equals_one_built_for_it(topo: LoadedTopology, program: ir.Program,
                                                                   data: st.DataObject) -> None:
    """The background full re-plan rebases the index in force (patched by incremental edits)
    on the full plan of the same program instead of building another: every part must be
    that of an index built from scratch for the full plan, and the next edit planned the same."""
    plan, index = _index(program, topo)
    assume(not plan.unplaced)
    done = list(_applied(index, program, data, 2))
    if len(done) < 2:
        return
    program = done[-1][0]
    full, _ = make_plan(program, topo)
    if full.unplaced:               # refused by the full planner: never swapped in
        return
    index.rebase(full)
    fresh = PlanIndex(program, full, digraph.dependencies(program), topo, 0, BUILTIN)
    assert index.plan is full
    for attr in ("holds", "total", "ends", "held0", "used", "wave", "preds", "succs", "producers", "consumers",
                 "dist", "prev", "terms", "intents", "exclusive"):
        assert getattr(index, attr) == getattr(fresh, attr), attr
    for attr in ("timeline", "by_domain"):
        assert {k: v for k, v in getattr(index, attr).items() if v} == \
               {k: v for k, v in getattr(fresh, attr).items() if v}, attr
    assert index._critical({}, {}) == fresh._critical({}, {})
    new = data.draw(edits(program))
    program = _edited(program, new)
    assert index.replan([new], _file_intents(program)) == fresh.replan([new], _file_intents(program))


@given(topologies(), programs())
@PROPS
def test_an_index_from_the_bare_dependency_graph_equals_one_from_the_full_graph(
        topo: LoadedTopology, program: ir.Program) -> None:
    """The Reloader builds the index from `digraph.dependencies` (no attributes, no findings):
    the index must be the one `digraph.build`'s graph gives."""
    plan, from_build = _index(program, topo)
    bare = digraph.dependencies(program)
    full, _ = digraph.build(program)
    assert list(bare.nodes) == list(full.nodes) and list(bare.edges) == list(full.edges)
    index = PlanIndex(program, plan, bare, topo, 0, BUILTIN)
    for attr in ("preds", "succs", "dist", "prev", "longest", "holds", "timeline", "ends", "used"):
        assert getattr(index, attr) == getattr(from_build, attr), attr


def test_what_waits_at_any_depth_for_a_refused_intent_is_not_placed() -> None:
    """j0 <- j1 <- j2; j0 edited to ask for a GPU the cluster does not have.  j1 was
    skipped as waiting for the refused j0, but j2 was placed after j1's old placement,
    so the plan both refused and placed it (found by the property above, CI run of stop 14)."""
    from intentc.topology.matrix import GpuMatrix

    def intent(name: str, after: tuple[str, ...] = (), gpus: ir.GpuRequest | None = None) -> ir.Intent:
        return ir.Intent(name=name, trigger=ir.Trigger(kind="after" if after else "push",
                                                       after=tuple(ir.Ref(a) for a in after), schedule=None),
                         action=ir.Action(kind="batch", image="img", command=(), model=None, settings=None,
                                          replicas=None, port=None),
                         context=ir.Context(tenant=ir.Ref(name="t0"), tags=(), drift=None),
                         constraints=ir.Constraints(cpu=None, memory=None, gpus=gpus, sla=None, tolerance=None,
                                                    duration=None, slack=None, retries=None, fallback=None),
                         consumes=(), produces=(), clusters=None)

    node = ir.TopologyNode(name="n0", gpu_count=0, gpu_product="H100-80GB", gpu_memory="81559Mi", cpu=None,
                           memory=None, domains=(), labels=(), nvidia_smi_topo=None, taints=())
    topo = LoadedTopology(topology=ir.Topology(name="none", levels=("node",), nodes=(node,)),
                          matrices=(("n0", GpuMatrix(gpus=(), links=(), nics=(), nic_links=())),))
    tenant = ir.Tenant(name="t0", tier=None, weight=None, quota_gpus=None, quota_cpu=None, quota_memory=None,
                       group=None, drift=None, max_sla=None)
    program = ir.Program(tenants=(tenant,), datasets=(),
                         intents=(intent("j0"), intent("j1", ("j0",)), intent("j2", ("j1",))), topologies=())
    plan, index = _index(program, topo)
    assert not plan.unplaced
    new = intent("j0", gpus=ir.GpuRequest(count=1, product=None, memory=None, within=None, prefer=None))
    edited = _edited(program, new)
    got = index.replan([new], _file_intents(edited))
    assert isinstance(got, Replanned)
    full, _ = make_plan(edited, topo)
    assert {u.intent for u in got.plan.unplaced} == {u.intent for u in full.unplaced} == {"j0", "j1", "j2"}
    assert not got.plan.placements
    _check_invariants(edited, topo, got.plan)
