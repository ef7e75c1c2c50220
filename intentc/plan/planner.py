"""`make_plan`: waves from the dependency graph, GPUs over time from the topology.

Every intent gets a start and an end in plan time (`schedule.py`): from its
dependencies, its `duration` (the default for its action kind, with a
W0602 warning, where it has none) and the GPUs free at that moment.  GPUs
are reserved for intervals, so sequential intents reuse them, and an intent
that does not fit yet is queued, not refused.

Everything is sorted by name before it is used (intents, tenants, nodes),
so shuffling declarations across files gives a byte-identical plan.

Placement may run twice (see `_place_once`): the first pass shows which
multi-node gangs can actually be admitted, and only those get multi-node
NVLink domains kept whole for them in the second.  A plan of up to
`PORTFOLIO_MAX_INTENTS` GPU intents is made with each of a few orderings that
all keep SLA order, and the shortest is kept (`_place_all`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from intentc import collector
from intentc import ir
from intentc.diagnostics import Diagnostic, Span, sorted_diagnostics, warning
from intentc.graph import digraph
from intentc.ir.duration import format_duration, parse_duration
from intentc.plan import metrics
from intentc.plan import policy_check
from intentc.plan.admission import TenantTerms, sla_name, sla_rank, tenant_weight
from intentc.plan.batch_size import size_batches
from intentc.plan.cluster import Cluster
from intentc.plan.model import BatchSizing, Occupancy, Placement, Plan, Strategy, TenantShare
from intentc.plan.observation import without_observed
from intentc.plan.placer import Placer, Request
from intentc.plan.schedule import FALLBACK, NEVER, ORDERINGS, Job, Ordering, Outcome, Simulation
from intentc.plan.shape import shape
from intentc.plan.strategy import decide
from intentc.policy import BUILTIN, Policies
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuMatrix
from intentc.topology.nvsmi import default_matrix


def matrix_source(inventory: LoadedTopology) -> Callable[[ir.TopologyNode], GpuMatrix]:
    """The node's parsed matrix, or the default for its product when it has none."""
    def matrix_of(node: ir.TopologyNode) -> GpuMatrix:
        try:
            return inventory.matrix(node.name)
        except KeyError:
            return default_matrix(node.gpu_count, node.gpu_product)
    return matrix_of


def unique_intents(program: ir.Program) -> list[ir.Intent]:
    seen: dict[str, ir.Intent] = {}
    for intent in program.intents:
        seen.setdefault(intent.name, intent)
    return [seen[n] for n in sorted(seen)]


def tenant_terms(program: ir.Program, intents: list[ir.Intent]) -> dict[str, TenantTerms]:
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


def gpus_span(intent: ir.Intent) -> Span:
    return intent.constraints.spans.get("gpus", intent.constraints.span)


def unmet_preference(req: Request, placer: Placer, placed: Placement, intent: ir.Intent) -> Diagnostic | None:
    if req.prefer is None:
        return None
    want = placer.c.depth_of(req.prefer)
    scope_depth = sum(1 for _, dom in placed.domains if dom is not None)
    if scope_depth >= want:
        return None
    gpus = intent.constraints.gpus
    span = gpus.spans.get("prefer", gpus_span(intent)) if gpus is not None else gpus_span(intent)
    level = placer.level_name(scope_depth)
    largest = placer.largest(req.filter, want)
    if largest < req.count:
        # never possible on this topology: say so, rather than suggest waiting for room
        return warning("W0601", f"{req.describe()} prefers one {req.prefer} domain, but the largest "
                                f"{req.prefer} domain has {largest} {req.noun()}; placed across one {level}",
                       span, hint=f"drop `prefer {req.prefer}`: no {req.prefer} domain of this topology can "
                                  f"hold {req.count} GPUs")
    return warning("W0601", f"{req.describe()} prefers one {req.prefer} domain, but no {req.prefer} "
                            f"domain had {req.count} free GPUs when it started; placed across one {level} instead",
                   span, hint=f"use `within {req.prefer}` to make it a requirement (the intent then "
                              f"waits for room instead)")


