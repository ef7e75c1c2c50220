"""Placement over time: an event-driven list schedule with reservations per interval.

Plan time starts at 0 (the moment the first wave is applied).  An intent
becomes *ready* when every intent it depends on (`after`, or a dataset it
consumes) has ended, or, for a `serve` dependency, has started (a server
never ends; what follows it needs it up, not finished).  At every instant
where something ends or becomes ready, the ready intents are offered to the
GPUs free at that instant, in admission order (`admission.py`: SLA class,
weighted fair share on the GPUs each tenant holds *at that instant*, then
the order inside the tenant's queue, which `Ordering` chooses).  An intent
that fits starts there and holds its GPUs until `start + duration`
(open-ended for `serve`); one that does not fit waits for the next instant.  Sequential intents therefore reuse GPUs.

SLA order holds at every instant, not just in the order of offers: while an
intent of a higher class waits, a lower-class intent may start on a node
the waiting one could use only if it ends by the earliest time the waiting
one could possibly start (`_earliest`: when enough of the GPUs it can use
have been released by the intents running now, counted per domain at the
waiting intent's `within` level).  So a lower class never delays a higher
one; it only fills gaps.  Quotas hold at every instant: a tenant's running
GPUs never exceed its quota (an intent over quota waits for the tenant's own
intents to end, and still holds lower classes off the GPUs it could use).
The same order holds through the quota (`_quota_gated`): a lower class of a
tenant does not take quota its waiting higher classes need, on whatever
nodes it would run.  A gang at the head of its class holds a reservation
against the rest of its class (`Ordering.reserve`), and intents of
exclusive-domain tag rules share no node or NVLink domain with another
tenant at overlapping times (`_kept_off`).

An intent is refused (E0601) only when it can never be placed: no node of
its product, no domain big enough, a gang bigger than its tenant's quota,
a dependency that is refused, or GPUs that stay held open-ended (by `serve`
intents or busy GPUs without an end) once everything finite has ended.

GPUs already held before the plan starts (`model.Occupancy`, e.g. read from
a live cluster by the caller) are taken at time 0 and released at their
`until_s`, counted against their tenant's quota where they carry one (the
running intents a live re-plan keeps); unavailable nodes are taken for the
whole plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from sortedcontainers import SortedList

from intentc import ir
from intentc.diagnostics import Diagnostic, Span, error
from intentc.plan.admission import FairShare, TenantTerms, queue_keys, sla_rank
from intentc.plan.cluster import Cluster, Filter, NodeState, View
from intentc.plan.metrics import idle_on_used_nodes
from intentc.plan.model import NodeAllocation, Occupancy, Placement, Unplaced
from intentc.plan.placer import Placed, Placer, Refused, Request, over_quota, waits_for_refused
from intentc.plan.repack import Movable, Room, Seated, make_room

Gate = tuple[Filter, int, str | None]   # a waiting intent's filter, `within` depth, tenant if over quota
MAX_RANK = max(c.rank for c in ir.SlaClass)
NEVER = 1 << 62         # "no lower bound": the waiting intent can never start, so it gates nobody


def _depth(cluster: Cluster, within: str | None) -> int:
    return cluster.depth_of(within) if within else 0


class Gated:
    """What `_try_place` returns when the gang would fit but a waiting higher class could use those GPUs."""


GATED = Gated()


@dataclass(frozen=True, slots=True)
class Job:
    """What the schedule needs to know about one intent besides its request."""

    intent: ir.Intent
    duration: int | None        # seconds; None: open-ended (serve)
    # intents it waits for, sorted (a tuple: 48 bytes for one name, a frozenset 216)
    after: tuple[str, ...]


@dataclass(slots=True)
class _Hold:
    """GPUs held over an interval: a started intent, or busy GPUs given by the caller."""

    end: int | None
    tenant: str | None
    allocs: list[tuple[NodeState, tuple[int, ...]]]
    seq: int = 0                # its place among releases at the same end

    @property
    def gpus(self) -> int:
        return sum(len(g) for _, g in self.allocs)


@dataclass
class Outcome:
    """What one run of the schedule produced."""

    cluster: Cluster
    # per started intent (one shared record per tenant for intents without GPUs: their
    # placements are made from their names, `Simulation._seat_without_gpus`)
    seated: dict[str, Seated] = field(default_factory=dict)
    times: dict[str, tuple[int, int | None, int]] = field(default_factory=dict)   # start, end, ready
    unplaced: list[Unplaced] = field(default_factory=list)
    refusals: dict[str, str] = field(default_factory=dict)
    diags: list[Diagnostic] = field(default_factory=list)
    gangs: frozenset[str] = frozenset()
    idle_at_start: int = 0


@dataclass(frozen=True)
class Ordering:
    """The choices a schedule leaves open without breaking SLA order: the planner tries a
    few and keeps the shortest (`planner._place_all`).  None of them lets a lower class
    hold what a waiting higher class could use (the gates are the same); they differ in
    what SLA order does not decide.

    `reserve`: which intent at the head of its class (the first of the class, in admission
    order, to wait at an instant) holds a reservation against the later intents of its own
    class, as a waiting higher class holds one against lower classes (EASY backfill: they
    start only if they end before it could start where they run).  "every": any head;
    "gangs": only a head larger than any node (the gangs that small intents overtake again
    and again, as GPUs free up one node at a time); "none": no reservation inside a class.

    The order inside a tenant's queue, after the longest chain of work waiting behind an
    intent (list scheduling: what holds up the most goes first): in the classes up to
    `shortest_to` (by rank: 1 is P0 and P1, -1 none), the shortest intent first (SPT,
    the order that minimises the mean wait, what those classes pay for); in the classes
    below, `low`: "chains", earlier waves and smaller gangs first (the most intents
    running at once); "longest", the longest intent first (LPT: a long intent left for
    the end of the plan is its tail); "bottom", its own duration plus the chain behind
    it first (the bottom level of list scheduling: the critical path first)."""

    reserve: str = "gangs"
    shortest_to: int = 1
    low: str = "chains"


# the orderings a plan tries (`planner._place_all`), the first one alone where a plan is too
# large to plan several times; the first is the default, kept on ties
ORDERINGS = (Ordering("gangs", 1, "chains"), Ordering("none", 1, "longest"), Ordering("gangs", 2, "bottom"),
             Ordering("none", 2, "longest"))
# tried as well when every one of `ORDERINGS` leaves an intent waiting for quota a lower class
# took (`planner._quota_slips`): no class shortest first, the order before orderings were tried
FALLBACK = Ordering("gangs", -1, "chains")


class Simulation:
    """One schedule over a fresh cluster; `run` fills an `Outcome`."""

    def __init__(self, cluster: Cluster, jobs: Mapping[str, Job], terms: Mapping[str, TenantTerms],
                 wave_of: Mapping[str, int], protect_for: frozenset[str] | None, occupancy: Occupancy,
                 spans: Mapping[str, Span], pinned: frozenset[str] = frozenset(),
                 exclusive: frozenset[str] = frozenset(), ordering: Ordering = Ordering()) -> None:
        self.c = cluster
        self.reserve_heads = ordering.reserve
        self.pinned = pinned                # never moved to make room (tag rules with no-repack)
        # kept apart from other tenants (exclusive-domain): per isolation unit (a node's NVLink
        # domain, or the node outside any), the running intents per tenant and the exclusive
        # ones among them; kept only when some intent asks for it
        self.exclusive = exclusive
        self._unit_of: list[int] = []
        self._unit_nodes: list[list[int]] = []
        self._unit_holds: dict[int, dict[str, int]] = {}
        self._unit_exclusive: dict[int, dict[str, int]] = {}
        self._isolation_off = False             # once nothing finite is left to wait for
        if exclusive:
            units: dict[str, int] = {}
            for i, state in enumerate(cluster.nodes):
                nv = state.spec.domain("nvlink")
                u = units.setdefault(f"nvlink {nv}" if nv is not None else f"node {state.spec.name}", len(units))
                self._unit_of.append(u)
                if u == len(self._unit_nodes):
                    self._unit_nodes.append([])
                self._unit_nodes[u].append(i)
        self.placer = Placer(cluster)
        self.jobs = jobs
        self.terms = terms
        self.wave_of = wave_of
        self.out = Outcome(cluster)
        # the domains of an intent without GPUs: one tuple shared by all of them (the plan keeps it)
        self.spread: tuple[tuple[str, str | None], ...] = tuple((lvl, None) for lvl in cluster.levels)
        # a request per intent that asks for GPUs (an intent without them asks nothing of the
        # cluster: its request would only be read for its filter, which no demand counts)
        self.reqs = {n: Request.of(j.intent) for n, j in jobs.items() if j.intent.constraints.gpus is not None}
        # what an intent without GPUs is seated as: one record per tenant, shared (nothing reads
        # its request or its name; the plan's placement is made from its name and times)
        self._unplaced_seat: dict[str, Seated] = {}
        # what only the offer of GPU intents reads (SLA rank, `within` depth, queue order) is
        # kept for GPU intents only, often a small share of them (less at the peak)
        gpu_names = [n for n, j in jobs.items() if j.intent.gpu_count > 0]
        self.rank = {n: sla_rank(jobs[n].intent) for n in gpu_names}
        # per GPU intent: the depth of its required `within` domain (0: anywhere)
        self.limits = {n: _depth(cluster, self.reqs[n].within) for n in gpu_names}
        self.succs: dict[str, list[str]] = {n: [] for n in jobs}
        self.pending: dict[str, int] = {}
        for name, job in sorted(jobs.items()):
            self.pending[name] = len(job.after)
            for before in sorted(job.after):
                self.succs[before].append(name)
        # the queue order inside a tenant, from the remaining chains (read for nothing else)
        chains = self._remaining_chains(jobs, self.succs, gpu_names)
        self.keys = queue_keys([jobs[n].intent for n in gpu_names], wave_of, chains)
        self._order(ordering, chains)
        self.holds: dict[str, _Hold] = {}
        # pending releases (end, sequence, hold key), kept sorted: the next one is first, and
        # the bounds for waiting intents walk them in time order without sorting again (a
        # sorted list, not a plain one: a large plan has tens of thousands pending at once,
        # and inserting into or popping the front of a plain list moves all of them)
        self.events: SortedList = SortedList()
        self._seq = 0
        self.node_index = {n.spec.name: i for i, n in enumerate(cluster.nodes)}
        self.held: dict[str, int] = {}          # tenant -> GPUs it holds now
        # per node index: the finite holds on it -> (end, sequence, GPUs there), so the bound for
        # a waiting intent in one domain looks at that domain's releases, not at every release
        self._on_node: list[dict[str, tuple[int, int, int]]] = [{} for _ in cluster.nodes]
        self._under: dict[int, list[int]] = {}  # domain id -> node indices inside it
        self.movable = Movable()                # intents started at this instant that may still move
        self._now = -1
        self._subset: dict[tuple[Filter, Filter], bool] = {}
        self.out.gangs = frozenset(n for n in gpu_names if self.placer.needs_shared_nvlink(self.reqs[n]))
        # gangs that keep multi-node NVLink domains whole while they wait -> their SLA rank
        kept = self.out.gangs if protect_for is None else self.out.gangs & protect_for
        self.waiting_gangs = {n: sla_rank(jobs[n].intent) for n in kept if n not in self.out.refusals}
        self.spans = spans
        self._largest_node = max((n.capacity for n in cluster.nodes), default=0)
        self.heads: dict[int, str] = {}         # per SLA rank: the intent holding its class's reservation
        self._quota_of = {t: q.quota_gpus for t, q in terms.items() if q.quota_gpus is not None}
        self._gangs_per_rank: dict[int, int] = {}     # waiting gangs per SLA rank, kept as they stop waiting
        for k in self.waiting_gangs.values():
            self._gangs_per_rank[k] = self._gangs_per_rank.get(k, 0) + 1
        self._views: dict[str, View] = {}      # per intent: its filter's view (views live as long as the cluster)
        self._take_occupancy(occupancy)
        for n in gpu_names:
            flt = self.reqs[n].filter
            if flt.product is not None or flt.memory is not None:
                self.placer.add_demand(flt, 1)

    def _order(self, ordering: Ordering, chains: Mapping[str, int]) -> None:
        """Re-key the queues as `ordering` says (`queue_keys` made the "chains" order).
        `chains`: per GPU intent, minus the longest chain of work waiting behind it."""
        low = ordering.low
        for name, (lead, wave, gpus, _) in list(self.keys.items()):
            own = self.jobs[name].duration
            length = NEVER if own is None else own
            if self.rank[name] <= ordering.shortest_to:
                self.keys[name] = (lead, length, gpus, name)
            elif low == "longest":
                self.keys[name] = (lead, -length, gpus, name)
            elif low == "bottom":
                self.keys[name] = (chains[name] - length, wave, gpus, name)

    @staticmethod
    def _remaining_chains(jobs: Mapping[str, Job], succs: Mapping[str, list[str]],
                          names: list[str]) -> dict[str, int]:
        """Per intent of `names`, minus the longest chain of durations of the intents that wait
        for it (open-ended ones count as longer than any plan): the list-scheduling priority.
        `succs`: per intent, the intents that wait for it."""
        indegree = {n: len(j.after) for n, j in jobs.items()}
        order = [n for n in sorted(jobs) if indegree[n] == 0]
        for n in order:                          # Kahn's order; dependencies are acyclic here
            for s in succs[n]:
                indegree[s] -= 1
                if indegree[s] == 0:
                    order.append(s)
        longest: dict[str, int] = {}
        for n in reversed(order):
            own = jobs[n].duration
            longest[n] = (NEVER if own is None else own) + max((longest[s] for s in succs[n]), default=0)
        # the work that waits behind it, not its own length: among intents nothing waits for,
        # the smaller-gangs-first rule still decides (most intents running at once)
        return {n: -max((longest[s] for s in succs[n]), default=0) for n in names}

    # ------------------------------------------------------------------
    # Holds and events
    # ------------------------------------------------------------------

    def _take_occupancy(self, occ: Occupancy) -> None:
        by_name = self.c.named
        for i, busy in enumerate(occ.busy):
            node = by_name.get(busy.node)
            if node is None:
                continue
            gpus = tuple(sorted({g for g in busy.gpus if 0 <= g < node.capacity and node.free >> g & 1}))
            if gpus:
                self._hold(f"\0busy{i}", _Hold(busy.until_s, busy.tenant, [(node, gpus)]))
        for name in sorted(occ.unavailable):
            node = by_name.get(name)
            if node is not None:
                gpus = tuple(g for g in range(node.capacity) if node.free >> g & 1)
                if gpus:
                    self._hold(f"\0down:{name}", _Hold(None, None, [(node, gpus)]))

    def _hold(self, key: str, hold: _Hold, taken: bool = False) -> None:
        if not taken:
            for node, gpus in hold.allocs:
                self.c.take(node, gpus)
        self.holds[key] = hold
        if hold.tenant is not None and hold.allocs:
            self.held[hold.tenant] = self.held.get(hold.tenant, 0) + hold.gpus
            if self.exclusive:
                self._file_units(key, hold, 1)
        if hold.end is not None:
            self._seq += 1
            hold.seq = self._seq
            self.events.add((hold.end, self._seq, key))
            self._index(key, hold, True)

    def _index(self, key: str, hold: _Hold, add: bool) -> None:
        """File a finite hold under the nodes it holds GPUs on (or take it off them)."""
        if hold.end is None:
            return
        for node, gpus in hold.allocs:
            on = self._on_node[self.node_index[node.spec.name]]
            if add:
                on[key] = (hold.end, hold.seq, len(gpus))
            else:
                on.pop(key, None)

    def _file_units(self, key: str, hold: _Hold, delta: int) -> None:
        """Count a running intent in (or out of) the isolation units it holds GPUs in."""
        assert hold.tenant is not None
        for u in sorted({self._unit_of[self.node_index[node.spec.name]] for node, _ in hold.allocs}):
            for table in (self._unit_holds, self._unit_exclusive) if key in self.exclusive else (self._unit_holds,):
                per = table.setdefault(u, {})
                per[hold.tenant] = per.get(hold.tenant, 0) + delta
                if not per[hold.tenant]:
                    del per[hold.tenant]
                    if not per:
                        del table[u]

    def _kept_off(self, name: str, tenant: str) -> list[int]:
        """The isolation units `name` must stay out of now: those where another tenant runs an
        exclusive intent and, if `name` is exclusive itself, those where another tenant runs
        anything."""
        if self._isolation_off:
            return []
        table = self._unit_holds if name in self.exclusive else self._unit_exclusive
        return [u for u, per in sorted(table.items()) if any(t != tenant for t in per)]

    def _mask(self, units: list[int]) -> list[tuple[NodeState, tuple[int, ...]]]:
        """Take the free GPUs of `units` for the length of one search (undone by `_unmask`)."""
        out = []
        for u in units:
            for i in self._unit_nodes[u]:
                node = self.c.nodes[i]
                gpus = tuple(g for g in range(node.capacity) if node.free >> g & 1)
                if gpus:
                    self.c.take(node, gpus)
                    out.append((node, gpus))
        return out

    def _unmask(self, masked: list[tuple[NodeState, tuple[int, ...]]]) -> None:
        for node, gpus in masked:
            self.c.release(node, gpus)

    def _release(self, key: str) -> None:
        hold = self.holds.pop(key, None)
        if hold is None:
            return                  # an intent without GPUs: it held nothing
        self._index(key, hold, False)
        if hold.tenant is not None and hold.allocs:
            self.held[hold.tenant] -= hold.gpus
            if self.exclusive:
                self._file_units(key, hold, -1)
        for node, gpus in hold.allocs:
            self.c.release(node, gpus)

    # ------------------------------------------------------------------
    # The run
    # ------------------------------------------------------------------

    def run(self) -> Outcome:
        self._refuse_impossible()
        ready: dict[str, int] = {}          # ready intent -> ready time (not started yet)
        for name in sorted(self.jobs):
            if self.pending[name] == 0 and name not in self.out.refusals:
                ready[name] = 0
        t = 0
        first = True
        while True:
            while self.events and self.events[0][0] <= t:
                _, _, key = self.events.pop(0)
                self._release(key)
                if not key.startswith("\0"):
                    self._done(key, t, ready)
            self._offer(t, ready)
            if first:
                self.out.idle_at_start = idle_on_used_nodes(self.c)
                first = False
            if self.events and self.events[0][0] <= t:
                continue
            if not self.events:
                if ready and self.exclusive and not self._isolation_off:
                    # what still waits can never be kept apart (the other tenants' GPUs are
                    # held open-ended): placed without isolation rather than refused, so the
                    # plan's E1020 says why (plan/policy_check.py)
                    self._isolation_off = True
                    continue
                break
            t = self.events[0][0]
        self._refuse_leftovers(ready)
        return self.out

    def _done(self, name: str, t: int, ready: dict[str, int]) -> None:
        """`name` ended (or, for serve, started): what waited only for it is ready at t."""
        for succ in self.succs[name]:
            self.pending[succ] -= 1
            if self.pending[succ] == 0 and succ not in self.out.refusals:
                ready[succ] = t

    def _start(self, name: str, t: int, ready_at: int, placed: Placed | None,
               ready: dict[str, int]) -> None:
        """Start `name` at t (its GPUs, if any, already taken by the placer)."""
        job = self.jobs[name]
        end = None if job.duration is None else t + job.duration
        intent = job.intent
        if placed is None:
            # nothing held: only its end is an event (in the same sequence as a hold's), where
            # what waits for it becomes ready; no hold, key or placement of its own (95 % of
            # the intents at 100,000, docs/reload.md, Memory: the full plan's peak)
            if end is not None:
                self._seq += 1
                self.events.add((end, self._seq, name))
            self.out.seated[name] = self._seat_without_gpus(intent.tenant)
        else:
            placement = Placement(name, intent.tenant, placed.allocations, placed.domains, placed.interconnect)
            nodes = self.c.nodes
            self._hold(name, _Hold(end, intent.tenant, [(nodes[self.node_index[a.node]], a.gpus)
                                                         for a in placement.allocations]), taken=True)
            self.out.seated[name] = Seated(self.reqs[name], placement)
        self.out.times[name] = (t, end, ready_at)
        self._settled(name)
        del ready[name]
        if end is None:
            self._done(name, t, ready)

    def _seat_without_gpus(self, tenant: str) -> Seated:
        """The tenant's shared record of a started intent without GPUs."""
        seat = self._unplaced_seat.get(tenant)
        if seat is None:
            seat = self._unplaced_seat[tenant] = Seated(Request("", tenant, 0, None, None, None, None),
                                                        Placement("", tenant, (), self.spread, "none"))
        return seat

    # ------------------------------------------------------------------
    # Offering the ready intents at one instant
    # ------------------------------------------------------------------

    def _offer(self, t: int, ready: dict[str, int]) -> None:
        changed = True
        while changed:
            changed = False
            for name in sorted(n for n in ready if n not in self.rank):     # no GPUs
                self._start(name, t, ready[name], None, ready)
                changed = True
            if self._offer_gpus(t, ready):
                changed = True

    def _running_per_tenant(self) -> dict[str, int]:
        return {t: n for t, n in self.held.items() if n}

    def _offer_gpus(self, t: int, ready: dict[str, int]) -> bool:
        """Offer the ready GPU intents once, in admission order; True (and stop) when a
        serve with dependants started: they are ready at this same instant."""
        cands = [self.jobs[n].intent for n in ready if n in self.rank]
        if not cands:
            return False
        running = self._running_per_tenant()
        fair = FairShare(self.terms, running)
        gates: dict[Gate, int] = {}             # waiting intents of higher classes -> fewest GPUs
        blocked: dict[Gate, int] = {}           # waiting intents of the class being offered
        # the same per tenant with a quota, for the quota rule (`_quota_gated`): (filter, limit) ->
        # the fewest GPUs (the earliest any of them could start) and the sum (the quota they need)
        quota_gates: dict[str, dict[tuple[Filter, int], tuple[int, int]]] = {}
        quota_blocked: dict[str, dict[tuple[Filter, int], tuple[int, int]]] = {}
        rank = None
        reserved = False                        # the class being offered has its head's reservation

        quota_of = self._quota_of

        def wait(gate: Gate, count: int, tenant: str) -> None:
            """`count` GPUs of `gate` wait: a gate for lower classes, and, for the first intent of
            its class to wait (the head), a reservation against the rest of its class too."""
            nonlocal reserved
            head = not reserved and self._reserves(count)
            if head:
                reserved = True
                if rank is not None:
                    self.heads[rank] = name
                into = gates
            else:
                into = blocked
            if into.get(gate, NEVER) > count:
                into[gate] = count
            if tenant in quota_of:
                per = (quota_gates if head else quota_blocked).setdefault(tenant, {})
                key = (gate[0], gate[1])
                fewest, need = per.get(key, (count, 0))
                per[key] = (min(fewest, count), need + count)
        if self._now != t:
            self._now, self.movable = t, Movable()
        earliest: dict[tuple[Gate, int, int, int], int] = {}
        # the quota rule's bounds, (tenant, filter, GPUs) -> time: computed before later starts of
        # this instant took more, so earlier than or equal to the bound now (conservative)
        quota_bounds: dict[tuple[str, Filter, int], int] = {}
        failed: dict[tuple[Filter, int], tuple[int, int]] = {}   # (filter, limit) -> (version, fewest GPUs)
        # placements undone for a gate: (filter, limit, GPUs, protect) -> (version after the undo, end)
        undone: dict[tuple[Filter, int, int, bool], tuple[int, int | None]] = {}
        for intent in self._heads_first(fair.order(cands, self.wave_of, self.rank, None, self.keys), ready):
            name = intent.name
            r = self.rank[name]
            if r != rank:
                for gate, k in blocked.items():
                    gates[gate] = min(k, gates.get(gate, k))
                for tenant, held_off in quota_blocked.items():
                    per = quota_gates.setdefault(tenant, {})
                    for key, (fewest, need) in held_off.items():
                        was = per.get(key, (fewest, 0))
                        per[key] = (min(was[0], fewest), was[1] + need)
                blocked, quota_blocked = {}, {}
                rank = r
                reserved = self.reserve_heads == "none"
            req = self.reqs[name]
            quota = self.terms[req.tenant].quota_gpus
            view = self._views.get(name)
            if view is None:
                view = self._views[name] = self.c.view(req.filter)
            limit = self.limits[name]
            if quota is not None and running.get(req.tenant, 0) + req.count > quota:
                # waits for its own tenant's intents; lower classes still must not hold what it
                # could use past the later of when its quota and the GPUs could allow it
                wait((req.filter, limit, req.tenant), req.count, req.tenant)
                continue
            duration = self.jobs[name].duration
            end = None if duration is None else t + duration
            waiting = quota_gates.get(req.tenant)
            if waiting and self._quota_gated(req.tenant, running.get(req.tenant, 0) + req.count, end, waiting, t,
                                             quota_bounds):
                wait((req.filter, limit, None), req.count, req.tenant)
                continue
            # only gangs of this class or a higher one may keep domains whole against it
            self.placer.protect_nvlink = self._gangs_waiting_at(r, name)
            if self._surely_gated(req.filter, end, gates, t, earliest):
                wait((req.filter, limit, None), req.count, req.tenant)
                continue
            # isolation units kept off for this intent: its search is its own (no shared memos)
            kept_off = self._kept_off(name, req.tenant) if self.exclusive else []
            memo = (req.filter, limit, req.count, self.placer.protect_nvlink)
            seen = None if kept_off else undone.get(memo)
            if seen is not None and seen[0] == self.c.version and (end is None or (seen[1] is not None
                                                                                    and end >= seen[1])):
                placed = None                   # the same search, same state, no earlier end: undone again
            else:
                placed = self._try_place(req, view, limit, failed, end, gates, t, earliest, kept_off)
            if placed is GATED:
                if not kept_off:
                    undone[memo] = (self.c.version, end)
                placed = None
            if placed is None:
                wait((req.filter, limit, None), req.count, req.tenant)
                continue
            assert isinstance(placed, tuple)
            seat_placed, room = placed
            for moved_name, moved in (room.moved.items() if room else ()):
                old = self.out.seated[moved_name]
                self.out.seated[moved_name] = Seated(old.request, _with(old.placement, moved))
                self.movable.remove(self.node_index[old.placement.allocations[0].node], moved_name)
                self.movable.add(self.node_index[moved.allocations[0].node], self.out.seated[moved_name])
                hold = self.holds[moved_name]
                self._index(moved_name, hold, False)
                hold.allocs = [(self.c.nodes[self.node_index[a.node]], a.gpus) for a in moved.allocations]
                self._index(moved_name, hold, True)
            self._start(name, t, ready[name], seat_placed, ready)
            seat = self.out.seated[name]
            if len(seat.placement.allocations) == 1 and name not in self.pinned and not self.exclusive:
                # (a plan with exclusive intents moves nothing: a move could land another
                # tenant's intent in an isolated domain)
                self.movable.add(self.node_index[seat.placement.allocations[0].node], seat)
            running[req.tenant] = running.get(req.tenant, 0) + req.count
            fair.charge(req.tenant, req.count)
            if end is None and self.succs[name]:
                # its dependants are ready now: offer them with everything not yet started,
                # in admission order, rather than after the rest of this round
                return True
        return False

    def _heads_first(self, order: Iterator[ir.Intent], ready: Mapping[str, int]) -> Iterator[ir.Intent]:
        """`order` with each class's reserved head (`heads`) offered first in its class, so
        its reservation is in place before the rest of its class is offered, and stays
        its own from one instant to the next until it starts (what EASY backfill keeps:
        otherwise a large gang offered after smaller ones is overtaken at every instant)."""
        rank, head = None, None
        for intent in order:
            r = self.rank[intent.name]
            if r != rank:
                rank = r
                head = self.heads.get(r)
                if head is not None and head in ready:
                    yield self.jobs[head].intent
                else:
                    head = None
            if intent.name != head:
                yield intent

    def _reserves(self, count: int) -> bool:
        """Whether a head of its class asking for `count` GPUs gets a reservation
        (`Ordering.reserve`)."""
        if count > self._largest_node:
            return self.reserve_heads != "none"
        return self.reserve_heads == "every"

    def _quota_gated(self, tenant: str, with_it: int, end: int | None,
                     waiting: dict[tuple[Filter, int], tuple[int, int]], t: int,
                     bounds: dict[tuple[str, Filter, int], int]) -> bool:
        """True when starting an intent of `tenant` (its tenant then holding `with_it` GPUs)
        could delay a waiting higher-class intent of the same tenant through the quota, on
        whatever nodes it runs.  When the quota holds it and every waiting one at once, it
        delays none (counting them one at a time is not enough: once one of them starts, the
        rest find less room).  Otherwise it must end by the time any of them could start
        (GPUs anywhere in its filter, quota from what the tenant holds now).  The GPU bound is
        cluster-wide, below the one in any single domain: conservative."""
        quota = self.terms[tenant].quota_gpus
        assert quota is not None
        if with_it + sum(need for _, need in waiting.values()) <= quota:
            return False
        root = self.c.root.id
        for (flt, _), (fewest, _) in waiting.items():
            bound = bounds.get((tenant, flt, fewest))
            if bound is None:
                bound = bounds[(tenant, flt, fewest)] = max(self._earliest(self.c.view(flt), fewest, t, 0, root),
                                                            self._quota_free(tenant, fewest, t))
            if bound < NEVER and (end is None or end > bound):
                return True
        return False

    def _gangs_waiting_at(self, rank: int, name: str) -> bool:
        """True if a gang other than `name`, of class `rank` or a higher one, keeps NVLink
        domains whole (from the count of waiting gangs per class, a handful of classes)."""
        top = min(rank, MAX_RANK)
        n = sum(count for k, count in self._gangs_per_rank.items() if k <= top)
        if n == 0:
            return False
        gangs = self.waiting_gangs
        own = gangs.get(name)
        return n - (1 if own is not None and own <= rank else 0) > 0

    def _try_place(self, req: Request, view: View, limit: int,
                   failed: dict[tuple[Filter, int], tuple[int, int]], end: int | None, gates: dict[Gate, int],
                   t: int, earliest: dict[tuple[Gate, int, int, int], int], kept_off: list[int]
                   ) -> tuple[Placed, Room | None] | Gated | None:
        """Place `req` now (moving same-instant jobs if that makes room), or None; GATED when
        it would fit but would hold GPUs a waiting higher class could use (`_clears_gates`):
        then nothing was taken.  The gates are checked on where the gang would go before
        any GPU is taken, so a refused try costs a search, not a take and an undo.
        `kept_off`: isolation units whose GPUs the search must not see (taken for the
        search only; the gates are then checked on the cluster as it is)."""
        key = (req.filter, limit)
        seen = None if kept_off else failed.get(key)
        if seen is not None and seen[0] == self.c.version and req.count >= seen[1]:
            return None                         # the same search failed for fewer GPUs, nothing changed since
        masked = self._mask(kept_off) if kept_off else []
        try:
            located = self.placer.locate(req, view, limit) if view.free[self.c.root.id] >= req.count else None
        finally:
            self._unmask(masked)
        if located is not None:
            shares = [(self.node_index[n.spec.name], k) for n, k in located[1]]
            if not self._clears_gates([(shares, end)], gates, t, earliest, taken=False):
                return GATED
            return self.placer.commit(*located), None
        movable = self.movable
        if movable.on and movable.reaches(view, self.c.nodes, req.count, req.count - view.free[self.c.root.id]):
            room = make_room(self.placer, req, view, limit, movable)
            if room is not None:
                items = [(self._shares(room.placed.allocations), end)]
                items += [(self._shares(moved.allocations), self.out.times[name][1])
                          for name, moved in room.moved.items()]
                if not self._clears_gates(items, gates, t, earliest, taken=True):
                    self._undo((room.placed, room))
                    return GATED
                return room.placed, room
        if not kept_off:
            failed[key] = (self.c.version, min(req.count, seen[1]) if seen and seen[0] == self.c.version
                           else req.count)
        return None

    def _shares(self, allocs: tuple[NodeAllocation, ...]) -> list[tuple[int, int]]:
        return [(self.node_index[a.node], len(a.gpus)) for a in allocs]

    def _undo(self, placed: tuple[Placed, Room | None]) -> None:
        seat_placed, room = placed
        nodes = self.c.named
        for a in seat_placed.allocations:
            self.c.release(nodes[a.node], a.gpus)
        if room is not None:
            for moved_name, moved in room.moved.items():
                for a in moved.allocations:
                    self.c.release(nodes[a.node], a.gpus)
                for a in self.out.seated[moved_name].placement.allocations:
                    self.c.take(nodes[a.node], a.gpus)

    def _clears_gates(self, items: list[tuple[list[tuple[int, int]], int | None]], gates: dict[Gate, int],
                      t: int, earliest: dict[tuple[Gate, int, int, int], int], taken: bool) -> bool:
        """True if nothing about to be placed (or moved) would hold GPUs in a domain where a
        waiting higher-class intent could start before they are released.

        `items`: (node index, GPUs) per node and the end, for the gang and for each job moved
        to make room for it; `taken`: whether those GPUs are taken already (a repack) or not.
        A waiting intent needs k free GPUs inside one domain at its `within` depth.  In a
        domain d that cannot have k of its GPUs free before time e_d (what is free now plus
        what the running intents release by then; new starts only take more), anything that
        ends by e_d is gone before the waiting intent could use d, so it delays nothing."""
        if not gates:
            return True
        nodes = self.c.nodes
        for gate, k in gates.items():
            flt, limit, _ = gate
            view = self.c.view(flt)
            # the bound is for a world without what is being placed now: its GPUs count as free
            tentative: dict[int, int] = {}
            for shares, _ in items:
                for i, n in shares:
                    if view.eligible[i]:
                        d = nodes[i].leaf.at_depth(limit).id
                        tentative[d] = tentative.get(d, 0) + n
            for shares, until in items:
                for i, _ in shares:
                    if not view.eligible[i]:
                        continue
                    domain = nodes[i].leaf.at_depth(limit).id
                    key = (gate, k, domain, tentative[domain])
                    bound = earliest.get(key)
                    if bound is None:
                        extra = tentative[domain] if taken else 0
                        bound = earliest[key] = max(self._earliest(view, k, t, limit, domain, extra),
                                                    self._quota_free(gate[2], k, t))
                    if bound < NEVER and (until is None or until > bound):
                        return False
        return True

    def _surely_gated(self, flt: Filter, end: int | None, gates: dict[Gate, int], t: int,
                      earliest: dict[tuple[Gate, int, int, int], int]) -> bool:
        """True when every node this request could use is one a cluster-wide gate covers past
        `end`: then any placement would be undone, so do not search."""
        for gate, k in gates.items():
            if gate[1] != 0:
                continue                        # bounds differ per domain: decided after placing
            sub = self._subset.get((flt, gate[0]))
            if sub is None:
                mine, theirs = self.c.view(flt).eligible, self.c.view(gate[0]).eligible
                sub = self._subset[(flt, gate[0])] = all(b for a, b in zip(mine, theirs) if a)
            if not sub:
                continue
            root = self.c.root.id
            bound = earliest.get((gate, k, root, 0))
            if bound is None:
                bound = earliest[(gate, k, root, 0)] = max(self._earliest(self.c.view(gate[0]), k, t, 0, root),
                                                           self._quota_free(gate[2], k, t))
            if bound < NEVER and (end is None or end > bound):
                return True
        return False

    def _earliest(self, view: View, k: int, t: int, depth: int, domain: int, extra: int = 0) -> int:
        """A lower bound on when k GPUs of `view` can be free inside `domain` (at `depth`):
        now, or when enough of them have been released by what is running now (`extra`: GPUs
        taken but not running yet, counted as free)."""
        if view.cap[domain] < k:
            return NEVER                        # never in this domain: nothing here can delay it
        free = view.free[domain] + extra
        if free >= k:
            return t
        if depth > 0:
            # this domain's releases only, in the same (end, sequence) order as the events
            under = self._under.get(domain)
            if under is None:
                under = self._under[domain] = self._nodes_under(domain)
            on_node = self._on_node
            for end, _, n in sorted(e for i in under if view.eligible[i] for e in on_node[i].values()):
                free += n
                if free >= k:
                    return end
            return NEVER
        for end, _, key in self._by_end():
            hold = self.holds.get(key)
            if hold is None:
                continue
            for node, g in hold.allocs:
                if view.eligible[self.node_index[node.spec.name]]:
                    free += len(g)
            if free >= k:
                return end
        return NEVER

    def _nodes_under(self, domain: int) -> list[int]:
        """Node indices inside a domain, in node order."""
        out: list[int] = []
        stack = [self.c.domains[domain]]
        while stack:
            d = stack.pop()
            if d.node is not None:
                out.append(self.node_index[d.node.spec.name])
            stack += d.children
        return sorted(out)

    def _quota_free(self, tenant: str | None, k: int, t: int) -> int:
        """For an intent waiting for its tenant's quota: when the tenant's running intents
        have released enough of it (a lower bound on its start); t for any other."""
        if tenant is None:
            return t
        quota = self.terms[tenant].quota_gpus
        held = self.held.get(tenant, 0)
        if quota is None or held + k <= quota:
            return t
        for end, _, key in self._by_end():
            hold = self.holds.get(key)
            if hold is not None and hold.tenant == tenant and hold.allocs:
                held -= hold.gpus
                if held + k <= quota:
                    return end
        return NEVER

    def _by_end(self) -> SortedList:
        """The pending releases in time order."""
        return self.events

    # ------------------------------------------------------------------
    # Refusals
    # ------------------------------------------------------------------

    def _refuse(self, name: str, refused: Refused, span: Span) -> None:
        intent = self.jobs[name].intent
        self.out.unplaced.append(Unplaced(name, intent.tenant, refused.reason, refused.message))
        self.out.refusals[name] = refused.reason
        self.out.diags.append(error("E0601", refused.message, span, hint=refused.hint))
        self._settled(name)

    def _settled(self, name: str) -> None:
        """`name` no longer competes for nodes (started or refused)."""
        rank = self.waiting_gangs.pop(name, None)
        if rank is not None:
            self._gangs_per_rank[rank] -= 1
        req = self.reqs.get(name)
        if req is not None and req.filter in self.placer.demand:
            self.placer.add_demand(req.filter, -1)

    def _refuse_impossible(self) -> None:
        for name in sorted(self.jobs):
            intent = self.jobs[name].intent
            if intent.gpu_count <= 0:
                continue
            req = self.reqs[name]
            checked = self.placer.check(req)
            if isinstance(checked, Refused):
                self._refuse(name, checked, self.spans[name])
                continue
            too_big = over_quota(req, self.terms[req.tenant].quota_gpus)
            if too_big is not None:
                self._refuse(name, too_big, self.spans[name])
        self._refuse_dependants(sorted(self.out.refusals))

    def _refuse_dependants(self, roots: list[str]) -> None:
        stack = list(roots)
        while stack:
            name = stack.pop()
            for succ in self.succs[name]:
                if succ in self.out.refusals or succ in self.out.seated:
                    continue
                intent = self.jobs[succ].intent
                self._refuse(succ, waits_for_refused(succ, name), intent.span)
                stack.append(succ)

    def _refuse_leftovers(self, ready: dict[str, int]) -> None:
        """Still waiting when nothing finite runs any more: held open-ended, never placed."""
        left = sorted(ready)
        for name in left:
            req = self.reqs[name]
            view = self.c.view(req.filter)
            quota = self.terms[req.tenant].quota_gpus
            held = self._running_per_tenant().get(req.tenant, 0)
            if quota is not None and held + req.count > quota:
                refused = Refused("quota", f"cannot place {req.describe()}: tenant {req.tenant} holds {held} of "
                                           f"its {quota} GPUs open-ended (serve intents that never end)",
                                  "raise the tenant's GPU quota, or lower the count")
            else:
                refused = self.placer.refuse_now(req, view, self.c.depth_of(req.within) if req.within else 0)
                refused = Refused(refused.reason, refused.message + " once every finite intent has ended "
                                  "(the rest are held open-ended)", refused.hint)
            del ready[name]
            self._refuse(name, refused, self.spans[name])
        self._refuse_dependants(left)


def _with(p: Placement, moved: Placement) -> Placement:
    return Placement(p.intent, p.tenant, moved.allocations, moved.domains, moved.interconnect)

