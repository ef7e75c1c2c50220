"""The incremental planner for edits that change the program's shape: dependency edges
(`after`, datasets consumed and produced), new and removed intents, tenants' terms.

Each edit kind is drawn on generated programs and topologies; the incremental plan
must keep every invariant of a full plan (tests/plan_verify.py via
`_check_invariants`, and dependencies in time over data edges too), its numbers
must equal those recomputed from scratch over its own placements (`_check_derived`,
plus waves and tenants' terms equal a full plan's), and what it refuses a full plan
refuses with the same E0601.  After `apply`, the index must equal one built from
scratch for the new plan, so edits in a row stay exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import networkx as nx
import pytest
from hypothesis import HealthCheck, assume, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from intentc import ir
from intentc.graph import digraph
from intentc.plan.incremental import Fallback, PlanIndex, Replanned
from intentc.plan.jsonio import plan_to_obj
from intentc.plan.model import Plan
from intentc.plan.planner import make_plan
from intentc.policy import BUILTIN
from intentc.topology.load import LoadedTopology
from tests.plan_verify import order_violations
from tests.test_plan_incremental import _check_derived, _file_intents, _index
from tests.test_plan_properties import PRODUCTS, SCOPES, _check_invariants, programs, topologies

CASES = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
DATASETS = tuple(f"d{k}" for k in range(15))


@dataclass(frozen=True)
class Shape:
    """One edit: the program after it, and what `replan` is told."""

    program: ir.Program
    edited: tuple[ir.Intent, ...] = ()
    removed: tuple[str, ...] = ()
    tenants: Mapping[str, ir.Tenant | None] = field(default_factory=dict)


def _refs(names: Sequence[str]) -> tuple[ir.Ref, ...]:
    return tuple(ir.Ref(n) for n in names)


def _with_after(intent: ir.Intent, after: Sequence[str]) -> ir.Intent:
    return replace(intent, trigger=ir.Trigger("after" if after else "push", after=_refs(after)))


def _replaced(program: ir.Program, changed: Sequence[ir.Intent], dropped: Sequence[str] = ()) -> ir.Program:
    by = {i.name: i for i in changed}
    kept = [by.pop(i.name, i) for i in program.intents if i.name not in dropped]
    return replace(program, intents=tuple(kept) + tuple(by.values()))


@st.composite
def data_programs(draw: st.DrawFn) -> ir.Program:
    """`programs()` with data edges: intent k may produce d<k> and consume what an earlier one
    produces (no cycle, as a program in force has none)."""
    program = draw(programs())
    intents = tuple(replace(i, consumes=_refs(draw(st.lists(st.sampled_from(DATASETS[:k]), max_size=1)) if k else []),
                            produces=_refs([DATASETS[k]] if draw(st.booleans()) else []))
                    for k, i in enumerate(program.intents))
    return replace(program, intents=intents)


@st.composite
def gpu_requests(draw: st.DrawFn) -> ir.GpuRequest | None:
    count = draw(st.sampled_from([0, 1, 2, 4, 8]))
    if not count:
        return None
    return ir.GpuRequest(count, product=draw(st.sampled_from((None,) * 4 + PRODUCTS)),
                         within=draw(st.one_of(st.none(), st.sampled_from(SCOPES))))


@st.composite
def edge_edits(draw: st.DrawFn, program: ir.Program) -> Shape:
    """An existing intent's `after` list, or the datasets it consumes or produces, changed."""
    names = [i.name for i in program.intents]
    old = draw(st.sampled_from(program.intents))
    what = draw(st.sampled_from(["after", "consumes", "produces"]))
    if what == "after":
        new = _with_after(old, draw(st.lists(st.sampled_from(names), max_size=3, unique=True)))
    else:
        pool = _unproduced(program) if what == "produces" and draw(st.booleans()) else []
        datasets = _refs(draw(st.lists(st.sampled_from(pool or DATASETS), max_size=2, unique=True)))
        new = replace(old, consumes=datasets) if what == "consumes" else replace(old, produces=datasets)
    return Shape(_replaced(program, [new]), (new,))


@st.composite
def new_intents(draw: st.DrawFn, program: ir.Program) -> Shape:
    """A new intent, waiting for some of the others; it may produce what others consume."""
    names = [i.name for i in program.intents]
    after = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
    new = ir.Intent(
        "new", ir.Trigger("after" if after else "push", after=_refs(after)),
        ir.Action(draw(st.sampled_from(["batch", "training", "serve"])), "img"),
        ir.Context(ir.Ref(draw(st.sampled_from([t.name for t in program.tenants])))),
        ir.Constraints(gpus=draw(gpu_requests()), sla=draw(st.sampled_from([None, "P0", "P1", "P3"]))),
        consumes=_refs(draw(st.lists(st.sampled_from(DATASETS), max_size=1))),
        produces=_refs(draw(st.lists(st.sampled_from(_unproduced(program) or DATASETS), max_size=1))))
    return Shape(_replaced(program, [new]), (new,))


