"""`make_plan`: waves from the dependency graph, GPUs from the topology.

The plan *reserves* GPUs for every intent at once.  Waves order the
starts, they do not time-share GPUs: a GitOps plan must stay valid however
long each wave really takes (retries, schedules, serving intents that never
end), so two intents never count on the same GPU.

Everything is sorted by name before it is used (intents, tenants, nodes),
so shuffling declarations across files gives a byte-identical plan.

Placement may run twice (see `_place_all`): the first pass shows which
multi-node gangs can actually be admitted, and only those get multi-node
NVLink domains kept whole for them in the second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from intentc import graph, ir
from intentc.diagnostics import Diagnostic, Span, error, sorted_diagnostics, warning
from intentc.plan import metrics
from intentc.plan.admission import FairShare, TenantTerms, tenant_weight
from intentc.plan.batch import size_batches
from intentc.plan.cluster import Cluster
from intentc.plan.model import Placement, Plan, TenantShare, Unplaced
from intentc.plan.observation import without_observed
from intentc.plan.placer import Placed, Placer, Refused, Request
from intentc.plan.repack import Seated, make_room
from intentc.plan.strategy import decide
from intentc.policy import BUILTIN, Policies
from intentc.policy import check as policy_check
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuMatrix
from intentc.topology.nvsmi import default_matrix


def _matrix_source(inventory: LoadedTopology) -> Callable[[ir.TopologyNode], GpuMatrix]:
    """The node's parsed matrix, or the default for its product when it has none."""
    def matrix_of(node: ir.TopologyNode) -> GpuMatrix:
        try:
            return inventory.matrix(node.name)
        except KeyError:
            return default_matrix(node.gpu_count, node.gpu_product)
    return matrix_of


def _unique_intents(program: ir.Program) -> list[ir.Intent]:
    seen: dict[str, ir.Intent] = {}
    for intent in program.intents:
        seen.setdefault(intent.name, intent)
    return [seen[n] for n in sorted(seen)]


def _terms(program: ir.Program, intents: list[ir.Intent]) -> dict[str, TenantTerms]:
    declared: dict[str, ir.Tenant] = {}
    for t in program.tenants:
        declared.setdefault(t.name, t)
    names = sorted(set(declared) | {i.tenant for i in intents})
    out = {}
    for name in names:
        tenant = declared.get(name)
        quota = tenant.quota_gpus if tenant is not None else None
        out[name] = TenantTerms(tenant_weight(tenant), quota if quota is not None and quota > 0 else None)
    return out


def _gpus_span(intent: ir.Intent) -> Span:
    return intent.constraints.spans.get("gpus", intent.constraints.span)


def _unmet_preference(req: Request, placer: Placer, placed: Placed, intent: ir.Intent) -> Diagnostic | None:
    if req.prefer is None:
        return None
    want = placer.c.depth_of(req.prefer)
    if placed.scope_depth >= want:
        return None
    gpus = intent.constraints.gpus
    span = gpus.spans.get("prefer", _gpus_span(intent)) if gpus is not None else _gpus_span(intent)
    level = placer.level_name(placed.scope_depth)
    view = placer.c.view(req.filter)
    largest = max((view.cap[d.id] for d in placer.c.by_depth[want]), default=0)
    if largest < req.count:
        # never possible on this topology: say so, rather than suggest waiting for room
        return warning("W0601", f"{req.describe()} prefers one {req.prefer} domain, but the largest "
                                f"{req.prefer} domain has {largest} {req.noun()}; placed across one {level}",
                       span, hint=f"drop `prefer {req.prefer}`: no {req.prefer} domain of this topology can "
                                  f"hold {req.count} GPUs")
    return warning("W0601", f"{req.describe()} prefers one {req.prefer} domain, but no {req.prefer} "
                            f"domain had {req.count} free GPUs; placed across one {level} instead",
                   span, hint=f"use `within {req.prefer}` to make it a requirement (the intent then "
                              f"waits for room instead)")


@dataclass
class _Pass:
    """One run of admission and placement over a fresh cluster."""

    cluster: Cluster
    fair: FairShare
    seated: dict[str, Seated] = field(default_factory=dict)   # placed intents, in admission order
    unplaced: list[Unplaced] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)     # intent -> reason
    diags: list[Diagnostic] = field(default_factory=list)
    gangs: frozenset[str] = frozenset()                        # intents that need a shared NVLink domain