def duration_warning(intent: ir.Intent, seconds: int | None = None) -> Diagnostic | None:
    """W0602 for a finite GPU intent without a `duration` (it is planned with its kind's default)."""
    given = intent.constraints.duration is not None and parse_duration(intent.constraints.duration) is not None
    if intent.gpu_count <= 0 or intent.action.kind == ir.ActionKind.SERVE.value or given:
        return None
    if seconds is None:
        seconds = digraph.duration_seconds(intent)
    return warning("W0602", f'"{intent.name}" has no `duration`: planned as {format_duration(seconds)}, the '
                            f"default for {intent.action.kind}", intent.span,
                   hint="give it a `duration:` estimate so the plan knows when its GPUs are free again")


def _jobs(after: dict[str, tuple[str, ...]], intents: list[ir.Intent],
          durations: dict[str, int]) -> tuple[dict[str, Job], list[Diagnostic]]:
    """Durations and dependencies per intent, and W0602 where a GPU intent has no `duration`."""
    jobs: dict[str, Job] = {}
    diags: list[Diagnostic] = []
    serve = ir.ActionKind.SERVE.value
    for intent in intents:
        open_ended = intent.action.kind == serve
        seconds = durations[intent.name]
        unsaid = duration_warning(intent, seconds)
        if unsaid is not None:
            diags.append(unsaid)
        jobs[intent.name] = Job(intent, None if open_ended else seconds, after.pop(intent.name))
    return jobs, diags


def _run(topology: LoadedTopology, seed: int, jobs: dict[str, Job], terms: dict[str, TenantTerms],
         wave_of: dict[str, int], protect_for: frozenset[str] | None, occupancy: Occupancy,
         pinned: frozenset[str] = frozenset(), exclusive: frozenset[str] = frozenset(),
         ordering: Ordering = Ordering()) -> Outcome:
    """One schedule over a fresh cluster.  Multi-node NVLink domains are kept whole
    while an intent of `protect_for` waits (None: every gang that needs one).
    Intents in `pinned` (tag rules with no-repack) are never moved to make room; intents
    in `exclusive` (tag rules with exclusive-domain) share no node or NVLink domain with
    another tenant's intent at overlapping times."""
    cluster = Cluster(topology.topology, matrix_source(topology), seed)
    spans = {n: gpus_span(j.intent) for n, j in jobs.items() if j.intent.gpu_count > 0}   # read by refusals only
    return Simulation(cluster, jobs, terms, wave_of, protect_for, occupancy, spans, pinned, exclusive,
                      ordering).run()


def _place_once(topology: LoadedTopology, seed: int, jobs: dict[str, Job], terms: dict[str, TenantTerms],
                wave_of: dict[str, int], occupancy: Occupancy, pinned: frozenset[str],
                exclusive: frozenset[str], ordering: Ordering) -> Outcome:
    """Two passes, so NVLink domains are only kept whole for gangs that can use them.

    The first pass protects multi-node NVLink domains for every gang that
    needs one.  A gang that was then refused comes to nothing, and
    protecting a domain for it only strands GPUs that smaller jobs could
    have used; the second pass protects only the gangs that were placed (or
    lost to fragmentation).  When the two sets agree the first pass is the answer.
    """
    first = _run(topology, seed, jobs, terms, wave_of, None, occupancy, pinned, exclusive, ordering)
    worth = frozenset(n for n in first.gangs if first.refusals.get(n, "fragmentation") == "fragmentation")
    if worth == first.gangs:
        return first
    del first               # not kept under the second pass
    return _run(topology, seed, jobs, terms, wave_of, worth, occupancy, pinned, exclusive, ordering)


# Above this many GPU intents a plan is made with the default ordering only: trying every
# ordering multiplies the planning time by their number, and the large plans (the daemon's
# background re-plans, thousands of intents) must stay within their time budget.
PORTFOLIO_MAX_INTENTS = 500