def _unproduced(program: ir.Program) -> list[str]:
    """Datasets intents consume but none produces: a new producer gives their consumers an edge."""
    produced = {r.name for i in program.intents for r in i.produces}
    return sorted({r.name for i in program.intents for r in i.consumes} - produced)


@st.composite
def removals(draw: st.DrawFn, program: ir.Program) -> Shape:
    """An intent removed; what named it in `after` either drops the name (an edit too, as a
    user must make it) or keeps it (the name pass then reports it; the graph skips it)."""
    assume(len(program.intents) > 1)
    gone = draw(st.sampled_from(program.intents)).name
    edited: list[ir.Intent] = []
    if draw(st.booleans()):
        edited = [_with_after(i, [r.name for r in i.trigger.after if r.name != gone]) for i in program.intents
                  if any(r.name == gone for r in i.trigger.after)]
    return Shape(_replaced(program, edited, [gone]), tuple(edited), (gone,))


@st.composite
def tenant_edits(draw: st.DrawFn, program: ir.Program) -> Shape:
    """A tenant's quota, weight or tier changed, or a new tenant with no intents."""
    if draw(st.booleans()):
        new = ir.Tenant(f"t-new{len(program.tenants)}", tier=draw(st.sampled_from([None, "gold", "bronze"])),
                        quota_gpus=draw(st.one_of(st.none(), st.integers(1, 24))))
        return Shape(replace(program, tenants=program.tenants + (new,)), tenants={new.name: new})
    old = draw(st.sampled_from(program.tenants))
    new = replace(old, tier=draw(st.sampled_from([None, "gold", "silver", "bronze"])),
                  weight=draw(st.one_of(st.none(), st.integers(1, 5))),
                  quota_gpus=draw(st.one_of(st.none(), st.integers(1, 24))))
    tenants = tuple(new if t.name == old.name else t for t in program.tenants)
    return Shape(replace(program, tenants=tenants), tenants={new.name: new})


def _replan(index: PlanIndex, shape: Shape) -> Replanned | Fallback:
    return index.replan(shape.edited, _file_intents(shape.program), removed=shape.removed, tenants=shape.tenants)


def _over_new_quota(plan: Plan, shape: Shape) -> bool:
    """A kept interval of a tenant whose quota the edit lowered is over it at some instant."""
    for name, t in shape.tenants.items():
        if t is None or t.quota_gpus is None:
            continue
        mine = [p for p in plan.placements if p.tenant == name]
        if any(sum(q.gpu_count for q in mine if q.start_s <= p.start_s and (q.end_s is None or p.start_s < q.end_s))
               > t.quota_gpus for p in mine):
            return True
    return False


def check(topo: LoadedTopology, plan: Plan, index: PlanIndex, shape: Shape) -> Replanned | None:
    """The incremental plan of `shape` is valid, its numbers exact, its refusals the full
    planner's; None when it fell back for a reason that holds."""
    got = _replan(index, shape)
    assert index.plan is plan                 # replan leaves the index as it was
    edited = shape.program
    full, full_diags = make_plan(edited, topo)
    if currently_in_test_context():
        event("fallback: " + got.reason.split('"')[-1] if isinstance(got, Fallback) else
              "refused" if got.plan.unplaced else "replanned, moved" if got.moved else "replanned, nothing moved")
    if isinstance(got, Fallback):
        g = digraph.dependencies(edited)
        if "cycle" in got.reason:
            assert not nx.is_directed_acyclic_graph(g)
        elif "quota" in got.reason:
            assert _over_new_quota(plan, shape)
        elif "more than one intent" in got.reason:
            assert any(n > 1 for n in Counter(r.name for i in edited.intents for r in i.produces).values())
        else:
            assert "no room" in got.reason, got
        return None
    assert nx.is_directed_acyclic_graph(digraph.dependencies(edited))
    _check_invariants(edited, topo, got.plan)
    g = digraph.dependencies(edited)
    # dependencies in time, data edges included
    assert order_violations(plan_to_obj(got.plan), {v: sorted(g.predecessors(v)) for v in g}) == []
    assert got.plan.waves == full.waves
    assert [(s.tenant, s.weight, s.quota_gpus) for s in got.plan.tenants] == \
           [(s.tenant, s.weight, s.quota_gpus) for s in full.tenants]
    gpu_s: dict[str, int] = {}
    for p in got.plan.placements:
        if p.end_s is not None:
            gpu_s[p.tenant] = gpu_s.get(p.tenant, 0) + p.gpu_count * (p.end_s - p.start_s)
    assert {s.tenant: s.gpu_seconds for s in got.plan.tenants} == {s.tenant: gpu_s.get(s.tenant, 0)
                                                                   for s in got.plan.tenants}
    if got.plan.unplaced:
        refused = {(u.intent, u.reason, u.message) for u in got.plan.unplaced}
        assert refused <= {(u.intent, u.reason, u.message) for u in full.unplaced}
        errors = [d for d in got.diagnostics if d.code == "E0601"]
        assert errors and all(d in full_diags for d in errors)
        return got
    _check_derived(edited, topo, got.plan)
    assert {p.intent for p in got.plan.placements} >= {p.intent for p in full.placements}
    # only what the edit touched moved: kept intents keep their placement
    before = {p.intent: p for p in plan.placements}
    moved = {p.intent for p in got.plan.placements if p != before.get(p.intent)}
    assert moved <= set(got.replaced)
    assert set(shape.removed) - {i.name for i in shape.edited} == set(got.gone)
    return got


