"""An apply lock this process could not release is taken over by its own next apply.

The daemon's rollout holds `intentc-apply-<target>`; when the API server
goes away mid-apply the apply aborts and its release fails too, so the
Lease stays, naming a holder that has ended.  The next apply in the same
process used to wait that hold out (60 s: issue 39, the API server and etcd
restarted mid Kueue rollout).  It takes the identity over instead; another
process still waits, and a release that worked leaves nothing to take over.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from intentc.kube.errors import Unreachable
from intentc.reconcile.lock import LEASE_SECONDS, POLL_SECONDS, ApplyLock, LockBusy
from intentc.objectmeta import ObjectRef
from tests.test_daemon_leader import Leases

T0 = datetime(2026, 12, 7, tzinfo=timezone.utc)


class Flaky(Leases):
    host = "https://api.example:6443"

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        if self.down:
            raise Unreachable("cannot reach the API server", 0, "")
        return super().get(ref)


def test_a_hold_the_api_server_outage_left_is_taken_over_by_the_next_apply_here() -> None:
    store = Flaky()
    first = ApplyLock(store, "prod", now=lambda: T0)  # type: ignore[arg-type]
    first.acquire()
    store.down = True
    first.release()                             # the API server is gone: the Lease stays
    store.down = False
    assert store.body is not None and store.body["spec"]["holderIdentity"] == first.identity
    # another process (another identity) still waits for the hold to expire
    with pytest.raises(LockBusy):
        ApplyLock(store, "prod", wait=0, identity="other", now=lambda: T0 + timedelta(seconds=5)).acquire()  # type: ignore[arg-type]
    # this process's next apply takes it over at once, as its own
    second = ApplyLock(store, "prod", wait=0, now=lambda: T0 + timedelta(seconds=5))  # type: ignore[arg-type]
    assert second.identity == first.identity
    second.acquire()
    second.release()
    assert store.body["spec"]["holderIdentity"] is None
    third = ApplyLock(store, "prod", now=lambda: T0)  # type: ignore[arg-type]
    assert third.identity != first.identity     # released: nothing left to take over


class Script(threading.Event):
    """The renewer's stop event, scripted: each pause it takes is recorded, and the renewal
    after it meets the API server down or up as the script says; at the end of the script it stops."""

    def __init__(self, store: Flaky, down: list[bool]) -> None:
        super().__init__()
        self.store, self.down = store, list(down)
        self.pauses: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.pauses.append(timeout)
        if not self.down:
            return True
        self.store.down = self.down.pop(0)
        return False


class Timed(Flaky):
    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[tuple[float, float]] = []

    def with_timeout(self, timeout: tuple[float, float]) -> "Timed":
        self.timeouts.append(timeout)
        return self


def test_a_held_lock_is_renewed_every_third_of_its_lease_and_soon_after_a_failed_renewal() -> None:
    store = Timed()
    clock = iter(T0 + timedelta(seconds=s) for s in range(100))
    lock = ApplyLock(store, "prod", now=lambda: next(clock))  # type: ignore[arg-type]
    script = lock._stop = Script(store, [False, True, True, False])
    lock.acquire()
    assert lock._renewer is not None
    lock._renewer.join(timeout=30)
    assert not lock._renewer.is_alive()
    period = LEASE_SECONDS / 3
    # renewed, failed twice (retried after POLL_SECONDS each time), renewed, stopped
    assert script.pauses == [period, period, POLL_SECONDS, POLL_SECONDS, period]
    assert store.version == 3, "taken, then renewed twice"
    assert store.body is not None and store.body["spec"]["holderIdentity"] == lock.identity and not lock.lost
    assert store.timeouts == [(5.0, period)], "a renewal's requests end within its period"
    lock.release()
    assert store.body["spec"]["holderIdentity"] is None


def test_a_lock_unrenewed_for_a_whole_lease_is_lost_even_if_the_server_comes_back() -> None:
    """Renewals failing for as long as the Lease lasts: a waiter may have taken it over, so
    the holder must stop writing (`lost`), and a later successful read does not undo that."""
    store = Timed()
    ticks = iter(range(0, 10_000, 2))          # the monotonic clock: 2 s per reading
    lock = ApplyLock(store, "prod", now=lambda: T0, monotonic=lambda: float(next(ticks)))  # type: ignore[arg-type]
    failures = LEASE_SECONDS // 2 + 1          # 2 s apart: together longer than the Lease
    script = lock._stop = Script(store, [True] * failures + [False])
    lock.acquire()
    assert lock._renewer is not None
    lock._renewer.join(timeout=30)
    assert lock.lost
    assert script.pauses[-1] == LEASE_SECONDS / 3, "renewed once the server was back"


def test_a_short_outage_does_not_lose_the_lock() -> None:
    store = Timed()
    ticks = iter(range(0, 10_000, 2))
    lock = ApplyLock(store, "prod", now=lambda: T0, monotonic=lambda: float(next(ticks)))  # type: ignore[arg-type]
    script = lock._stop = Script(store, [True, True, False])
    lock.acquire()
    assert lock._renewer is not None
    lock._renewer.join(timeout=30)
    assert not lock.lost and len(script.pauses) == 4