def _place_all(topology: LoadedTopology, seed: int, jobs: dict[str, Job], terms: dict[str, TenantTerms],
               wave_of: dict[str, int], occupancy: Occupancy, pinned: frozenset[str] = frozenset(),
               exclusive: frozenset[str] = frozenset(),
               orderings: Sequence[Ordering] | None = None) -> Outcome:
    """The schedule of each ordering (`schedule.ORDERINGS`) and the best of them.

    SLA order leaves open the order inside a class, and whether the head of a class holds
    a reservation against its own class; what is best for the makespan depends on the
    instance (the critical path, the gangs, the quotas), and no one choice is best on
    most.  Every ordering keeps the same gates, so none lets a lower class hold what a
    waiting higher class could use: choosing among them keeps SLA order.  The best: the
    fewest intents left waiting for quota a lower class took (`_quota_slips`; where each
    ordering leaves some, `schedule.FALLBACK` is tried too), the fewest refusals, then
    the earliest end, then the least waiting of P0 and then of P1 intents, then the
    first in the list (deterministic).  P0 and P1 pay for latency: in every ordering
    their queues go shortest first (`Ordering.shortest_to`), so what the choice trades
    for the makespan is the order of the classes below."""
    if orderings is None:
        gpu_intents = sum(1 for j in jobs.values() if j.intent.gpu_count > 0)
        orderings = ORDERINGS if gpu_intents <= PORTFOLIO_MAX_INTENTS else ORDERINGS[:1]
    best: Outcome | None = None
    best_key: tuple[int, ...] = ()
    tried = list(orderings)
    for ordering in tried:
        run = _place_once(topology, seed, jobs, terms, wave_of, occupancy, pinned, exclusive, ordering)
        if len(orderings) == 1:
            return run
        key = (_quota_slips(run, jobs, terms), *_quality(run, jobs))
        if best is None or key < best_key:
            best, best_key = run, key
        del run             # a worse run is not kept while the next one is made
        if ordering is tried[-1] and best_key[0] and FALLBACK not in tried:
            tried.append(FALLBACK)
    assert best is not None
    return best


def _quality(run: Outcome, jobs: Mapping[str, Job]) -> tuple[int, ...]:
    """What `_place_all` minimises after `_quota_slips`: refusals, the makespan, the P0 and
    then the P1 intents' waiting."""
    end, waits = 0, [0, 0]
    for name, (start, stop, ready) in run.times.items():
        if stop is not None and stop > end:
            end = stop
        if start > ready:
            rank = sla_rank(jobs[name].intent)
            if rank < len(waits):
                waits[rank] += start - ready
    return (len(run.refusals), end, *waits)


def _quota_slips(run: Outcome, jobs: Mapping[str, Job], terms: Mapping[str, TenantTerms]) -> int:
    """How many intents wait, at some instant, for quota that lower-class intents of their
    own tenant hold, started after they were ready, while the GPUs would take them without
    the lower classes' (0 or more; counted, not only found, so the choice is deterministic
    either way).

    The quota rule lets a lower class start while the tenant's quota holds it and every
    waiting higher-class intent at once; an intent of a higher class that becomes ready
    later may take that room, and the one that waited then waits for the lower class's
    quota.  Whether that happens depends on the order inside the classes, so `_place_all`
    prefers the orderings where it does not."""
    by_tenant: dict[str, list[tuple[int, int, int, int, int, str]]] = {}
    for name, (start, end, ready) in run.times.items():
        intent = jobs[name].intent
        if intent.gpu_count > 0 and terms[intent.tenant].quota_gpus is not None:
            by_tenant.setdefault(intent.tenant, []).append(
                (start, NEVER if end is None else end, ready, sla_rank(intent), intent.gpu_count, name))
    slips = 0
    for tenant, spans in sorted(by_tenant.items()):
        quota = terms[tenant].quota_gpus
        assert quota is not None
        instants = sorted({t for start, stop, _, _, _, _ in spans for t in (start, stop)})
        held = [0] * (len(instants) + 1)        # GPUs the tenant holds from each instant on
        for start, stop, _, _, gpus, _ in spans:
            held[bisect_left(instants, start)] += gpus
            held[bisect_left(instants, stop)] -= gpus
        for i in range(1, len(held)):
            held[i] += held[i - 1]
        for start_h, _, ready_h, rank_h, gpus_h, name_h in spans:
            late = [(start, stop, gpus) for start, stop, _, rank, gpus, _ in spans
                    if rank > rank_h and ready_h <= start < start_h]
            if start_h <= ready_h or not late:
                continue
            for i in range(bisect_left(instants, ready_h), bisect_left(instants, start_h)):
                t = instants[i]
                theirs = sum(gpus for start, stop, gpus in late if start <= t < stop)
                if theirs and held[i] + gpus_h > quota >= held[i] - theirs + gpus_h \
                        and _fits_without_later(run, jobs, name_h, t, ready_h, rank_h):
                    slips += 1
                    break
    return slips


