"""One apply at a time per target: a coordination.k8s.io Lease as a lock.

The inventory is read at the start of an apply and written through it, so
two applies of different revisions to one target that overlap would each
write the inventory from their own reading, and the last writer would drop
what the other applied (issue 16: 50 Jobs untracked).  Every apply of a
target therefore holds the Lease `intentc-system/intentc-apply-<target>`
from before it reads the inventory until after its last write.

Taking the Lease is optimistic concurrency on the API server: create it,
or replace it with the resourceVersion read, when it is free or expired.
Two processes that race get one success and one `AlreadyExists` /
`Outdated`, and the loser reads again.  The holder renews it every third
of its duration from a thread, so a long apply keeps it; a holder that
died leaves it to expire, after which the next apply takes it over.  A
waiter gives up after `wait` seconds with the holder's name (exit 2).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from intentc.kube.client import KubeClient
from intentc.kube.errors import AlreadyExists, KubeError, Outdated
from intentc.reserved import INTENTC_NAMESPACE
from intentc.render.model import ObjectRef

LEASE_SECONDS = 60
POLL_SECONDS = 1.0


class LockBusy(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def lease_ref(target: str) -> ObjectRef:
    return ObjectRef("coordination.k8s.io/v1", "Lease", INTENTC_NAMESPACE, f"intentc-apply-{target}")


def holder_identity() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def _micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


class ApplyLock:
    """`with ApplyLock(client, target):` — the body runs while this process holds the target."""

    def __init__(self, client: KubeClient, target: str, wait: float = 600.0,
                 duration: int = LEASE_SECONDS, identity: str | None = None,
                 now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.client, self.ref, self.wait, self.duration = client, lease_ref(target), wait, duration
        self.identity = identity or holder_identity()
        self.now, self.sleep, self.monotonic = now, sleep, monotonic
        self.lost = False                     # renewal found someone else holding it
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _body(self, acquired: str, existing: dict[str, Any] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.ref.name, "namespace": self.ref.namespace,
                                "labels": {"app.kubernetes.io/managed-by": "intentc"}}
        if existing is not None:
            meta["resourceVersion"] = existing["metadata"]["resourceVersion"]
        return {"apiVersion": self.ref.api_version, "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
                         "acquireTime": acquired, "renewTime": _micro(self.now())}}

    def _free(self, lease: dict[str, Any]) -> bool:
        spec = lease.get("spec") or {}
        if not spec.get("holderIdentity") or spec.get("holderIdentity") == self.identity:
            return True
        renewed = _parse(spec.get("renewTime"))
        seconds = spec.get("leaseDurationSeconds")
        if renewed is None or not isinstance(seconds, int):
            return True                       # not a lease anyone could hold
        return renewed + timedelta(seconds=seconds) < self.now()

    def acquire(self) -> None:
        deadline = self.monotonic() + self.wait
        while True:
            lease = self.client.get(self.ref)
            try:
                if lease is None:
                    self.client.create(self._body(_micro(self.now())))
                    break
                if self._free(lease):
                    self.client.replace(self._body(_micro(self.now()), lease))
                    break
            except (AlreadyExists, Outdated):
                continue                      # another process won this round: read again
            if self.monotonic() >= deadline:
                spec = lease.get("spec") or {}
                raise LockBusy(f"target is being applied by {spec.get('holderIdentity')} (since "
                               f"{spec.get('acquireTime')}); waited {self.wait:g}s — try again later")
            self.sleep(POLL_SECONDS)
        self._renewer = threading.Thread(target=self._renew, name="intentc-lease", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.duration / 3):
            try:
                lease = self.client.get(self.ref)
                if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    self.lost = True
                    return
                acquired = str((lease.get("spec") or {}).get("acquireTime") or _micro(self.now()))
                self.client.replace(self._body(acquired, lease))
            except KubeError:                 # a failed renewal is retried next period
                continue

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=10)
        for _ in range(5):
            try:
                lease = self.client.get(self.ref)
                if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                    return
                body = self._body(str(lease["spec"].get("acquireTime")), lease)
                body["spec"]["holderIdentity"] = None
                self.client.replace(body)
                return
            except Outdated:
                continue
            except KubeError:                 # gone, or no cluster: the lease expires by itself
                return

    def __enter__(self) -> "ApplyLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
