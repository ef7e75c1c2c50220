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

Setup objects (namespaces, RBAC, quotas, priority classes, Kueue queues, DRA
claim templates) still go first, step by step.  Without a release order
(none given: a rollback, `intentc rollback` or the daemon's; or `WAVES`,
which the hidden `apply --release waves` gives the fidelity benchmark as
its baseline), an intent's prerequisites are every intent of the earlier
waves: the previous whole-wave release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from intentc import ir
from intentc.graph import digraph
from intentc.plan.model import Placement


@dataclass(frozen=True)
class ReleaseOrder:
    """What each intent waits for before its objects are created.

    `prerequisites`: the graph's edges into it (must have succeeded);
    `predecessors`: the intents the plan runs just before it on its GPUs (must have
    ended).  `waves`: ignore both and release whole waves (the previous behaviour,
    kept for rollbacks and as the fidelity benchmark's baseline)."""

    prerequisites: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    predecessors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    waves: bool = False

    def after(self, intent: str) -> tuple[str, ...]:
        return self.prerequisites.get(intent, ())

    def gpus_after(self, intent: str) -> tuple[str, ...]:
        return self.predecessors.get(intent, ())


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


def release_order(program: ir.Program, placements: Iterable[Placement] | Mapping[str, Placement],
                  gpu_order: bool = True) -> ReleaseOrder:
    """The release order of `program` under its plan; `gpu_order`: GPU predecessors hold an
    intent back too (False only for apply's hidden `--release edges`, the fidelity benchmark's
    baseline of Kueue ordering the Jobs itself)."""
    found = placements.values() if isinstance(placements, Mapping) else placements
    return ReleaseOrder(prerequisites(program), gpu_predecessors(found) if gpu_order else {})


__all__ = ["ReleaseOrder", "WAVES", "gpu_predecessors", "prerequisites", "release_order"]