def _fits_without_later(run: Outcome, jobs: Mapping[str, Job], name: str, t: int, ready: int, rank: int) -> bool:
    """Whether `name` would find its GPUs at t (one domain at its `within` level, nodes of
    its filter) if the lower-class intents that started at or after `ready` held none.
    When it would not, the quota it waits for delays nothing: it waits for GPUs."""
    cluster = run.cluster
    free = [n.capacity for n in cluster.nodes]
    index = {n.spec.name: i for i, n in enumerate(cluster.nodes)}
    for other, (start, end, _) in run.times.items():
        if start <= t and (end is None or t < end):
            if start >= ready and sla_rank(jobs[other].intent) > rank:
                continue
            for a in run.seated[other].placement.allocations:
                free[index[a.node]] -= len(a.gpus)
    req = Request.of(jobs[name].intent)
    eligible = cluster.view(req.filter).eligible
    depth = cluster.depth_of(req.within) if req.within else 0
    sums: dict[int, int] = {}
    for i, node in enumerate(cluster.nodes):
        if eligible[i] and free[i] > 0:
            d = node.leaf.at_depth(depth).id
            sums[d] = sums.get(d, 0) + free[i]
            if sums[d] >= req.count:
                return True
    return False


def _placement_warnings(run: Outcome, jobs: dict[str, Job]) -> list[Diagnostic]:
    placer = Placer(run.cluster)
    out: list[Diagnostic] = []
    for name, seat in sorted(run.seated.items()):
        intent = jobs[name].intent
        p = seat.placement
        if not p.allocations:
            continue
        unmet = unmet_preference(seat.request, placer, p, intent)
        if unmet is not None:
            out.append(unmet)
        no_nvlink = nvlink_unmet(seat.request, p, intent)
        if no_nvlink is not None:
            out.append(no_nvlink)
    return out


def nvlink_unmet(req: Request, p: Placement, intent: ir.Intent) -> Diagnostic | None:
    """`within nvlink` placed on GPUs no NVLink joins (an all-SYS/PCIe node): say so at the clause."""
    if req.within != "nvlink" or p.interconnect == "nvlink" or len(p.allocations) != 1 or req.count < 2:
        return None
    a = p.allocations[0]
    gpus = intent.constraints.gpus
    span = gpus.spans.get("within", gpus_span(intent)) if gpus is not None else gpus_span(intent)
    return warning("W0603", f"{req.describe()} asks for one NVLink domain, but node {a.node} has no NVLink "
                            f"between GPUs {', '.join(map(str, a.gpus))} (weakest link {a.link}); the "
                            f"collectives will cross PCIe", span,
                   hint="ask for a GPU product with NVLink, or say `within node` if PCIe is enough")


_Named = TypeVar("_Named", Placement, BatchSizing, Strategy)


def _kept(made: _Named, previous: Sequence[_Named]) -> _Named:
    """`previous`'s record of the same intent (sorted by intent) where it equals `made`, else
    `made`.  A full re-plan of a program in force (the daemon's background re-plan) mostly
    decides what the plan in force decided: sharing those records, one at a time as they
    are made, keeps two plans from coexisting at full size (docs/reload.md, Memory)."""
    i = bisect_left(previous, made.intent, key=_intent_of)
    if i < len(previous) and previous[i] == made:
        return previous[i]
    return made


def _intent_of(record: Placement | BatchSizing | Strategy) -> str:
    return record.intent


def _peaks(placements: list[Placement]) -> tuple[int, dict[str, int]]:
    """The most GPUs held at once, overall and per tenant (ends free GPUs before starts take them)."""
    points: list[tuple[int, int, str, int]] = []
    for p in placements:
        gpus = p.gpu_count
        if gpus:
            points.append((p.start_s, 1, p.tenant, gpus))
            if p.end_s is not None:
                points.append((p.end_s, 0, p.tenant, -gpus))
    total, peak = 0, 0
    held: dict[str, int] = {}
    peaks: dict[str, int] = {}
    for _, _, tenant, delta in sorted(points):
        total += delta
        held[tenant] = held.get(tenant, 0) + delta
        peak = max(peak, total)
        peaks[tenant] = max(peaks.get(tenant, 0), held[tenant])
    return peak, peaks


