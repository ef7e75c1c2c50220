"""Incremental re-planning: re-place only the intents an edit touches (pure).

The full planner (`planner.make_plan`) is one global event simulation: at
100,000 intents it takes minutes, far over what a hot reload may spend.  An
edit to one intent's GPU count, SLA, duration or product can only change
*that* intent and the intents that wait for it (`after` / data edges,
transitively): everything else may keep its placement and its interval.
`PlanIndex.replan` does exactly that:

1. every untouched intent keeps its GPUs and its [start, end) as fixed
   occupancy (`PlanIndex` keeps them per node, and per tenant as a
   timeline for quotas);
2. the touched intents are taken out and placed again, dependencies first,
   then by SLA class, smaller gangs, name: each at the earliest instant at
   or after it is ready (its dependencies have ended, or a `serve` one has
   started) where, for its whole interval, its tenant stays within quota
   and the topology search (`Placer`, the full planner's BestFit with the
   same filters, `within` limits and GPU-set choice) finds the gang room
   among the GPUs no kept interval overlaps.  The candidate instants are
   the moment it is ready and every later release on a node it may use:
   only there can a placement become possible;
3. the plan's numbers (tenant peaks and GPU-time, makespan, critical
   path, fragmentation at time 0, strategies of the intents sharing a
   domain with what moved, batch sizes, waves) are patched from the same
   indexes.

The shape of the program may change too.  The index keeps the dependency
graph's (predecessors and successors per intent, producers and consumers
per dataset, waves), so an edit may add intents, remove them, change their
`after` or data edges, and change tenants' terms: the edges are recomputed
for the intents whose edges can have changed (`_edges`), and the touched
set is the edited intents, those whose edge set changed and everything that
waits for them in the new graph.  A removed intent's occupancy is released;
a tenant's new quota must hold for its kept intervals.

The result keeps every invariant of a full plan: no GPU held twice at
overlapping times, quotas at every instant, product/memory filters and
`within`, gangs all or nothing, dependencies.  It is not the plan a full
re-plan would make — nothing untouched moves to make room, and admission
order (fair share, gates that keep a lower class off GPUs a waiting higher
class could use) is applied among the touched intents only — so the
caller runs the full planner afterwards and swaps its plan in if it
differs (`intentc/daemon/reload`, docs/reload.md).

A touched intent that can never be placed (no node of its product, no
domain big enough, more than its tenant's quota) is refused as the full
planner refuses it, with the intents waiting for it: the same E0601
messages, hints and positions (`Refusal`).  Anything it cannot do exactly
says so with a reason and nothing changes (`Fallback`): a touched intent
that finds no room without moving others, a new dependency cycle or a
dataset produced twice (the full planner reports them), a lowered quota a
kept interval is over, an undeclared tenant, exclusive-domain tag rules
(checked plan-wide).  The caller then runs the full planner.

`replan` leaves the index as it was; `apply` moves it to the new plan once
the caller has swapped that plan in.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx

from intentc import ir
from intentc.diagnostics import Diagnostic, Span, error
from intentc.graph import digraph
from intentc.plan.admission import TenantTerms, sla_name, sla_rank, tenant_weight
from intentc.plan.batch_size import size_batches
from intentc.plan.cluster import Cluster, NodeState
from intentc.plan.metrics import critical_paths, jain_index
from intentc.plan.model import BatchSizing, Placement, Plan, Strategy, TenantShare, Unplaced
from intentc.plan.observation import without_observed
from intentc.plan.placer import Placer, Refused, Request, over_quota, waits_for_refused
from intentc.plan.planner import (
    duration_warning,
    gpus_span,
    matrix_source,
    nvlink_unmet,
    tenant_terms,
    unmet_preference,
)
from intentc.plan.strategy import chosen, decide_one, domains_of
from intentc.policy import Policies, Requirement
from intentc.topology.load import LoadedTopology

DomainKey = tuple[str, str]


def _produced(intent: ir.Intent | None) -> set[str]:
    return {r.name for r in intent.produces} if intent is not None else set()


def _consumed(intent: ir.Intent | None) -> set[str]:
    return {r.name for r in intent.consumes} if intent is not None else set()


@dataclass(frozen=True)
class Edges:
    """The dependency edges an edit changed, as overlays on the index's (`apply` folds them in).

    `preds` / `succs`: the new predecessor / successor names of every intent whose set
    changed (empty for a removed intent); `producers` / `consumers`: the same per dataset."""

    preds: Mapping[str, tuple[str, ...]]
    succs: Mapping[str, tuple[str, ...]]
    producers: Mapping[str, tuple[str, ...]]
    consumers: Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class Fallback:
    """Why an edit needs the full planner."""

    reason: str


@dataclass(frozen=True)
class Refusal:
    """A touched intent that can never be placed (no node of its product, no domain big
    enough, more than its tenant's quota), or that waits for one: E0601 as the full planner
    says it, so the reload reports what a full compile reports."""

    unplaced: Unplaced
    diagnostic: Diagnostic

    @classmethod
    def of(cls, intent: ir.Intent, refused: Refused, span: Span | None = None) -> Refusal:
        return cls(Unplaced(intent.name, intent.tenant, refused.reason, refused.message),
                   error("E0601", refused.message, span or gpus_span(intent), hint=refused.hint))


@dataclass(frozen=True)
class Replanned:
    """An incremental plan and what it took."""

    plan: Plan
    replaced: tuple[str, ...]                  # the touched intents, placed again (sorted)
    diagnostics: tuple[Diagnostic, ...]        # the plan's findings for every intent of `files`
    files: frozenset[str]                      # files whose plan findings these replace
    moved: frozenset[str]                      # intents whose placement, batch or strategy changed
    # for `apply`: the new intents, placements, longest chains
    intents: Mapping[str, ir.Intent]
    placements: Mapping[str, Placement]
    dist: Mapping[str, int]
    prev: Mapping[str, str | None]
    gone: frozenset[str] = frozenset()         # intents removed by the edit
    edges: Edges | None = None                 # the dependency edges the edit changed
    waves: Mapping[str, int] = field(default_factory=dict)   # the touched intents' waves
    terms: Mapping[str, TenantTerms | None] = field(default_factory=dict)  # changed tenants (None: gone)


@dataclass(frozen=True)
class Edit:
    """What one `replan` applies: the new and edited intents, the removed ones, the edges
    that changed (and the predecessors in force with them), the tenants' changed terms."""

    fresh: Mapping[str, ir.Intent]
    gone: frozenset[str]
    edges: Edges
    preds: Mapping[str, tuple[str, ...]]
    terms: Mapping[str, TenantTerms | None]


def _mask(gpus: Iterable[int]) -> int:
    m = 0
    for g in gpus:
        m |= 1 << g
    return m


def _peak(deltas: Mapping[int, int]) -> int:
    """The most held at one instant, from time -> change (ends and starts at one instant net out)."""
    held = peak = 0
    for t in sorted(deltas):
        held += deltas[t]
        peak = max(peak, held)
    return peak


def _bump(d: dict[Any, int], key: Any, delta: int) -> None:
    v = d.get(key, 0) + delta
    if v:
        d[key] = v
    else:
        d.pop(key, None)


class PlanIndex:
    """A plan as fixed occupancy, kept up to date edit by edit (see the module docstring)."""

    def __init__(self, program: ir.Program, plan: Plan, g: nx.DiGraph, topology: LoadedTopology, seed: int,
                 policies: Policies) -> None:
        loaded = without_observed(topology)
        self.topology = loaded.topology
        self.cluster = Cluster(loaded.topology, matrix_source(loaded), seed)
        self.placer = Placer(self.cluster)
        self.policies = policies
        self.intents: dict[str, ir.Intent] = digraph.unique_intents(program)
        self.terms: dict[str, TenantTerms] = tenant_terms(program, list(self.intents.values()))
        self.preds = {n: tuple(sorted(g.predecessors(n))) for n in g if g.in_degree(n)}
        self.succs = {n: tuple(sorted(g.successors(n))) for n in g if g.out_degree(n)}
        # dataset -> the intents producing / consuming it: whose edges an edit of `produces` changes
        self.producers: dict[str, tuple[str, ...]] = {}
        self.consumers: dict[str, frozenset[str]] = {}
        producers: dict[str, list[str]] = {}
        consumers: dict[str, set[str]] = {}
        for n, i in self.intents.items():
            for d in _produced(i):
                producers.setdefault(d, []).append(n)
            for d in _consumed(i):
                consumers.setdefault(d, set()).add(n)
        self.producers = {d: tuple(sorted(ps)) for d, ps in producers.items()}
        self.consumers = {d: frozenset(cs) for d, cs in consumers.items()}
        self.exclusive = frozenset(n for n, i in self.intents.items()
                                   if policies.requires(i, Requirement.EXCLUSIVE_DOMAIN))
        durations = {n: digraph.duration_seconds(i) for n, i in self.intents.items()}
        self.dist, self.prev = digraph.longest_chains(g, durations)
        # chain ends, longest first (ties: smallest name): the critical path's end is the first
        # entry whose length is still the intent's (entries of changed lengths are dropped lazily)
        self.longest: list[tuple[int, str]] = [(-d, n) for n, d in self.dist.items()]
        heapq.heapify(self.longest)
        self.nodes: dict[str, NodeState] = {n.spec.name: n for n in self.cluster.nodes}
        self.full = {name: (1 << n.capacity) - 1 for name, n in self.nodes.items()}
        self.domains = domains_of(self.topology)
        self.node_domains: dict[str, tuple[DomainKey, ...]] = {
            n.name: (("node", n.name), *((lvl, d) for lvl, d in n.domains if lvl != "node")) for n in self.topology.nodes}
        self.rebase(plan)
        for flt in sorted({Request.of(i).filter for i in self.intents.values() if i.gpu_count > 0},
                          key=lambda f: (f.product or "", f.memory or 0)):
            self.cluster.view(flt)      # made now, not by the first edit that needs it

    def rebase(self, plan: Plan) -> None:
        """Make this the index of `plan`, a full plan of the program it indexes: the waves and
        the occupancy are filed from it; what follows from the program alone (intents, edges,
        chains, tenants' terms, the scratch cluster and its views) is kept.  The background
        full re-plan rebases the index in force instead of building a second index and
        dependency graph beside it (a second copy of both at the peak, docs/reload.md, Memory)."""
        self.plan = plan
        self.wave: dict[str, int] = {n: k for k, names in enumerate(plan.waves) for n in names}
        # occupancy: per node, intent -> (start, end, GPU mask); per tenant and overall, time -> change
        self.holds: dict[str, dict[str, tuple[int, int | None, int]]] = {n: {} for n in self.nodes}
        self.timeline: dict[str, dict[int, int]] = {}
        self.total: dict[int, int] = {}
        self.ends: dict[int, int] = {}             # finite end times -> how many (the makespan)
        self.held0: dict[str, int] = {}            # GPUs taken at plan time 0, per node
        self.used: dict[str, int] = {}             # GPUs planned per node over the plan (strategies)
        self.by_domain: dict[DomainKey, set[str]] = {}
        for p in plan.placements:
            self._add(p, 1)

    # -- occupancy ---------------------------------------------------------------------
    def _add(self, p: Placement, sign: int) -> None:
        """File (sign 1) or unfile (-1) one placement in every index."""
        if p.end_s is not None:
            _bump(self.ends, p.end_s, sign)
        if not p.allocations:
            return
        k = p.gpu_count * sign
        line = self.timeline.setdefault(p.tenant, {})
        for deltas in (line, self.total):
            _bump(deltas, p.start_s, k)
            if p.end_s is not None:
                _bump(deltas, p.end_s, -k)
        for a in p.allocations:
            on = self.holds[a.node]
            if sign > 0:
                on[p.intent] = (p.start_s, p.end_s, _mask(a.gpus))
            else:
                del on[p.intent]
            _bump(self.used, a.node, len(a.gpus) * sign)
            if p.start_s == 0:
                _bump(self.held0, a.node, len(a.gpus) * sign)
        key = chosen(p)
        members = self.by_domain.setdefault(key, set())
        if sign > 0:
            members.add(p.intent)
        else:
            members.discard(p.intent)

    def _free(self, node: str, start: int, end: int | None) -> int:
        """GPUs of `node` no kept interval overlaps within [start, end) (None: open-ended)."""
        taken = 0
        for s, e, m in self.holds[node].values():
            if (end is None or s < end) and (e is None or e > start):
                taken |= m
        return self.full[node] & ~taken

    def _quota_ok(self, tenant: str, k: int, start: int, end: int | None) -> bool:
        """The tenant stays within its quota at every instant of [start, end) with k more GPUs."""
        quota = self.terms[tenant].quota_gpus
        if quota is None:
            return True
        deltas = self.timeline.get(tenant, {})
        level = sum(v for t, v in deltas.items() if t <= start)
        peak = level
        for t in sorted(t for t in deltas if t > start and (end is None or t < end)):
            level += deltas[t]
            peak = max(peak, level)
        return peak + k <= quota

    def _set_free(self, masks: Mapping[str, int]) -> None:
        """Make the scratch cluster's free GPUs on these nodes exactly `masks`."""
        for name, want in masks.items():
            node = self.nodes[name]
            if node.free == want:
                continue
            give = want & ~node.free
            take = node.free & ~want
            if take:
                self.cluster.take(node, tuple(i for i in range(node.capacity) if take >> i & 1))
            if give:
                self.cluster.release(node, tuple(i for i in range(node.capacity) if give >> i & 1))

    def placement(self, name: str) -> Placement | None:
        ps = self.plan.placements
        i = bisect_left(ps, name, key=lambda p: p.intent)
        return ps[i] if i < len(ps) and ps[i].intent == name else None

    # -- one intent --------------------------------------------------------------------
    def _place(self, intent: ir.Intent, ready: int) -> Placement | Refusal | Fallback:
        duration = None if intent.action.kind == ir.ActionKind.SERVE.value else digraph.duration_seconds(intent)
        sla = sla_name(intent)
        if intent.gpu_count <= 0:
            end = None if duration is None else ready + duration
            return Placement(intent.name, intent.tenant, (), tuple((lvl, None) for lvl in self.cluster.levels),
                             "none", ready, end, ready, sla)
        req = Request.of(intent)
        checked = self.placer.check(req)
        if not isinstance(checked, tuple):
            return Refusal.of(intent, checked)
        view, limit = checked
        quota = self.terms[req.tenant].quota_gpus
        too_big = over_quota(req, quota)
        if too_big is not None:
            return Refusal.of(intent, too_big)
        eligible = [name for name, n in self.nodes.items() if view.eligible[self.placer.node_index[name]]]
        domain_of = {name: self.nodes[name].leaf.at_depth(limit).id for name in eligible}
        times = {ready}
        for name in eligible:
            times.update(e for _, e, _ in self.holds[name].values() if e is not None and e > ready)
        if quota is not None:
            times.update(t for t in self.timeline.get(req.tenant, {}) if t > ready)
        for t in sorted(times):
            end = None if duration is None else t + duration
            if not self._quota_ok(req.tenant, req.count, t, end):
                continue
            masks = {name: self._free(name, t, end) for name in eligible}
            # the gang needs that many free GPUs inside one domain at its `within` depth: when
            # none has them, skip the search (and re-marking the scratch cluster) at this instant
            per_domain: dict[int, int] = {}
            for name, m in masks.items():
                d = domain_of[name]
                per_domain[d] = per_domain.get(d, 0) + m.bit_count()
            if max(per_domain.values(), default=0) < req.count:
                continue
            self._set_free(masks)
            located = self.placer.locate(req, view, limit)
            if located is None:
                continue
            placed = self.placer.commit(*located)
            return Placement(intent.name, intent.tenant, placed.allocations, placed.domains, placed.interconnect,
                             t, end, ready, sla)
        return Fallback(f'"{intent.name}" finds no room once everything finite has ended')

    # -- an edit -----------------------------------------------------------------------
    def touched(self, edited: Iterable[str], succs: Mapping[str, tuple[str, ...]] | None = None) -> set[str]:
        """The edited intents and everything that waits for them, transitively."""
        succs = self.succs if succs is None else succs
        out: set[str] = set()
        stack = list(edited)
        while stack:
            n = stack.pop()
            if n not in out:
                out.add(n)
                stack.extend(succs.get(n, ()))
        return out

    def _order(self, touched: set[str], intent_of: Callable[[str], ir.Intent],
               preds: Mapping[str, tuple[str, ...]], succs: Mapping[str, tuple[str, ...]]) -> list[str]:
        """Dependencies first; among the ready ones, SLA class, smaller gangs, name.  An
        intent on a cycle is never ready: it is left out (the caller checks the length)."""
        pending = {n: sum(1 for p in preds.get(n, ()) if p in touched) for n in touched}

        def key(n: str) -> tuple[int, int, str]:
            i = intent_of(n)
            return sla_rank(i), i.gpu_count, n
        heap = [key(n) for n, k in pending.items() if k == 0]
        heapq.heapify(heap)
        out = []
        while heap:
            n = heapq.heappop(heap)[2]
            out.append(n)
            for s in succs.get(n, ()):
                if s in pending:
                    pending[s] -= 1
                    if pending[s] == 0:
                        heapq.heappush(heap, key(s))
        return out

    def _edges(self, fresh: Mapping[str, ir.Intent], gone: frozenset[str]) -> Edges:
        """The edges `digraph.dependencies` would give the edited program, for the intents whose
        edges can have changed: the edited, new and removed ones, the consumers of a dataset
        whose producers changed, and what waited for a removed intent."""
        changed = fresh.keys() | gone
        datasets: set[str] = set()
        for n in changed:
            datasets |= _produced(self.intents.get(n)) ^ _produced(fresh.get(n))
        producers = {d: tuple(sorted({p for p in self.producers.get(d, ()) if p not in changed}
                                     | {n for n, i in fresh.items() if d in _produced(i)})) for d in datasets}
        consumers: dict[str, frozenset[str]] = {}
        for n in changed:
            was, now = _consumed(self.intents.get(n)), _consumed(fresh.get(n))
            for d in was ^ now:
                cs = set(consumers.get(d, self.consumers.get(d, frozenset())))
                if d in now:
                    cs.add(n)
                else:
                    cs.discard(n)
                consumers[d] = frozenset(cs)
        candidates = set(fresh)
        for d in datasets:
            candidates |= consumers.get(d, self.consumers.get(d, frozenset()))
        for g in gone:
            candidates.update(self.succs.get(g, ()))
        candidates -= gone

        def exists(name: str) -> bool:
            return name in fresh or (name in self.intents and name not in gone)
        preds: dict[str, tuple[str, ...]] = {g: () for g in gone}
        for c in sorted(candidates):
            i = fresh.get(c) or self.intents[c]
            ps = {r.name for r in i.trigger.after if exists(r.name)}
            for r in i.consumes:
                ps.update(producers.get(r.name, self.producers.get(r.name, ())))
            got = tuple(sorted(ps))
            if got != self.preds.get(c, ()):
                preds[c] = got
        succs: dict[str, set[str]] = {}
        for c, after in preds.items():
            for u in set(self.preds.get(c, ())) ^ set(after):
                ss = succs.setdefault(u, set(self.succs.get(u, ())))
                if u in after:
                    ss.add(c)
                else:
                    ss.discard(c)
        for g in gone:
            succs[g] = set()
        return Edges(preds, {u: tuple(sorted(ss)) for u, ss in succs.items()}, producers, consumers)

    def _terms(self, tenants: Mapping[str, ir.Tenant | None], fresh: Mapping[str, ir.Intent],
               gone: frozenset[str]) -> dict[str, TenantTerms | None] | Fallback:
        """The terms of the tenants declared, changed or dropped by the edit (None: no longer
        a tenant of the plan), as `planner.tenant_terms` makes them."""
        out: dict[str, TenantTerms | None] = {}
        for name, t in sorted(tenants.items()):
            if t is None:
                # still a tenant of the plan while an intent names it (it is then undeclared: E0301)
                users = any(i.tenant == name for i in fresh.values()) or any(
                    p.tenant == name for p in self.plan.placements if p.intent not in gone and p.intent not in fresh)
                out[name] = TenantTerms(tenant_weight(None), None) if users else None
            else:
                quota = t.quota_gpus if t.quota_gpus is not None and t.quota_gpus > 0 else None
                out[name] = TenantTerms(tenant_weight(t), quota)
        for i in fresh.values():
            if i.tenant not in self.terms and i.tenant not in out:
                return Fallback(f'tenant "{i.tenant}" is not declared')
        return {n: t for n, t in out.items() if t != self.terms.get(n)}

    def replan(self, edited: Sequence[ir.Intent], file_intents: Callable[[str], Sequence[ir.Intent]],
               recheck: Iterable[str] = (), removed: Iterable[str] = (),
               tenants: Mapping[str, ir.Tenant | None] | None = None) -> Replanned | Fallback:
        """The plan with `edited` (new versions of intents of the plan, or new intents) placed
        again, `removed` (names) dropped and `tenants` (the tenants the edit declared,
        changed or dropped: None) in force, with every intent whose dependency edges changed
        and everything that waits for those; the index is left as it was.

        `file_intents(file)` gives every intent declared in a file: the plan findings of each
        file an edited, re-placed or removed intent lives in (and of the `recheck` files,
        edited without a planner change but whose positions may have moved) are made again."""
        if self.exclusive or any(self.policies.requires(i, Requirement.EXCLUSIVE_DOMAIN) for i in edited):
            return Fallback("exclusive-domain tag rules are checked plan-wide")
        fresh = {i.name: i for i in edited}
        gone = frozenset(n for n in removed if n not in fresh)
        if any(n not in self.intents for n in gone):
            return Fallback("a removed intent is not in the plan in force")
        terms = self._terms(tenants or {}, fresh, gone)
        if isinstance(terms, Fallback):
            return terms
        edges = self._edges(fresh, gone)
        if any(len(ps) > 1 for ps in edges.producers.values()):
            return Fallback("a dataset is produced by more than one intent (the full planner reports it)")
        preds: Mapping[str, tuple[str, ...]] = ChainMap(dict(edges.preds), self.preds)
        succs: Mapping[str, tuple[str, ...]] = ChainMap(dict(edges.succs), self.succs)

        def intent_of(n: str) -> ir.Intent:
            return fresh.get(n) or self.intents[n]
        touched = self.touched(fresh.keys() | (edges.preds.keys() - gone), succs)
        order = self._order(touched, intent_of, preds, succs)
        if len(order) != len(touched):
            return Fallback("the edit makes a dependency cycle")
        old = {n: p for n in (*order, *sorted(gone)) if (p := self.placement(n)) is not None}
        if len(old) != len(gone) + sum(1 for n in order if n in self.intents):
            return Fallback("an intent to re-place has no placement in the plan in force")
        for p in old.values():
            self._add(p, -1)
        kept_terms = {n: self.terms.get(n) for n in terms}
        self._set_terms(terms)
        new: dict[str, Placement] = {}
        refused: dict[str, Refusal] = {}
        blocked: set[str] = set()       # waits, at any depth, for a refused intent: refused below
        try:
            for name, t in terms.items():
                # a kept interval over a tenant's new quota: only moving it could fix that
                if t is not None and t.quota_gpus is not None and _peak(self.timeline.get(name, {})) > t.quota_gpus:
                    return Fallback(f'tenant "{name}" holds more than its new quota in the plan in force')
            for n in order:
                if any(d in refused or d in blocked for d in preds.get(n, ())):
                    # refused below, as the full planner does; and so is what waits for it,
                    # which must not be placed after the placement its predecessor loses
                    blocked.add(n)
                    continue
                ready = 0
                for d in preds.get(n, ()):
                    q = new.get(d) or self.placement(d)
                    if q is None:
                        return Fallback(f'"{d}", which "{n}" waits for, has no placement')
                    ready = max(ready, q.start_s if q.end_s is None else q.end_s)
                got = self._place(intent_of(n), ready)
                if isinstance(got, Fallback):
                    return got
                if isinstance(got, Refusal):
                    refused[n] = got
                    continue
                new[n] = got
                self._add(got, 1)
            self._refuse_dependants(refused, touched, intent_of, succs)
            return self._assemble(Edit(fresh, gone, edges, preds, terms), order, old, new, refused, intent_of,
                                  file_intents, set(recheck))
        finally:
            for p in new.values():
                self._add(p, -1)
            self._set_terms(kept_terms)
            for p in old.values():
                self._add(p, 1)

    def _set_terms(self, terms: Mapping[str, TenantTerms | None]) -> None:
        for name, t in terms.items():
            if t is None:
                self.terms.pop(name, None)
            else:
                self.terms[name] = t

    def _refuse_dependants(self, refused: dict[str, Refusal], touched: set[str],
                           intent_of: Callable[[str], ir.Intent], succs: Mapping[str, tuple[str, ...]]) -> None:
        """What waits for a refused intent is refused too, in the full planner's words and
        walk (`schedule.Simulation._refuse_dependants`: roots by name, a stack)."""
        stack = sorted(refused)
        while stack:
            name = stack.pop()
            for succ in succs.get(name, ()):
                if succ in refused or succ not in touched:
                    continue
                intent = intent_of(succ)
                refused[succ] = Refusal.of(intent, waits_for_refused(succ, name), intent.span)
                stack.append(succ)

    def _assemble(self, edit: Edit, order: list[str], old: dict[str, Placement], new: dict[str, Placement],
                  refused: dict[str, Refusal], intent_of: Callable[[str], ir.Intent],
                  file_intents: Callable[[str], Sequence[ir.Intent]], recheck: set[str]) -> Replanned:
        """The new plan, from the indexes in their new state (called between `_add`s)."""
        plan, fresh, gone = self.plan, edit.fresh, edit.gone
        changes: dict[str, Placement | None] = {n: new.get(n) for n in order}
        changes.update({n: None for n in gone})
        placements = patched_by_intent(plan.placements, changes)
        # strategies of every placed intent sharing a domain with a node whose planned GPUs changed
        nodes = {a.node for p in (*old.values(), *new.values()) for a in p.allocations}
        affected = {n for n in new if new[n].allocations}
        for node in nodes:
            for key in self.node_domains.get(node, ()):
                affected |= self.by_domain.get(key, set())
        placed = {n: new[n] if n in new else self.placement(n) for n in affected}
        strategies: dict[str, Strategy | None] = {n: None for n in (*order, *gone)}
        strategies.update({n: decide_one(intent_of(n), p, self.used, self.domains)
                           for n, p in placed.items() if p is not None and p.allocations})
        strategies = {n: s for n, s in strategies.items() if s != by_intent(plan.strategies, n)}
        # findings, batch sizes: every intent of the files concerned
        files = {intent_of(n).span.file for n in order} | {self.intents[n].span.file for n in gone} | recheck
        again = {i.name: fresh.get(i.name, i) for f in sorted(files) for i in file_intents(f)}
        placed_again = {n: new.get(n) or self.placement(n) for n in again}
        batches, batch_diags = size_batches(again.values(), [p for p in placed_again.values() if p is not None],
                                            self.topology)
        batch_of: dict[str, BatchSizing | None] = {n: None for n in (*order, *gone)}
        batch_of.update({b.intent: b for b in batches if b.intent in new})
        diags: list[Diagnostic] = list(batch_diags) + [r.diagnostic for _, r in sorted(refused.items())]
        for n, intent in sorted(again.items()):
            d = duration_warning(intent)
            if d is not None:
                diags.append(d)
            p = placed_again[n]
            if p is not None and p.allocations:
                req = Request.of(intent)
                for w in (unmet_preference(req, self.placer, p, intent), nvlink_unmet(req, p, intent)):
                    if w is not None:
                        diags.append(w)
        dist, prev = self._chains(order, intent_of, edit.preds)
        path, path_s = self._critical(dist, prev, gone)
        unplaced = patched_by_intent(plan.unplaced, {n: r.unplaced for n, r in refused.items()})
        waves, wave_of = self._waves(order, edit)
        refused_path: tuple[str, ...] = ()
        refused_s = 0
        if unplaced:
            # the critical path counts only intents that run (metrics.critical_paths), the
            # refused chain apart: both over the whole program, as the full planner makes them
            path, path_s, refused_path, refused_s = self._paths_with_refusals(
                waves, edit.preds, intent_of, {u.intent for u in unplaced})
        shares = self._shares(edit, old, new)
        m = plan.metrics
        pairs = [(old.get(n), new.get(n)) for n in (*order, *gone)]
        metrics = replace(
            m, gpus_allocated=_peak(self.total), idle_gpus_on_used_nodes=self._idle(),
            jobs_spanning_nvlink_domains=m.jobs_spanning_nvlink_domains
            + sum(_network(p) - _network(o) for o, p in pairs),
            jain_fairness=jain_index(shares), makespan_s=max(self.ends, default=0),
            critical_path=path, critical_path_s=path_s,
            queued=m.queued + sum(_queued(p) - _queued(o) for o, p in pairs),
            gpu_seconds=m.gpu_seconds + sum(_gpu_s(p) - _gpu_s(o) for o, p in pairs),
            refused_path=refused_path, refused_path_s=refused_s)
        out = replace(plan, waves=waves, placements=placements, unplaced=unplaced, tenants=shares, metrics=metrics,
                      batches=patched_by_intent(plan.batches, batch_of), strategies=patched_by_intent(plan.strategies, strategies))
        moved = {n for n in order if new.get(n) != old.get(n)} | set(strategies) | {
            n for n, b in batch_of.items() if b != by_intent(plan.batches, n)} | {
            n for n, w in wave_of.items() if w != self.wave.get(n)}
        return Replanned(out, tuple(sorted(order)), tuple(diags), frozenset(files), frozenset(moved - gone),
                         fresh, dict(new), dist, prev, gone, edit.edges, wave_of, edit.terms)

    def _waves(self, order: list[str], edit: Edit) -> tuple[tuple[tuple[str, ...], ...], dict[str, int]]:
        """`digraph.waves` of the edited program: the touched intents' waves made again (the
        others' ancestors are all kept), the removed ones dropped; only the waves that
        change are copied."""
        wave_of: dict[str, int] = {}
        for n in order:
            wave_of[n] = 1 + max((wave_of.get(p, self.wave.get(p, 0)) for p in edit.preds.get(n, ())), default=-1)
        out = [*self.plan.waves]
        edits: dict[int, list[str]] = {}

        def wave(k: int) -> list[str]:
            """Wave k, copied once per edit (a wave may hold a fifth of the intents)."""
            names = edits.get(k)
            if names is None:
                names = edits[k] = [*out[k]]
            return names
        for n, k in (*((n, self.wave[n]) for n in edit.gone),
                     *((n, self.wave[n]) for n in order if n in self.wave and self.wave[n] != wave_of[n])):
            names = wave(k)
            del names[bisect_left(names, n)]
        for n, k in wave_of.items():
            if self.wave.get(n) != k:
                if k == len(out):
                    out.append(())
                names = wave(k)
                names.insert(bisect_left(names, n), n)
        for k, names in edits.items():
            out[k] = tuple(names)
        while out and not out[-1]:
            out.pop()
        return tuple(out), wave_of

    def _chains(self, order: list[str], intent_of: Callable[[str], ir.Intent],
                preds: Mapping[str, tuple[str, ...]]) -> tuple[dict[str, int], dict[str, str | None]]:
        """The longest chains ending with each touched intent (`digraph.longest_chains`, redone
        for those only: the others' chains do not pass through them)."""
        dist: dict[str, int] = {}
        prev: dict[str, str | None] = {}
        for v in order:
            best: str | None = None
            chain = ChainMap(dist, self.dist)
            for u in preds.get(v, ()):
                if best is None or (-chain[u], u) < (-chain[best], best):
                    best = u
            dist[v] = digraph.duration_seconds(intent_of(v)) + (chain[best] if best else 0)
            prev[v] = best
        return dist, prev

    def _paths_with_refusals(self, waves: tuple[tuple[str, ...], ...], preds: Mapping[str, tuple[str, ...]],
                             intent_of: Callable[[str], ir.Intent], refused: set[str]
                             ) -> tuple[tuple[str, ...], int, tuple[str, ...], int]:
        """The critical path over the intents that run and the longest refused chain, over
        the whole edited program (a pass over every intent: only plans with refusals pay it)."""
        order = [n for wave in waves for n in wave]
        after = ChainMap(dict(preds), self.preds)
        durations = {n: digraph.duration_seconds(intent_of(n)) for n in order}
        return critical_paths(order, lambda n: after.get(n, ()), durations, refused)

    def _critical(self, dist: dict[str, int], prev: dict[str, str | None],
                  gone: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], int]:
        """`digraph.critical_path` over the kept chains and the redone ones (`dist`), without
        the `gone` intents'."""
        best: tuple[int, str] | None = min(((-d, n) for n, d in dist.items()), default=None)
        heap, skipped = self.longest, []
        while heap:
            negd, n = heap[0]
            if self.dist.get(n) != -negd:
                heapq.heappop(heap)                     # a length that changed since: stale
            elif n in dist or n in gone:
                skipped.append(heapq.heappop(heap))     # redone here (its new length is in `best`) or removed
            else:
                if best is None or (negd, n) < best:
                    best = (negd, n)
                break
        for entry in skipped:
            heapq.heappush(heap, entry)
        if best is None:
            return (), 0
        return digraph.chain_end(ChainMap(prev, self.prev), best[1]), -best[0]

    def _shares(self, edit: Edit, old: dict[str, Placement], new: dict[str, Placement]
                ) -> tuple[TenantShare, ...]:
        """`planner`'s tenant shares, patched: requested GPUs of the edited, new and removed
        intents, peaks and GPU-time of the tenants whose occupancy changed, changed terms."""
        requested: dict[str, int] = {}
        gpu_s: dict[str, int] = {}
        for n in (*edit.fresh, *edit.gone):
            if n in edit.fresh:
                i = edit.fresh[n]
                _bump(requested, i.tenant, max(i.gpu_count, 0))
            was = self.intents.get(n)
            if was is not None:
                _bump(requested, was.tenant, -max(was.gpu_count, 0))
        for n, o in old.items():
            _bump(gpu_s, o.tenant, -_gpu_s(o))
        for p in new.values():
            _bump(gpu_s, p.tenant, _gpu_s(p))
        moved = {p.tenant for p in (*old.values(), *new.values()) if p.allocations}
        shares = {s.tenant: s for s in self.plan.tenants}
        for name, t in edit.terms.items():
            if t is None:
                shares.pop(name, None)
            else:
                s = shares.get(name) or TenantShare(name, t.weight, t.quota_gpus, 0, 0, 0)
                shares[name] = replace(s, weight=t.weight, quota_gpus=t.quota_gpus)
        for name in requested.keys() | gpu_s.keys() | moved:
            if (share := shares.get(name)) is None:
                continue                                # dropped with its intents
            shares[name] = replace(share, requested_gpus=share.requested_gpus + requested.get(name, 0),
                                   allocated_gpus=_peak(self.timeline.get(name, {})),
                                   gpu_seconds=share.gpu_seconds + gpu_s.get(name, 0))
        return tuple(shares[n] for n in sorted(shares))

    def _idle(self) -> int:
        """GPUs left free at plan time 0 on nodes that run something then (`metrics.idle_on_used_nodes`)."""
        return sum(self.nodes[n].capacity - k for n, k in self.held0.items() if 0 < k < self.nodes[n].capacity)

    def discard(self) -> None:
        """This index is replaced and never used again: free its cluster's domain tree now
        (`Cluster.unlink`), not at a collection that may never walk it."""
        self.cluster.unlink()

    # -- after the swap ----------------------------------------------------------------
    def refresh(self, intents: Iterable[ir.Intent]) -> None:
        """The current objects of intents edited in what the planner does not read (an image,
        a line moved): findings and refusals about them must point where they are now."""
        for i in intents:
            if i.name in self.intents:
                self.intents[i.name] = i

    def apply(self, done: Replanned) -> None:
        """The index of `done.plan`: call once that plan is in force (a plan that refuses
        something never is: its E0601 fails the reload)."""
        if done.plan.unplaced:
            raise ValueError("a plan with refusals is never in force")
        for n in (*done.placements, *done.gone):
            q = self.placement(n)
            if q is not None:
                self._add(q, -1)
        for p in done.placements.values():
            self._add(p, 1)
        self._set_terms(done.terms)
        self.intents.update(done.intents)
        for n in done.gone:
            del self.intents[n]
            self.dist.pop(n, None)
            self.prev.pop(n, None)
            self.wave.pop(n, None)
        if done.edges is not None:
            _fold(self.preds, done.edges.preds)
            _fold(self.succs, done.edges.succs)
            _fold(self.producers, done.edges.producers)
            _fold(self.consumers, done.edges.consumers)
        self.wave.update(done.waves)
        for n, d in done.dist.items():
            if self.dist.get(n) != d:
                self.dist[n] = d
                heapq.heappush(self.longest, (-d, n))
        self.prev.update(done.prev)
        self.plan = done.plan


