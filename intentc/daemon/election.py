"""The leader-election loop: read the Lease, ask `daemon.leader`, write what it says.

One thread per daemon, every `retry_period` seconds (client-go's
LeaderElector).  Leadership is not a flag this thread sets and others
trust: `leading()` is computed from when the last successful renewal
*started*, so a renewal stuck in a hung request still ends the leader's
right to act `renew_deadline` seconds after its last success — before
`lease_duration`, when a candidate may take over.  Requests of this thread
time out within the renew deadline for the same reason.

On shutdown a leader releases the Lease (client-go's ReleaseOnCancel), so
a rolling update hands over within one retry period instead of one lease
duration; a leader killed with SIGKILL is replaced after the lease expires.

Fencing against a Lease that vanished (issue 39, the Lease deleted by
hand): the timing argument above covers a takeover after *expiry*; a Lease
deleted while its holder acts lets any candidate create it at once, and
the old holder goes on acting until its next read (up to two retry
periods: its own create fails first).  client-go lets both act in that
window, and the audit log of `tests/test_daemon_partition_kube.py` showed
two replicas healing in it.  So (1) a candidate that creates the Lease
after having seen one (it disappeared under us) holds it but does not act
for `renew_deadline`: whoever led before has stopped by then, since its
right ends `renew_deadline` after its last successful renewal, which
started before our create succeeded; and (2) a leader whose write is
refused with a conflict (someone else wrote the Lease) stops acting at
once instead of at its deadline.  A process whose very first read finds
no Lease (a fresh cluster, a first start) acts at once, as before.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone

from intentc.daemon.leader import Observed, Timing, Verdict, decide, expires, leads
from intentc.kube import events
from intentc.kube.client import KubeClient
from intentc.kube.errors import AlreadyExists, KubeError, NotFound, Outdated
from intentc.reconcile import lease
from intentc.reconcile.inventory import INVENTORY_NAMESPACE
from intentc.objectmeta import ObjectRef

log = logging.getLogger("intentc.daemon")


def election_ref(target: str) -> ObjectRef:
    return lease.lease_ref(f"intentc-daemon-{target}")


def identity() -> str:
    """The pod's name (POD_NAME from the downward API, else the hostname, which is
    the pod's name in a pod) and a random suffix: a restarted container is a new
    candidate, not the old holder come back."""
    name = os.environ.get("POD_NAME") or os.environ.get("HOSTNAME") or socket.gethostname()
    return f"{name}_{uuid.uuid4().hex[:8]}"


class Elector:
    def __init__(self, client: KubeClient, target: str, timing: Timing, *, me: str | None = None,
                 on_change: Callable[[bool], None] = lambda _leading: None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        # a renewal must not outlive the renew deadline inside one request
        self.client = client.with_timeout((min(5.0, timing.renew_deadline), timing.renew_deadline))
        self.ref = election_ref(target)
        self.timing = timing
        self.identity = me or identity()
        self.on_change = on_change
        self.clock, self.wall = clock, wall
        self.holder = ""                        # who holds it, as last read
        self._last_renew: float | None = None   # start of our last successful write, while leading
        self._seen = False                      # a Lease record was read at least once
        self._fenced_until: float | None = None # holding, but not acting before this (a vanished Lease)
        self._acting = False                    # what on_change last said
        self._observed: Observed | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="intentc-leader", daemon=True)

    def holds(self) -> bool:
        """Whether our term is current: the Lease is ours and renewed within the deadline."""
        return leads(self._last_renew, self.clock(), self.timing)

    def leading(self) -> bool:
        """Whether this replica may act now: it holds the Lease and is past any fence."""
        return self.holds() and (self._fenced_until is None or self.clock() >= self._fenced_until)

    def start(self) -> Elector:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop campaigning; a leader releases the Lease.  Call once nothing acts any more."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.timing.renew_deadline + 5)
        self._release()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self._pause())

    def _pause(self) -> float:
        """The retry period, or less when the Lease we follow expires sooner."""
        until = None if self.holder == self.identity else expires(self._observed, self.timing)
        if until is None:
            return self.timing.retry_period
        return min(self.timing.retry_period, max(0.05, until - self.clock() + 0.05))

    def tick(self) -> None:
        started = self.clock()
        try:
            held = lease.read(self.client, self.ref)
        except KubeError as e:
            log.warning("cannot read the leader %s: %s", self.ref, e.message)
            self._check_deadline()
            return
        step = decide(held.record if held else None, identity=self.identity, now=self.clock(), wall=self.wall(),
                      timing=self.timing, observed=self._observed, last_renew=self._last_renew)
        if held is not None:
            self._seen = True
        self._observed, self.holder = step.observed, step.holder
        if step.verdict is Verdict.LOST:
            self._lose(f"the Lease is held by {step.holder or 'nobody'}" if step.holder != self.identity
                       else f"no renewal for {self.timing.renew_deadline:g}s")
            return
        if step.write is None:
            return
        try:
            try:
                written = lease.write(self.client, self.ref, step.write, held)
            except NotFound:                    # intentc-system does not exist yet
                self.client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                    "name": INVENTORY_NAMESPACE, "labels": {"app.kubernetes.io/managed-by": "intentc"}}})
                written = lease.write(self.client, self.ref, step.write, held)
        except (AlreadyExists, Outdated):
            # another candidate wrote first: read again next period; a leader has lost its term
            if self.holds():
                self._lose("another candidate wrote the Lease")
            return
        except KubeError as e:
            log.warning("cannot write the leader %s: %s", self.ref, e.message)
            self._check_deadline()
            return
        gained = not self.holds()
        vanished = held is None and self._seen
        self._last_renew = started
        self._observed, self.holder = Observed(written.record, self.clock()), self.identity
        if gained:
            log.info("leading: %s held by %s (transition %d)", self.ref, self.identity,
                     written.record.transitions)
            events.emit(self.client, self.ref, "LeaderElection", f"{self.identity} became leader", "Normal")
            if vanished:
                self._fenced_until = self.clock() + self.timing.renew_deadline
                log.warning("the Lease %s had vanished: holding it, acting after %gs (a previous leader "
                            "may act until then)", self.ref, self.timing.renew_deadline)
        if not self._acting and self.leading():
            self._fenced_until = None
            self._acting = True
            self.on_change(True)

    def _check_deadline(self) -> None:
        if self._last_renew is not None and not self.holds():
            self._lose(f"no renewal for {self.timing.renew_deadline:g}s")

    def _lose(self, why: str) -> None:
        self._last_renew = self._fenced_until = None
        log.warning("lost leadership of %s (%s): not acting", self.ref, why)
        if self._acting:
            self._acting = False
            self.on_change(False)

    def _release(self) -> None:
        if not self.holds():
            return
        self._last_renew = self._fenced_until = None     # nothing acts from here on
        if self._acting:
            self._acting = False
            self.on_change(False)
        try:
            held = lease.read(self.client, self.ref)
            if held is not None and held.record.holder == self.identity:
                # client-go's release: nobody holds it, and it lapses in a second
                lease.write(self.client, self.ref, replace(held.record, holder="", duration=1,
                                                           renewed=self.wall()), held)
                log.info("released the leader %s", self.ref)
        except KubeError as e:                  # it expires by itself
            log.warning("cannot release the leader %s: %s", self.ref, e.message)
