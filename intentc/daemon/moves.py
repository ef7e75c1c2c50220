"""The daemon's reactor for Jobs stranded on unusable nodes (docs/failure-fallback.md).

A Job pinned to a node that the fallback chain tainted (or that is cordoned,
NotReady or gone) and whose pods have not started would stay Pending for as
long as the node stays so.  On each pass — on the reactor thread, only when
the daemon acts (`healing.DriftReactor.react`, after the GPU-failure
reactor; a taint it writes comes back as a node event, which asks for the
pass that moves) — this module:

1. asks the pure `daemon/stranding.stranded` which of the desired Jobs on the
   cluster are stranded (the pods and nodes come from the GPU-failure
   reactor's informers, the Jobs from the daemon's cache);
2. re-binds their intents together on live occupancy with the binder a
   rollout uses (`reconcile/live_binding.LiveBinder.bind`, the same
   re-planning of only what does not fit; not under Kueue, which places on
   live state itself), holding the GPUs that other created Jobs, not yet
   scheduled, are pinned to (`stranding.waiting_pins`);
3. asks `stranding.plan_move` how each gets to its new binding and does it
   through `kube/reactions.py`: an in-place apply for a suspended Job that
   never started, else a delete (Background) and a create.  An in-place
   apply the API server refuses as an immutable template change falls back
   to the re-creation.

The moved Job carries the preview's spec-hash in
`intentc.dev/preview-spec-hash`, as any Job a rollout bound on the live
cluster does, and intentc owns its fields: drift reports it in sync, and the
next apply leaves it where it is.  Each move is logged, counted
(`intentc_jobs_moved_total{path}`) and recorded as a `JobMoved` Event on the
Job; a Job the binder finds no room for waits, said once per reason.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.source import Desired
from intentc.daemon.stranding import Move, MovePath, Stranded, plan_move, recreated, stranded, waiting_pins
from intentc.kube import events, reactions
from intentc.kube.client import KubeClient
from intentc.kube.errors import Invalid, KubeError, Outdated
from intentc.objectmeta import ObjectRef
from intentc.reconcile.live_binding import LiveBinder

log = logging.getLogger("intentc.daemon")

Observed = tuple[Iterable[Mapping[str, Any]], Iterable[Mapping[str, Any]]]


class JobMover:
    def __init__(self, client: KubeClient, metrics: DaemonMetrics,
                 binder: Callable[[Desired], LiveBinder | None]) -> None:
        self.client = client
        self.metrics = metrics
        self.binder = binder       # the rollout's binder for the desired state (None under Kueue)
        self._said: set[tuple[ObjectRef, str]] = set()    # "waits" lines said, so each is said once

    def react(self, desired: Desired, live: Mapping[ObjectRef, Mapping[str, Any]], observed: Observed | None) -> None:
        """One pass: move the desired Jobs stranded on unusable nodes.  `observed`: the
        intent pods and the nodes, None until their informers have synced."""
        if observed is None:
            return
        pods, nodes = list(observed[0]), list(observed[1])
        jobs = [body for ref, body in live.items() if ref.kind == "Job" and ref in desired.by_ref]
        found = stranded(jobs, pods, nodes)
        self._said &= {(s.ref, s.why()) for s in found}
        if not found:
            return
        binder = self.binder(desired)
        if binder is None:
            return
        moving = sorted({s.intent for s in found})
        binding = binder.bind(moving, live, moving=frozenset(s.ref for s in found),
                              held=waiting_pins(jobs, pods, moving))
        rebound = {m.ref: m.body for m in binding.manifests}
        for s in found:
            move = plan_move(s, live[s.ref], rebound.get(s.ref))
            if move is None:
                self._waits(s)
            else:
                self._move(move, live[s.ref])

    def _waits(self, s: Stranded) -> None:
        if (s.ref, s.why()) not in self._said:
            self._said.add((s.ref, s.why()))
            log.warning("%s is pinned to %s (%s) and has not started; no other GPUs for it now, it waits",
                        s.ref, ", ".join(s.pinned), s.why())

    def _move(self, move: Move, live: Mapping[str, Any]) -> None:
        try:
            if move.path is MovePath.UPDATE:
                try:
                    done = reactions.update_job(self.client, live, move.body)
                except Invalid:
                    # the re-bound template differs beyond the scheduling directives (another
                    # product resized the batch): the suspended Job is created again instead
                    move = replace(move, path=MovePath.RECREATE, body=recreated(move.body, live))
                    done = reactions.recreate_job(self.client, live, move.body)
            else:
                done = reactions.recreate_job(self.client, live, move.body)
        except Outdated:
            return          # changed (or moved already) since the cache saw it: the next pass decides again
        except KubeError as e:
            self.metrics.errors.labels("move").inc()
            log.warning("cannot move %s off %s: %s", move.ref, ", ".join(move.before), e.message)
            return
        self.metrics.moves.labels(move.path.value).inc()
        log.warning("%s: %s", move.ref, move.message())
        events.emit(self.client, move.ref, "JobMoved", move.message(), "Normal", done)
