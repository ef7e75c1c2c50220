"""Healing: the daemon re-applies drifted objects (it acts; `drift_pass` decides).

The reactor (`loop.py`) runs the heals a pass found due (`drift_pass.heal_plan`)
through here, on its own thread: each heal is one server-side apply
(`drift.live.heal`) and is said three ways — a log line, the
`intentc_heals_total` counter and a `DriftHealed` Event on the object — and
told to the Intent mirror (its status shows the last heal).  A heal of an
object whose wave is not done waits; a replica that lost the Lease stops
before its next write.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial

from intentc.daemon.drift_pass import HealStep
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.mirror import IntentMirror
from intentc.daemon.reads import Safe
from intentc.daemon.rollouts import Stopped
from intentc.drift import events
from intentc.drift.live import heal
from intentc.drift.policy import Decision
from intentc.kube.client import KubeClient
from intentc.render.model import Manifest

log = logging.getLogger("intentc.daemon")


class Healer:
    def __init__(self, client: KubeClient, metrics: DaemonMetrics, mirror: IntentMirror,
                 sleep: Callable[[float], None], stop: threading.Event,
                 safe: Safe) -> None:
        self.client = client
        self.metrics = metrics
        self.mirror = mirror
        self.sleep = sleep          # raises `Stopped` on shutdown or when the Lease is lost
        self.stop = stop
        self.safe = safe

    def run(self, plan: Iterable[HealStep], leading: Callable[[], bool]) -> bool:
        """Heal what is not blocked, in order; False when the Lease was lost on the way."""
        for step in plan:
            if not leading():           # lost the Lease during this pass: stop before the next write
                return False
            if step.blocked is not None:
                log.info("heal of %s waits: %s", step.manifest.ref, step.blocked)
                continue
            self.safe("heal", partial(self.one, step.decision, step.manifest))
        return True

    def one(self, d: Decision, manifest: Manifest) -> None:
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
