"""An apply lock this process could not release is taken over by its own next apply.

The daemon's rollout holds `intentc-apply-<target>`; when the API server
goes away mid-apply the apply aborts and its release fails too, so the
Lease stays, naming a holder that has ended.  The next apply in the same
process used to wait that hold out (60 s: issue 39, the API server and etcd
restarted mid Kueue rollout).  It takes the identity over instead; another
process still waits, and a release that worked leaves nothing to take over.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from intentc.kube.errors import Unreachable
from intentc.reconcile.lock import ApplyLock, LockBusy
from intentc.render.model import ObjectRef
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
