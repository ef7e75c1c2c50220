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
   domain with what moved, batch sizes) are patched from the same indexes.

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
says so with a reason and nothing changes (`Fallback`): new or removed
intents, changed dependency edges or tenants (the caller checks those), a
touched intent that finds no room without moving others, exclusive-domain
tag rules (checked plan-wide).  The caller then runs the full planner.

`replan` leaves the index as it was; `apply` moves it to the new plan once
the caller has swapped that plan in.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx

from intentc import graph, ir
from intentc.diagnostics import Diagnostic, Span, error
from intentc.plan.admission import TenantTerms, sla_name, sla_rank
from intentc.plan.batch import size_batches
from intentc.plan.cluster import Cluster, NodeState
from intentc.plan.metrics import jain_index
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


def edges_of(intent: ir.Intent) -> tuple[Any, ...]:
    """What the dependency graph reads of an intent: an edit that changes it is not incremental."""
    return (intent.name, tuple(r.name for r in intent.trigger.after), tuple(r.name for r in intent.consumes),
            tuple(r.name for r in intent.produces))


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
        self.plan = plan
        self.intents: dict[str, ir.Intent] = graph.unique_intents(program)
        self.terms: dict[str, TenantTerms] = tenant_terms(program, list(self.intents.values()))
        self.preds = {n: tuple(sorted(g.predecessors(n))) for n in g if g.in_degree(n)}
        self.succs = {n: tuple(sorted(g.successors(n))) for n in g if g.out_degree(n)}
        self.exclusive = frozenset(n for n, i in self.intents.items()
                                   if policies.requires(i, Requirement.EXCLUSIVE_DOMAIN))
        self.dist, self.prev = graph.longest_chains(g, {n: graph.duration_seconds(i) for n, i in self.intents.items()})
        # chain ends, longest first (ties: smallest name): the critical path's end is the first
        # entry whose length is still the intent's (entries of changed lengths are dropped lazily)
        self.longest: list[tuple[int, str]] = [(-d, n) for n, d in self.dist.items()]
        heapq.heapify(self.longest)
        self.nodes: dict[str, NodeState] = {n.spec.name: n for n in self.cluster.nodes}
        self.full = {name: (1 << n.capacity) - 1 for name, n in self.nodes.items()}
        self.domains = domains_of(self.topology)
        self.node_domains: dict[str, tuple[DomainKey, ...]] = {
            n.name: (("node", n.name), *((lvl, d) for lvl, d in n.domains if lvl != "node")) for n in self.topology.nodes}
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
        for flt in sorted({Request.of(i).filter for i in self.intents.values() if i.gpu_count > 0},
                          key=lambda f: (f.product or "", f.memory or 0)):
            self.cluster.view(flt)      # made now, not by the first edit that needs it

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
        duration = None if intent.action.kind == ir.ActionKind.SERVE.value else graph.duration_seconds(intent)
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
    def touched(self, edited: Iterable[str]) -> set[str]:
        """The edited intents and everything that waits for them, transitively."""
        out: set[str] = set()
        stack = list(edited)
        while stack:
            n = stack.pop()
            if n not in out:
                out.add(n)
                stack.extend(self.succs.get(n, ()))
        return out

    def _order(self, touched: set[str], intent_of: Callable[[str], ir.Intent]) -> list[str]:
        """Dependencies first; among the ready ones, SLA class, smaller gangs, name."""
        pending = {n: sum(1 for p in self.preds.get(n, ()) if p in touched) for n in touched}

        def key(n: str) -> tuple[int, int, str]:
            i = intent_of(n)
            return sla_rank(i), i.gpu_count, n
        heap = [key(n) for n, k in pending.items() if k == 0]
        heapq.heapify(heap)
        out = []
        while heap:
            n = heapq.heappop(heap)[2]
            out.append(n)
            for s in self.succs.get(n, ()):
                if s in pending:
                    pending[s] -= 1
                    if pending[s] == 0:
                        heapq.heappush(heap, key(s))
        return out

    def replan(self, edited: Sequence[ir.Intent], file_intents: Callable[[str], Sequence[ir.Intent]],
               recheck: Iterable[str] = ()) -> Replanned | Fallback:
        """The plan with `edited` (new versions of intents of the plan) placed again, with
        every intent that waits for them; the index is left as it was.

        `file_intents(file)` gives every intent declared in a file: the plan findings of each
        file an edited or re-placed intent lives in (and of the `recheck` files, edited
        without a planner change but whose positions may have moved) are made again."""
        if self.exclusive or any(self.policies.requires(i, Requirement.EXCLUSIVE_DOMAIN) for i in edited):
            return Fallback("exclusive-domain tag rules are checked plan-wide")
        for i in edited:
            was = self.intents.get(i.name)
            if was is None:
                return Fallback(f'"{i.name}" is new')
            if edges_of(was) != edges_of(i):
                return Fallback(f'the dependencies of "{i.name}" changed')
            if i.tenant not in self.terms:
                return Fallback(f'tenant "{i.tenant}" is new')
        fresh = {i.name: i for i in edited}

        def intent_of(n: str) -> ir.Intent:
            return fresh.get(n) or self.intents[n]
        touched = self.touched(fresh)
        order = self._order(touched, intent_of)
        old = {n: p for n in order if (p := self.placement(n)) is not None}
        if len(old) != len(order):
            return Fallback("an intent to re-place has no placement in the plan in force")
        for p in old.values():
            self._add(p, -1)
        new: dict[str, Placement] = {}
        refused: dict[str, Refusal] = {}
        try:
            for n in order:
                if any(d in refused for d in self.preds.get(n, ())):
                    continue                            # refused below, as the full planner does
                ready = 0
                for d in self.preds.get(n, ()):
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
            self._refuse_dependants(refused, touched, intent_of)
            return self._assemble(fresh, order, old, new, refused, intent_of, file_intents, set(recheck))
        finally:
            for p in new.values():
                self._add(p, -1)
            for p in old.values():
                self._add(p, 1)

    def _refuse_dependants(self, refused: dict[str, Refusal], touched: set[str],
                           intent_of: Callable[[str], ir.Intent]) -> None:
        """What waits for a refused intent is refused too, in the full planner's words and
        walk (`schedule.Simulation._refuse_dependants`: roots by name, a stack)."""
        stack = sorted(refused)
        while stack:
            name = stack.pop()
            for succ in self.succs.get(name, ()):
                if succ in refused or succ not in touched:
                    continue
                intent = intent_of(succ)
                refused[succ] = Refusal.of(intent, waits_for_refused(succ, name), intent.span)
                stack.append(succ)

    def _assemble(self, fresh: dict[str, ir.Intent], order: list[str], old: dict[str, Placement],
                  new: dict[str, Placement], refused: dict[str, Refusal], intent_of: Callable[[str], ir.Intent],
                  file_intents: Callable[[str], Sequence[ir.Intent]], recheck: set[str]) -> Replanned:
        """The new plan, from the indexes in their new state (called between `_add`s)."""
        plan = self.plan
        placements = list(plan.placements)
        for n in order:
            i = bisect_left(placements, n, key=lambda p: p.intent)
            if n in new:
                placements[i] = new[n]
            else:
                del placements[i]                       # refused: no placement
        # strategies of every placed intent sharing a domain with a node whose planned GPUs changed
        nodes = {a.node for p in (*old.values(), *new.values()) for a in p.allocations}
        affected = {n for n in new if new[n].allocations}
        for node in nodes:
            for key in self.node_domains.get(node, ()):
                affected |= self.by_domain.get(key, set())
        placed = {n: new[n] if n in new else self.placement(n) for n in affected}
        strategies: dict[str, Strategy | None] = {n: None for n in order}
        strategies.update({n: decide_one(intent_of(n), p, self.used, self.domains)
                           for n, p in placed.items() if p is not None and p.allocations})
        strategies = {n: s for n, s in strategies.items() if s != by_intent(plan.strategies, n)}
        # findings, batch sizes: every intent of the files concerned
        files = {intent_of(n).span.file for n in order} | recheck
        again = {i.name: fresh.get(i.name, i) for f in sorted(files) for i in file_intents(f)}
        placed_again = {n: new.get(n) or self.placement(n) for n in again}
        batches, batch_diags = size_batches(again.values(), [p for p in placed_again.values() if p is not None],
                                            self.topology)
        batch_of: dict[str, BatchSizing | None] = {n: None for n in order}
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
        dist, prev = self._chains(order, intent_of)
        path, path_s = self._critical(dist, prev)
        shares = self._shares(fresh, old, new)
        m = plan.metrics
        pairs = [(old[n], new.get(n)) for n in order]
        metrics = replace(
            m, gpus_allocated=_peak(self.total), idle_gpus_on_used_nodes=self._idle(),
            jobs_spanning_nvlink_domains=m.jobs_spanning_nvlink_domains
            + sum((p is not None and p.interconnect == "network") - (o.interconnect == "network") for o, p in pairs),
            jain_fairness=jain_index(shares), makespan_s=max(self.ends, default=0),
            critical_path=path, critical_path_s=path_s,
            queued=m.queued + sum((p is not None and p.start_s > p.ready_s) - (o.start_s > o.ready_s) for o, p in pairs),
            gpu_seconds=m.gpu_seconds + sum(_gpu_s(p) - _gpu_s(o) for o, p in pairs))
        unplaced = patched_by_intent(plan.unplaced, {n: r.unplaced for n, r in refused.items()})
        out = replace(plan, placements=tuple(placements), unplaced=unplaced, tenants=shares, metrics=metrics,
                      batches=patched_by_intent(plan.batches, batch_of), strategies=patched_by_intent(plan.strategies, strategies))
        moved = {n for n in order if new.get(n) != old[n]} | set(strategies) | {
            n for n, b in batch_of.items() if b != by_intent(plan.batches, n)}
        return Replanned(out, tuple(sorted(order)), tuple(diags), frozenset(files), frozenset(moved),
                         fresh, dict(new), dist, prev)

    def _chains(self, order: list[str], intent_of: Callable[[str], ir.Intent]
                ) -> tuple[dict[str, int], dict[str, str | None]]:
        """The longest chains ending with each touched intent (`graph.longest_chains`, redone
        for those only: the others' chains do not pass through them)."""
        dist: dict[str, int] = {}
        prev: dict[str, str | None] = {}
        for v in order:
            best: str | None = None
            for u in self.preds.get(v, ()):
                du = dist.get(u, self.dist[u])
                if best is None or (-du, u) < (-dist.get(best, self.dist[best]), best):
                    best = u
            dist[v] = graph.duration_seconds(intent_of(v)) + (dist.get(best, self.dist[best]) if best else 0)
            prev[v] = best
        return dist, prev

    def _critical(self, dist: dict[str, int], prev: dict[str, str | None]) -> tuple[tuple[str, ...], int]:
        """`graph.critical_path` over the kept chains and the redone ones (`dist`)."""
        best: tuple[int, str] | None = min(((-d, n) for n, d in dist.items()), default=None)
        heap, skipped = self.longest, []
        while heap:
            negd, n = heap[0]
            if self.dist.get(n) != -negd:
                heapq.heappop(heap)                     # a length that changed since: stale
            elif n in dist:
                skipped.append(heapq.heappop(heap))     # redone here: its new length is in `best`
            else:
                if best is None or (negd, n) < best:
                    best = (negd, n)
                break
        for entry in skipped:
            heapq.heappush(heap, entry)
        if best is None:
            return (), 0
        return graph.chain_end(ChainMap(prev, self.prev), best[1]), -best[0]

    def _shares(self, fresh: dict[str, ir.Intent], old: dict[str, Placement], new: dict[str, Placement]
                ) -> tuple[TenantShare, ...]:
        requested: dict[str, int] = {}
        gpu_s: dict[str, int] = {}
        for n, i in fresh.items():
            _bump(requested, i.tenant, max(i.gpu_count, 0))
            was = self.intents[n]
            _bump(requested, was.tenant, -max(was.gpu_count, 0))
        for n, o in old.items():
            _bump(gpu_s, o.tenant, -_gpu_s(o))
            if n in new:
                _bump(gpu_s, new[n].tenant, _gpu_s(new[n]))
        moved = {p.tenant for p in (*old.values(), *new.values()) if p.allocations}
        out = []
        for s in self.plan.tenants:
            if s.tenant in requested or s.tenant in gpu_s or s.tenant in moved:
                s = replace(s, requested_gpus=s.requested_gpus + requested.get(s.tenant, 0),
                            allocated_gpus=_peak(self.timeline.get(s.tenant, {})),
                            gpu_seconds=s.gpu_seconds + gpu_s.get(s.tenant, 0))
            out.append(s)
        return tuple(out)

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
        for n, p in done.placements.items():
            q = self.placement(n)
            if q is not None:
                self._add(q, -1)
            self._add(p, 1)
        self.intents.update(done.intents)
        for n, d in done.dist.items():
            if self.dist.get(n) != d:
                self.dist[n] = d
                heapq.heappush(self.longest, (-d, n))
        self.prev.update(done.prev)
        self.plan = done.plan


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
