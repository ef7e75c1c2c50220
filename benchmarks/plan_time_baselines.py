"""Schedulers over time to compare intentc's plan with (bench_plan_time.py).

Both run the same event simulation as intentc's schedule (a job is ready
when the jobs it waits for have ended; at each instant the ready jobs are
offered in the policy's order; a job that does not fit is skipped, not
blocking the queue; tenants' GPU quotas hold at every instant), and place
with Kueue TAS BestFit (`plan_baselines.domain_best_fit`, "first free N"
GPUs on a node).  They differ only in the order:

fifo-bestfit    Kueue's default admission: BestEffortFIFO by submission order
                (job index), no SLA classes, no fair share.
list-scheduler  Classic list scheduling for makespan (HLFET): the job with the
                longest remaining chain of durations (its own plus its longest
                path of dependants) first, then submission order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.plan_baselines import domain_best_fit, place_with, terms_of
from intentc import ir
from intentc.graph import digraph
from intentc.plan.cluster import Cluster, NodeState
from intentc.plan.placer import Request
from intentc.topology.load import LoadedTopology


@dataclass(frozen=True)
class Run:
    """One job as scheduled: when, where, for whom."""

    intent: str
    tenant: str
    sla: str
    gpus: int
    ready: int
    start: int
    end: int
    allocations: tuple[tuple[str, tuple[int, ...]], ...]


def _deps(program: ir.Program) -> dict[str, list[str]]:
    names = {i.name for i in program.intents}
    return {i.name: [r.name for r in i.trigger.after if r.name in names] for i in program.intents}


def remaining_path(program: ir.Program) -> dict[str, int]:
    """Per job, its duration plus the longest chain of durations after it (HLFET priority)."""
    deps = _deps(program)
    succs: dict[str, list[str]] = {n: [] for n in deps}
    for n, before in deps.items():
        for b in before:
            succs[b].append(n)
    dur = {i.name: digraph.duration_seconds(i) for i in program.intents}
    out: dict[str, int] = {}
    for i in reversed(program.intents):        # dependants come later in the workload
        out[i.name] = dur[i.name] + max((out[s] for s in succs[i.name]), default=0)
    return out


def simulate(program: ir.Program, topo: LoadedTopology, key: Callable[[ir.Intent], tuple[int, ...]]) -> list[Run]:
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name))
    quota = {t: terms.quota_gpus for t, terms in terms_of(program).items()}
    intents = {i.name: i for i in program.intents}
    deps = _deps(program)
    pending = {n: len(d) for n, d in deps.items()}
    succs: dict[str, list[str]] = {n: [] for n in deps}
    for n, before in deps.items():
        for b in before:
            succs[b].append(n)
    ready = {n: 0 for n, k in pending.items() if k == 0}
    held: dict[str, int] = {}
    events: list[tuple[int, str]] = []
    running: dict[str, list[tuple[NodeState, tuple[int, ...]]]] = {}
    out: list[Run] = []
    t = 0
    while ready or events:
        while events and events[0][0] <= t:
            _, name = heapq.heappop(events)
            for node, gpus in running.pop(name):
                cluster.release(node, gpus)
            held[intents[name].tenant] -= intents[name].gpu_count
            for s in succs[name]:
                pending[s] -= 1
                if pending[s] == 0:
                    ready[s] = t
        for name in sorted(ready, key=lambda n: key(intents[n])):
            intent = intents[name]
            req = Request.of(intent)
            q = quota.get(req.tenant)
            if q is not None and held.get(req.tenant, 0) + req.count > q:
                continue
            taken = place_with(domain_best_fit, cluster, req)
            if taken is None:
                continue
            end = t + digraph.duration_seconds(intent)
            running[name] = taken
            held[req.tenant] = held.get(req.tenant, 0) + req.count
            heapq.heappush(events, (end, name))
            out.append(Run(name, req.tenant, intent.constraints.sla or "P2", req.count, ready.pop(name), t, end,
                           tuple((n.spec.name, g) for n, g in taken)))
        if not events:
            break
        t = events[0][0]
    return out


def fifo_bestfit(program: ir.Program, topo: LoadedTopology) -> list[Run]:
    order = {i.name: n for n, i in enumerate(program.intents)}
    return simulate(program, topo, lambda i: (order[i.name],))


def list_scheduler(program: ir.Program, topo: LoadedTopology) -> list[Run]:
    order = {i.name: n for n, i in enumerate(program.intents)}
    rank = remaining_path(program)
    return simulate(program, topo, lambda i: (-rank[i.name], order[i.name]))