def _run(topology: LoadedTopology, seed: int, intents: list[ir.Intent], terms: dict[str, TenantTerms],
         wave_of: dict[str, int], protect_for: frozenset[str] | None, pinned: frozenset[str] = frozenset()
         ) -> _Pass:
    """Admit and place every GPU intent.  Multi-node NVLink domains are kept whole
    while an intent of `protect_for` waits (None: every gang that needs one).
    Intents in `pinned` (tag rules with no-repack) are never moved to make room."""
    cluster = Cluster(topology.topology, _matrix_source(topology), seed)
    placer = Placer(cluster)
    run = _Pass(cluster, FairShare(terms))
    gpu_intents = [i for i in intents if i.gpu_count > 0]
    run.gangs = frozenset(i.name for i in gpu_intents if placer.needs_shared_nvlink(Request.of(i)))
    waiting = set(run.gangs)
    if protect_for is not None:
        waiting &= protect_for
    fair = run.fair
    for intent in fair.order(gpu_intents, wave_of):
        waiting.discard(intent.name)
        placer.protect_nvlink = bool(waiting)
        req = Request.of(intent)
        outcome: Placed | Refused
        checked = placer.check(req)
        if isinstance(checked, Refused):
            outcome = checked
        elif fair.over_quota(req.tenant, req.count):
            quota = terms[req.tenant].quota_gpus
            outcome = Refused("quota", f"cannot place {req.describe()}: tenant {req.tenant} would exceed "
                                       f"its quota of {quota} GPUs ({fair.allocated[req.tenant]} already "
                                       f"allocated)", "raise the tenant's GPU quota or lower the count")
        else:
            view, limit = checked
            outcome = placer.place(req, view, limit) or placer.refuse_now(req, view, limit)
            if isinstance(outcome, Refused) and outcome.reason == "fragmentation":
                movable = {n: seat for n, seat in run.seated.items() if n not in pinned}
                room = make_room(placer, req, view, limit, movable)
                if room is not None:
                    outcome = room.placed
                    for name, moved in room.moved.items():
                        run.seated[name] = Seated(run.seated[name].request, moved)
        if isinstance(outcome, Refused):
            run.unplaced.append(Unplaced(intent.name, intent.tenant, outcome.reason, outcome.message))
            run.refusals[intent.name] = outcome.reason
            run.diags.append(error("E0601", outcome.message, _gpus_span(intent), hint=outcome.hint))
            continue
        fair.charge(req.tenant, req.count)
        run.seated[intent.name] = Seated(req, Placement(intent.name, intent.tenant, outcome.allocations,
                                                        outcome.domains, outcome.interconnect))
        unmet = _unmet_preference(req, placer, outcome, intent)
        if unmet is not None:
            run.diags.append(unmet)
    return run


def _place_all(topology: LoadedTopology, seed: int, intents: list[ir.Intent], terms: dict[str, TenantTerms],
               wave_of: dict[str, int], pinned: frozenset[str] = frozenset()) -> _Pass:
    """Two passes, so NVLink domains are only kept whole for gangs that can use them.

    The first pass protects multi-node NVLink domains for every gang that
    needs one.  A gang that was then refused for capacity or quota comes too
    late in the admission order to profit, and protecting a domain for it
    only strands GPUs that smaller jobs could have used; the second pass
    protects only the gangs that were placed (or lost to fragmentation).
    When the two sets agree the first pass is the answer.
    """
    first = _run(topology, seed, intents, terms, wave_of, None, pinned)
    worth = frozenset(n for n in first.gangs if first.refusals.get(n, "fragmentation") == "fragmentation")
    if worth == first.gangs:
        return first
    return _run(topology, seed, intents, terms, wave_of, worth, pinned)


def make_plan(program: ir.Program, topology: LoadedTopology, seed: int = 0,
              policies: Policies = BUILTIN) -> tuple[Plan, list[Diagnostic]]:
    """Place every intent of `program` onto `topology`; pure and deterministic for a seed.

    Returns the plan and its diagnostics: the dependency graph's (cycles,
    missing producers), E0601 for each intent that cannot be placed (the
    rest of the plan is still produced), W0601 for unmet preferences and
    the batch sizing's W1001 / E1010, and E1020 where the plan breaks a tag
    rule of `policies` (intentc/policy).  Nodes tainted intentc.dev/gpu-observation
    are left out (plan/observation.py).
    """
    topology = without_observed(topology)    # nodes whose GPU failed recently (daemon/fallback.py)
    g, diags = graph.build(program)
    waves = graph.waves(g)
    wave_of = {name: i for i, wave in enumerate(waves) for name in wave}
    intents = _unique_intents(program)
    durations = {i.name: graph.duration_seconds(i) for i in intents}
    path, makespan = graph.critical_path(g, durations)
    terms = _terms(program, intents)

    run = _place_all(topology, seed, intents, terms, wave_of, policy_check.pinned(program, policies))
    diags += run.diags
    placements = [seat.placement for seat in run.seated.values()]
    for intent in intents:
        if intent.gpu_count <= 0:
            placements.append(Placement(intent.name, intent.tenant, (),
                                        tuple((lvl, None) for lvl in run.cluster.levels), "none"))
    requested: dict[str, int] = {}
    for intent in intents:
        requested[intent.tenant] = requested.get(intent.tenant, 0) + max(intent.gpu_count, 0)
    shares = tuple(TenantShare(t, terms[t].weight, terms[t].quota_gpus, requested.get(t, 0),
                               run.fair.allocated.get(t, 0)) for t in sorted(terms))
    placements.sort(key=lambda p: p.intent)
    plan = Plan(
        topology=topology.topology.name,
        waves=waves,
        placements=tuple(placements),
        unplaced=tuple(sorted(run.unplaced, key=lambda u: u.intent)),
        tenants=shares,
        metrics=metrics.compute(run.cluster, placements, shares, path, makespan),
        seed=seed,
    )
    batches, batch_diags = size_batches(intents, plan.placements, topology.topology)
    plan = replace(plan, batches=batches, strategies=decide(intents, plan.placements, topology.topology))
    diags += batch_diags + policy_check.check_plan(program, plan, topology.topology, policies)
    return plan, sorted_diagnostics(diags)
