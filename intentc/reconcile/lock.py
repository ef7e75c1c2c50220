"""One apply at a time per target: a coordination.k8s.io Lease as a lock.

The inventory is read at the start of an apply and written through it, so
two applies of different revisions to one target that overlap would each
write the inventory from their own reading, and the last writer would drop
what the other applied (issue 16: 50 Jobs untracked).  Every apply of a
target therefore holds the Lease `intentc-system/intentc-apply-<target>`
from before it reads the inventory until after its last write.

Taking the Lease (read and written through `reconcile.lease`, which the
daemon's leader election shares) is optimistic concurrency on the API server: create it,
or replace it with the resourceVersion read, when it is free or expired.
Two processes that race get one success and one `AlreadyExists` /
`Outdated`, and the loser reads again.  The holder renews it every third
of its duration from a thread started when it takes the Lease and stopped
when it releases it, so an apply of any length keeps it; a holder that
died leaves it to expire, after which the next apply takes it over.  A
waiter gives up after `wait` seconds with the holder's name (exit 2).

How long the Lease lasts (`LEASE_SECONDS`, 15 s, renewed every 5 s) is a
trade between two costs.  Too long, and a holder that died (a daemon killed
in the middle of a rollout or rollback, an apply whose CI runner vanished)
keeps the target from everyone for that long: the restarted daemon's
recovery is mostly this wait.  Too short, and a live holder whose renewals
are late loses the Lease while it still writes.  15 s is the lease the
daemon's leader election uses (client-go's default, `daemon/leader.py`),
which already decides how long a dead leader keeps a target; the apply lock
then adds no longer a wait than the election.  Renewed every third of it,
a holder has two more renewals before its Lease runs out after one went
through: one renewal may fail and the next still be in time.  A renewal's
requests time out within its period (the client's default read timeout,
60 s, would let one hung request outlive the Lease), and a failed one is
tried again after `POLL_SECONDS`, not a whole period later.  The expiry is
judged by the waiter's clock against the holder's renewTime, so the hosts'
clocks must agree to within a few seconds (NTP does far better).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from intentc.kube.client import KubeClient
from intentc.kube.errors import AlreadyExists, KubeError, Outdated
from intentc.reconcile import lease
from intentc.reconcile.lease import Held, LeaseRecord
from intentc.objectmeta import ObjectRef

LEASE_SECONDS = 15
POLL_SECONDS = 1.0

# Holds this process took and could not release (the API server went away in the middle
# of the apply): (API server, lease) -> the identity that holds it.  The next apply of the
# same target in this process takes that identity over, so it finds the Lease its own and
# goes on at once, instead of waiting out its own dead hold for up to LEASE_SECONDS (the
# daemon after an API server or etcd restart: issue 39).  Safe: the earlier apply has
# ended (release() is its last step), and pop() hands the identity to one lock only.
_UNRELEASED: dict[tuple[str, str], str] = {}
_UNRELEASED_LOCK = threading.Lock()


class LockBusy(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def lease_ref(target: str) -> ObjectRef:
    return lease.lease_ref(f"intentc-apply-{target}")


def holder_identity() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class ApplyLock:
    """`with ApplyLock(client, target):` — the body runs while this process holds the target."""

    def __init__(self, client: KubeClient, target: str, wait: float = 600.0,
                 duration: int = LEASE_SECONDS, identity: str | None = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.client, self.ref, self.wait, self.duration = client, lease_ref(target), wait, duration
        self._key = (str(getattr(client, "host", "")), f"{self.ref.namespace}/{self.ref.name}")
        if identity is None:
            with _UNRELEASED_LOCK:
                identity = _UNRELEASED.pop(self._key, None)
        self.identity = identity or holder_identity()
        self.now, self.sleep, self.monotonic = now, sleep, monotonic
        self.lost = False                     # someone else holds it now, or it may have expired unrenewed
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _record(self, acquired: datetime | None, held: Held | None) -> LeaseRecord:
        moves = held.record.transitions if held is not None else 0
        if held is not None and held.record.holder != self.identity:
            moves += 1
        now = self.now()
        return LeaseRecord(self.identity, self.duration, acquired or now, now, moves)

    def _free(self, record: LeaseRecord) -> bool:
        if not record.holder or record.holder == self.identity:
            return True
        if record.renewed is None or record.duration is None:
            return True                       # not a lease anyone could hold
        return record.renewed + timedelta(seconds=record.duration) < self.now()

    def acquire(self) -> None:
        deadline = self.monotonic() + self.wait
        while True:
            held = lease.read(self.client, self.ref)
            try:
                if held is None or self._free(held.record):
                    lease.write(self.client, self.ref, self._record(None, held), held)
                    break
            except (AlreadyExists, Outdated):
                continue                      # another process won this round: read again
            if self.monotonic() >= deadline:
                raise LockBusy(f"target is being applied by {held.record.holder} (since "
                               f"{_shown(held.record.acquired)}); waited {self.wait:g}s — try again later")
            self.sleep(POLL_SECONDS)
        self._renewer = threading.Thread(target=self._renew, name="intentc-lease", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        period = self.duration / 3
        client = self.client.with_timeout((min(5.0, period), period))
        pause, renewed = period, self.monotonic()
        while not self._stop.wait(pause):
            try:
                held = lease.read(client, self.ref)
                if held is None or held.record.holder != self.identity:
                    self.lost = True
                    return
                lease.write(client, self.ref, self._record(held.record.acquired, held), held)
                pause, renewed = period, self.monotonic()
            except KubeError:                 # a failed renewal is tried again soon, not a period later
                pause = min(POLL_SECONDS, period)
                if self.monotonic() - renewed >= self.duration:
                    # unrenewed for a whole Lease: a waiter may have taken it over by now, so the
                    # holder must stop writing (`lost`) even if the Lease comes back to it later
                    self.lost = True

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
        for _ in range(5):
            try:
                held = lease.read(self.client, self.ref)
                if held is None or held.record.holder != self.identity:
                    return
                lease.write(self.client, self.ref, replace(held.record, holder="", renewed=self.now()), held)
                return
            except Outdated:
                continue
            except KubeError:                 # gone, or no cluster: the lease expires by itself,
                with _UNRELEASED_LOCK:        # or this process's next apply takes it over
                    _UNRELEASED[self._key] = self.identity
                return

    def __enter__(self) -> "ApplyLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _shown(t: datetime | None) -> str:
    return lease.micro(t) if t is not None else "?"