def in_step(index: PlanIndex, program: ir.Program, topo: LoadedTopology, plan: Plan) -> None:
    """The index after `apply` equals one built from scratch for `plan`."""
    fresh = PlanIndex(program, plan, digraph.dependencies(program), topo, 0, BUILTIN)
    for attr in ("holds", "total", "ends", "held0", "used", "preds", "succs", "producers", "consumers", "wave",
                 "dist", "prev", "terms", "intents"):
        assert getattr(fresh, attr) == getattr(index, attr), attr
    assert {k: v for k, v in fresh.timeline.items() if v} == {k: v for k, v in index.timeline.items() if v}
    assert {k: v for k, v in fresh.by_domain.items() if v} == {k: v for k, v in index.by_domain.items() if v}
    assert fresh._critical({}, {}) == index._critical({}, {}) == (plan.metrics.critical_path,
                                                                 plan.metrics.critical_path_s)


def run_kind(topo: LoadedTopology, program: ir.Program, data: st.DataObject,
             kind: Callable[[ir.Program], st.SearchStrategy[Shape]], rounds: int = 2) -> None:
    plan, index = _index(program, topo)
    assume(not plan.unplaced)                 # a reload starts from a plan in force: nothing refused
    for _ in range(rounds):
        shape = data.draw(kind(program))
        got = check(topo, plan, index, shape)
        if got is None or got.plan.unplaced:
            return
        index.apply(got)
        program, plan = shape.program, got.plan
        in_step(index, program, topo, plan)


# edit kind -> (its strategy, edits in a row): a changed dependency edge, a new intent
# (once: the next would reuse its name), a removed intent, a tenant's terms
KINDS = {"changed-edge": (edge_edits, 2), "new-intent": (new_intents, 1), "removed-intent": (removals, 2),
         "tenant": (tenant_edits, 2)}


@pytest.mark.parametrize("kind", sorted(KINDS))
@CASES
@given(topologies(), data_programs(), st.data())
def test_a_shape_edit_is_replanned_validly(kind: str, topo: LoadedTopology, program: ir.Program,
                                           data: st.DataObject) -> None:
    strategy, rounds = KINDS[kind]
    run_kind(topo, program, data, strategy, rounds)


def test_a_new_cycle_falls_back() -> None:
    """j1 after j0; j0 made to wait for j1: a cycle, never planned incrementally."""
    topo = LoadedTopology(ir.Topology("t", ("node",), (ir.TopologyNode("n0", 8, PRODUCTS[0], "80Gi"),)), ())
    job = ir.Intent("j0", ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("t0")),
                    ir.Constraints(gpus=ir.GpuRequest(2)))
    program = ir.Program(tenants=(ir.Tenant("t0"),), intents=(job, replace(_with_after(job, ["j0"]), name="j1")))
    plan, index = _index(program, topo)
    got = index.replan([_with_after(job, ["j1"])], _file_intents(program))
    assert isinstance(got, Fallback) and "cycle" in got.reason


def test_a_new_producer_makes_its_consumers_wait() -> None:
    """j0 and j1 consume d0, which nothing produced: both start at 0 on one 8-GPU node.  A new
    intent producing d0 makes them wait for it (a data edge each), and they move after it."""
    topo = LoadedTopology(ir.Topology("t", ("node",), (ir.TopologyNode("n0", 8, PRODUCTS[0], "80Gi"),)), ())
    base = ir.Intent("j0", ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("t0")),
                     ir.Constraints(gpus=ir.GpuRequest(2), duration="1h"), consumes=_refs(["d0"]))
    program = ir.Program(tenants=(ir.Tenant("t0"),), intents=(base, replace(base, name="j1")))
    plan, index = _index(program, topo)
    assert {p.start_s for p in plan.placements} == {0}
    maker = replace(base, name="maker", consumes=(), produces=_refs(["d0"]))
    shape = Shape(_replaced(program, [maker]), (maker,))
    got = check(topo, plan, index, shape)
    assert got is not None and got.replaced == ("j0", "j1", "maker")
    assert {p.intent: p.start_s for p in got.plan.placements} == {"maker": 0, "j0": 3600, "j1": 3600}
    assert got.plan.waves == (("maker",), ("j0", "j1"))