def _fold(into: dict[str, Any], changes: Mapping[str, Any]) -> None:
    """Entries set, or dropped when empty (as the index keeps them)."""
    for k, v in changes.items():
        if v:
            into[k] = v
        else:
            into.pop(k, None)


def _network(p: Placement | None) -> int:
    return p is not None and p.interconnect == "network"


def _queued(p: Placement | None) -> int:
    return p is not None and p.start_s > p.ready_s


def _gpu_s(p: Placement | None) -> int:
    return p.gpu_count * (p.end_s - p.start_s) if p is not None and p.end_s is not None else 0


def by_intent(items: tuple[Any, ...], name: str) -> Any:
    """The entry of a tuple sorted by `.intent` for `name`, or None."""
    i = bisect_left(items, name, key=lambda x: x.intent)
    return items[i] if i < len(items) and items[i].intent == name else None


def patched_by_intent(items: tuple[Any, ...], changes: Mapping[str, Any]) -> tuple[Any, ...]:
    """A tuple sorted by `.intent` with entries replaced, added or (None) removed."""
    if not changes:
        return items
    out = list(items)
    for name in sorted(changes):
        new = changes[name]
        i = bisect_left(out, name, key=lambda x: x.intent)
        present = i < len(out) and out[i].intent == name
        if new is None:
            if present:
                del out[i]
        elif present:
            out[i] = new
        else:
            out.insert(i, new)
    return tuple(out)
