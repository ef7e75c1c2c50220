"""When `apply --wait` releases each intent: its own prerequisites, not wave barriers (pure).

The plan starts every intent when its own dependencies end (`plan/schedule.py`):
a 1-h branch after a shared root starts an hour after the root, whatever a 4-h
sibling in the same wave is doing.  Releasing whole waves (wave N+1 once every
intent of wave N is healthy) made the cluster wait for the slowest intent of
each wave, well past the planned makespan on the test bed (issue 40).  So the
reconciler (`reconcile/sync.py`, used alike by `intentc apply` and the
daemon's rollouts) creates an intent's objects as soon as

* every intent it depends on in the graph (`after`, and the producers of the
  datasets it `consumes`: `digraph.dependencies`) has *succeeded* (its objects
  healthy: a Job complete, a Deployment available, a CronJob present); a
  prerequisite that failed holds back its dependants, transitively, and
  nothing else; and
* the intent that the plan runs just before it on each of its GPUs has
  *ended*, either way (`gpu_predecessors`); a predecessor that failed or
  was held back frees the GPUs all the same.  Where the render target pins
  pods to the plan's nodes (`device-plugin`, `dra`), created earlier its
  pods would sit Pending on a node still busy with that predecessor while
  the plan meant it to wait.  Under `kueue` Kueue still admits each Job
  (quotas, fair sharing, TAS) but is offered the Jobs in the plan's order:
  handed every Job whose prerequisites are done, it admitted them in its
  own order (priority, then creation) onto its own nodes, far from the
  forecast (docs/benchmarks.md, bench_fidelity).

and, where the plan gives it GPUs and its tenant has a GPU quota, every
intent of that tenant that the plan starts earlier has been released
(`quota_predecessors`).  An intent ready ahead of its planned start (its
prerequisites and GPU predecessors ended, its GPUs idle) would otherwise take
quota the plan gives to an intent of its tenant it starts earlier but whose
own prerequisites have not ended yet; that one then waits for the early one
to end, and its dependants and GPU successors with it: on the test bed's
mix every start after the first few hours slipped, by up to 15 % of the
makespan (docs/benchmarks.md, bench_fidelity).  So a quota-bound tenant's
starts follow the plan's order.  Only the tenant's own intents are ordered:
GPUs are ordered by the GPU predecessors, and tenants without a quota share
nothing that the plan orders.

And, where the plan gives it GPUs, the tenant's ResourceQuota has room for
them *as the quota controller has counted it* (`gpu_room`).  The plan keeps
every tenant within its quota at every instant, but the controller counts a
pod's end (or, under `dra`, its claim's deletion) a moment after it
happens, while a dependant is created at once; a pod or claim created in
between is refused, and the Job controller (or the claim controller) retries
it after a backoff that doubles from a second.  The same holds for the
orderings the plan makes through the quota: an intent the plan starts when
*another* intent of its tenant ends (on other nodes; neither a prerequisite
nor a GPU predecessor) is ready before the quota can take it.  The quota
is shared out in the plan's order of starts.  The wait is bounded
(`QUOTA_WAIT_S`): what the quota does not show in that time — another
client's pods holding the tenant's GPUs — is left to the cluster's refusals.

Setup objects (namespaces, RBAC, quotas, priority classes, Kueue queues, DRA
claim templates) still go first, step by step.  Without a release order
(none given: a rollback, `intentc rollback` or the daemon's; or `WAVES`,
which the hidden `apply --release waves` gives the fidelity benchmark as
its baseline), an intent's prerequisites are every intent of the earlier
waves: the previous whole-wave release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any, Iterable, Mapping

from intentc import ir
from intentc.graph import digraph
from intentc.ir.quantity import parse_quantity
from intentc.plan.model import Placement

# How long a ready intent waits for its tenant's quota to show room for it, seconds, before
# it is created all the same (and the cluster refuses its pods until there is room).
QUOTA_WAIT_S = 300.0
# The keys of intentc's ResourceQuota that do not count GPUs (render/tenants.resource_quota);
# the other one is the render target's GPU key (a resource request, or DRA devices per class).
NOT_GPU_KEYS = frozenset({"requests.cpu", "requests.memory"})


@dataclass(frozen=True)
class ReleaseOrder:
    """What each intent waits for before its objects are created.

    `prerequisites`: the graph's edges into it (must have succeeded);
    `predecessors`: the intents the plan runs just before it on its GPUs (must have
    ended); `quota_before`: the intents of its quota-bound tenant that the plan starts
    last before it (must have been released); `gpus`: how many GPUs the plan gives it
    (its tenant's quota must show room), `starts`: when the plan starts it (the order
    the quota is shared out in).  `waves`: ignore all that and release whole waves (the
    previous behaviour, kept for rollbacks and as the fidelity benchmark's baseline)."""

    prerequisites: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    predecessors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    waves: bool = False
    gpus: Mapping[str, int] = field(default_factory=dict)     # the plan's GPUs per intent
    starts: Mapping[str, int] = field(default_factory=dict)   # the plan's start per intent
    quota_before: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def after(self, intent: str) -> tuple[str, ...]:
        return self.prerequisites.get(intent, ())

    def gpus_after(self, intent: str) -> tuple[str, ...]:
        return self.predecessors.get(intent, ())

    def released_after(self, intent: str) -> tuple[str, ...]:
        return self.quota_before.get(intent, ())


WAVES = ReleaseOrder(waves=True)


def prerequisites(program: ir.Program) -> dict[str, tuple[str, ...]]:
    """intent -> the intents it depends on (`after` + datasets), sorted."""
    g = digraph.dependencies(program)
    return {v: tuple(sorted(g.predecessors(v))) for v in sorted(g.nodes) if g.in_degree(v)}


def gpu_predecessors(placements: Iterable[Placement]) -> dict[str, tuple[str, ...]]:
    """intent -> the intents the plan runs immediately before it on any of its GPUs, sorted.

    On each GPU the finite placements are ordered by (start, end, name); each one's
    predecessor there is the previous one that ended by its start.  Overlapping
    intervals on one GPU (a plan never makes them; serve intents are open-ended and
    never precede anything) give no edge.  Edges go from an earlier start to a later
    one, so they cannot form a cycle with each other or with the graph's (a
    dependency ends before its dependant starts)."""
    on_gpu: dict[tuple[str, int], list[tuple[int, int, str]]] = {}
    for p in placements:
        if p.end_s is None:
            continue
        for a in p.allocations:
            for g in a.gpus:
                on_gpu.setdefault((a.node, g), []).append((p.start_s, p.end_s, p.intent))
    out: dict[str, set[str]] = {}
    for runs in on_gpu.values():
        runs.sort()
        for before, after in zip(runs, runs[1:]):
            if before[1] <= after[0] and before[0] < after[0]:
                out.setdefault(after[2], set()).add(before[2])
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}


