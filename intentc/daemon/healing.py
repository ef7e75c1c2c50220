"""Drift passes and what they act on: detect, heal, then GPU failures and the Intent mirror.

The reactor (`loop.py`) asks for a pass over the objects that changed (an
informer event) or over everything (a resync); it runs here, on the
reactor's thread.  `drift_pass` decides what the pass covers and which heals
run; the detector (`drift.detect`) and the policies (`drift.policy`) are pure;
the ledger (`ledger.py`) says each drift once and backs heals off.  What acts:

* a heal is one server-side apply (`drift.managed.heal`), said three ways — a
  log line, `intentc_heals_total` and a `DriftHealed` Event — and told to the
  Intent mirror (its status shows the last heal);
* after the heals, the GPU-failure reactor (`failures.py`), the mover of
  Jobs stranded on unusable nodes (`moves.py`) and the Intent mirror
  (`mirror.py`) take their turn, in that order (a taint written in a pass
  reaches the mover through the node's informer event, which asks for the
  next pass).

Nothing acts during a rollout or rollback (it converges the objects itself)
or on a replica that does not lead; one that loses the Lease mid-pass stops
before its next write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial

from intentc.daemon.drift_pass import HealStep, applied_refs, drift_level, heal_plan, in_scope, live_in_scope
from intentc.daemon.failures import FailureReactor
from intentc.daemon.ledger import DriftLedger
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.mirror import IntentMirror
from intentc.daemon.moves import JobMover
from intentc.daemon.reads import LiveReads, Safe
from intentc.daemon.rollouts import Stopped
from intentc.daemon.source import Desired
from intentc.daemon.state import ReactorState
from intentc.drift.detect import Report, detect
from intentc.drift.managed import heal, own_plumbing
from intentc.drift.policy import Decision, Policies, decide
from intentc.kube import events
from intentc.kube.client import KubeClient
from intentc.objectmeta import ObjectRef
from intentc.render.model import Manifest

log = logging.getLogger("intentc.daemon")


class DriftReactor:
    def __init__(self, client: KubeClient, target: str, metrics: DaemonMetrics, ledger: DriftLedger,
                 reads: LiveReads, failures: FailureReactor, mirror: IntentMirror, mover: JobMover, *,
                 leading: Callable[[], bool], sleep: Callable[[float], None], stop: threading.Event,
                 safe: Safe, clock: Callable[[], float]) -> None:
        self.client = client
        self.target = target
        self.metrics = metrics
        self.ledger = ledger
        self.reads = reads
        self.failures = failures
        self.mirror = mirror
        self.mover = mover
        self.leading = leading
        self.sleep = sleep          # raises `Stopped` on shutdown or when the Lease is lost
        self.stop = stop
        self.safe = safe
        self.clock = clock
        self.passes = 0             # completed detection passes (tests wait on these)

    def detect(self, state: ReactorState, refs: set[ObjectRef] | None) -> None:
        """Detect over `refs` (None: everything; `drift_pass` says what that covers) and act."""
        desired = state.desired
        if desired is None:
            return
        started = self.clock()
        cache = self.reads.cache()
        wanted = in_scope(desired.by_ref, refs)
        cache.update(self.reads.fetch_absent(wanted, cache))
        live = live_in_scope(cache, refs)
        managed = state.managed
        report = detect((m.body for m in wanted.values()), live.values(),
                        managed.refs if managed else (), state.history,
                        exclude=managed.plumbing if managed else own_plumbing(self.target))
        for f in self.ledger.record(report.findings, refs):
            log.log(drift_level(state.busy), "drift: %s %s: %s", f.drift.value, f.ref, f.message)
        self.metrics.set_counts(self.ledger.counts())
        self._act(state, report, desired)
        self.passes += 1
        self.metrics.reconcile_seconds.labels("resync" if refs is None else "event").observe(self.clock() - started)

    def _act(self, state: ReactorState, report: Report, desired: Desired) -> None:
        if state.busy or not self.leading():
            return
        applied = applied_refs(state.inventory)
        decisions = decide(report, Policies.from_program(desired.program))
        live = self.reads.cache()
        due = self.ledger.heals_due(decisions, desired.by_ref, applied, self.clock())
        if self._heal(heal_plan(due, tuple(desired.by_ref.values()), live)):
            self.react(state)

    def react(self, state: ReactorState) -> None:
        """GPU failures, stranded Jobs and the Intent mirror (daemon/failures.py, daemon/moves.py,
        daemon/mirror.py): they act, so they run when the daemon acts (`_act`: not during a
        rollout, only on the leader)."""
        desired = state.desired
        if desired is None or state.busy or not self.leading():     # followers only watch
            return
        live = self.reads.cache()
        self.safe("fallback", partial(self.failures.react, live))
        self.safe("move", partial(self.mover.react, desired, live, self.failures.observed()))
        self.safe("mirror", partial(self.mirror.sync, desired, live))

    def _heal(self, plan: Iterable[HealStep]) -> bool:
        """Heal what is not blocked, in order; False when the Lease was lost on the way."""
        for step in plan:
            if not self.leading():      # lost the Lease during this pass: stop before the next write
                return False
            if step.blocked is not None:
                log.info("heal of %s waits: %s", step.manifest.ref, step.blocked)
                continue
            self.safe("heal", partial(self._heal_one, step.decision, step.manifest))
        return True

    def _heal_one(self, d: Decision, manifest: Manifest) -> None:
        """Re-apply one drifted object and say so (log line, metric, Event)."""
        try:
            outcome = heal(self.client, manifest, self.sleep)
        except Stopped:                 # shutting down, or the Lease was lost mid-heal
            log.warning("heal of %s interrupted: %s", d.finding.ref,
                        "shutting down" if self.stop.is_set() else "no longer the leader")
            return
        f = d.finding
        if not outcome.ok:
            log.error("heal of %s failed: %s", f.ref, outcome.message)
            return
        self.metrics.heals.labels(f.drift.value).inc()
        self.mirror.healed(manifest.body)
        who = ", ".join(f.managers) or f.drift.value
        log.warning("healed %s (%s by %s; policy %s)", f.ref, f.drift.value, who, d.policy.value)
        events.emit(self.client, f.ref, "DriftHealed", f"intentc re-applied the desired state ({f.message})",
                    "Normal", outcome.body)