def make_plan(program: ir.Program, topology: LoadedTopology, seed: int = 0,
              occupied: Occupancy | None = None, policies: Policies = BUILTIN,
              previous: Plan | None = None) -> tuple[Plan, list[Diagnostic]]:
    """Schedule every intent of `program` onto `topology`; pure and deterministic for a seed.

    `occupied` is what is already taken when the plan starts (GPUs busy until
    a plan time or for good, nodes not to use); the default is an empty cluster.
    Returns the plan and its diagnostics: the dependency graph's (cycles,
    missing producers), E0601 for each intent that can never be placed (the
    rest of the plan is still produced), W0601 for unmet preferences, W0602
    for GPU intents without a `duration`, W0603 for `within nvlink` on GPUs
    without NVLink, the batch sizing's W1001 / E1010, and E1020 where the plan
    breaks a tag rule of `policies` (intentc/policy).  Nodes tainted
    intentc.dev/gpu-observation are left out (plan/observation.py).

    `previous`: a plan whose records (placements, batch sizes, strategies) the new plan
    shares where they are equal, rather than holding equal copies; the plan is the same.
    """
    # a plan builds hundreds of thousands of small acyclic objects that live until it
    # returns: the cyclic collector would walk them again and again for nothing (collector.py)
    with collector.paused():
        return _make_plan(program, topology, seed, occupied, policies, previous)


def _make_plan(program: ir.Program, topology: LoadedTopology, seed: int, occupied: Occupancy | None,
               policies: Policies, previous: Plan | None) -> tuple[Plan, list[Diagnostic]]:
    topology = without_observed(topology)    # nodes whose GPU failed recently (daemon/fallback.py)
    intents = unique_intents(program)
    durations = {i.name: digraph.duration_seconds(i) for i in intents}
    # the graph's shape only, no networkx graph unless there is a cycle to describe (plan/shape.py)
    shaped, diags = shape(program, durations)
    waves, wave_of, path, path_s = shaped.waves, shaped.wave_of, shaped.path, shaped.path_s
    terms = tenant_terms(program, intents)
    jobs, duration_diags = _jobs(shaped.after, intents, durations)     # each intent's `after` moves to its job
    del shaped
    diags += duration_diags

    run = _place_all(topology, seed, jobs, terms, wave_of, occupied or Occupancy(),
                     policy_check.pinned(program, policies), policy_check.exclusive(program, policies))
    diags += run.diags
    diags += _placement_warnings(run, jobs)
    refused_path: tuple[str, ...] = ()
    refused_s = 0
    if run.refusals:
        # refused intents take no time: the bound is over what runs, what was given up apart
        path, path_s, refused_path, refused_s = metrics.critical_paths(
            [n for wave in waves for n in wave], lambda n: jobs[n].after, durations, run.refusals)
    del durations
    placements = []
    seated, times = run.seated, run.times
    while seated:           # the schedule's records of each intent freed as its placement is made
        name, seat = seated.popitem()
        start, end, ready = times.pop(name)
        p = seat.placement
        made = Placement(name, p.tenant, p.allocations, p.domains, p.interconnect,
                         start, end, ready, sla_name(jobs[name].intent))
        placements.append(made if previous is None else _kept(made, previous.placements))
    placements.sort(key=lambda p: p.intent)
    requested: dict[str, int] = {}
    for intent in intents:
        requested[intent.tenant] = requested.get(intent.tenant, 0) + max(intent.gpu_count, 0)
    peak, peaks = _peaks(placements)
    gpu_s: dict[str, int] = {}
    for p in placements:
        if p.end_s is not None:
            gpu_s[p.tenant] = gpu_s.get(p.tenant, 0) + p.gpu_count * (p.end_s - p.start_s)
    shares = tuple(TenantShare(t, terms[t].weight, terms[t].quota_gpus, requested.get(t, 0),
                               peaks.get(t, 0), gpu_s.get(t, 0)) for t in sorted(terms))
    plan = Plan(
        topology=topology.topology.name,
        waves=waves,
        placements=tuple(placements),
        unplaced=tuple(sorted(run.unplaced, key=lambda u: u.intent)),
        tenants=shares,
        metrics=metrics.compute(run.cluster, placements, shares, path, path_s, peak, run.idle_at_start,
                                refused_path, refused_s),
        seed=seed,
    )
    batches, batch_diags = size_batches(intents, plan.placements, topology.topology)
    strategies = decide(intents, plan.placements, topology.topology)
    if previous is not None:
        batches = tuple(_kept(b, previous.batches) for b in batches)
        strategies = tuple(_kept(s, previous.strategies) for s in strategies)
    plan = replace(plan, batches=batches, strategies=strategies)
    diags += batch_diags + policy_check.check_plan(program, plan, topology.topology, policies)
    return plan, sorted_diagnostics(diags)