def quota_predecessors(program: ir.Program, placements: Iterable[Placement]) -> dict[str, tuple[str, ...]]:
    """intent -> the intents of its tenant that the plan starts last before it, sorted, for
    the GPU intents of tenants with a GPU quota.  Only the last earlier start: those are
    released after the ones before them in turn, so the tenant's starts follow the plan's
    order without an edge per pair.  Edges go from an earlier start to a later one."""
    bound = {t.name for t in program.tenants if t.quota_gpus}
    by_tenant: dict[str, list[tuple[int, str]]] = {}
    for p in placements:
        if p.tenant in bound and p.allocations and p.end_s is not None:
            by_tenant.setdefault(p.tenant, []).append((p.start_s, p.intent))
    out: dict[str, tuple[str, ...]] = {}
    for runs in by_tenant.values():
        before: tuple[str, ...] = ()          # the intents of the last earlier start
        for _, group in groupby(sorted(runs), key=itemgetter(0)):
            names = tuple(name for _, name in group)
            out.update((name, before) for name in names if before)
            before = names
    return dict(sorted(out.items()))


def release_order(program: ir.Program, placements: Iterable[Placement] | Mapping[str, Placement],
                  gpu_order: bool = True, tenant_order: bool = True) -> ReleaseOrder:
    """The release order of `program` under its plan; `gpu_order`: GPU predecessors and the
    tenant's start order hold an intent back too (False only for apply's hidden `--release
    edges`, the fidelity benchmark's baseline of Kueue ordering the Jobs itself);
    `tenant_order`: the tenant's start order does (False only for its `unordered` baseline)."""
    found = list(placements.values() if isinstance(placements, Mapping) else placements)
    gpus = {p.intent: n for p in found if (n := sum(len(a.gpus) for a in p.allocations))}
    return ReleaseOrder(prerequisites(program), gpu_predecessors(found) if gpu_order else {}, gpus=gpus,
                        starts={p.intent: p.start_s for p in found if p.intent in gpus},
                        quota_before=quota_predecessors(program, found) if gpu_order and tenant_order else {})


def gpu_room(quota: Mapping[str, Any] | None, taken: int = 0) -> int | None:
    """GPUs intentc's ResourceQuota `quota` still admits: `status.hard` of its GPU key less
    the larger of what its controller last counted (`status.used`) and `taken` (what the
    caller knows is taken and the count may not show yet); None when it does not say."""
    status = (quota or {}).get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    room: int | None = None
    for key in sorted(set(hard) - NOT_GPU_KEYS):
        limit, used_now = parse_quantity(str(hard[key])), parse_quantity(str(used.get(key, "0")))
        if limit is None or used_now is None:
            return None
        left = int(limit) - max(int(used_now), taken)
        room = left if room is None else min(room, left)
    return room


__all__ = ["QUOTA_WAIT_S", "ReleaseOrder", "WAVES", "gpu_predecessors", "gpu_room", "prerequisites",
           "quota_predecessors", "release_order"]
