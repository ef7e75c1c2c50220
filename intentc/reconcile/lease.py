"""A coordination.k8s.io/v1 Lease: its record, and reading and writing it.

Two things in intentc hold Leases in `intentc-system`: the apply lock
(`intentc-apply-<target>`, `reconcile.lock`) and the daemon's leader
election (`intentc-daemon-<target>`, `daemon.election`).  Both read the
record, decide, and write it back conditioned on the resourceVersion they
read (optimistic concurrency: of two writers racing, the API server lets one
through and answers the other `409 Conflict` → `Outdated`, or
`AlreadyExists` for two creates).  This module is that read and that write,
once; what to write is the caller's decision.

The record is the Lease's spec as client-go's resourcelock writes it
(holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
leaseTransitions; times with microseconds).  Errors are the client's
(`intentc.kube.errors`) and propagate, so this module stays importable by
the pure deciders.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from intentc.ir.reserved import INTENTC_NAMESPACE
from intentc.objectmeta import ObjectRef

if TYPE_CHECKING:
    from intentc.kube.client import KubeClient

API_VERSION = "coordination.k8s.io/v1"
_MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def lease_ref(name: str) -> ObjectRef:
    return ObjectRef(API_VERSION, "Lease", INTENTC_NAMESPACE, name)


def micro(t: datetime) -> str:
    return t.strftime(_MICRO)


def parse_micro(text: Any) -> datetime | None:
    try:
        return datetime.strptime(str(text), _MICRO).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


@dataclass(frozen=True)
class LeaseRecord:
    holder: str = ""                    # "" (or null on the server): nobody holds it
    duration: int | None = None         # leaseDurationSeconds
    acquired: datetime | None = None
    renewed: datetime | None = None
    transitions: int = 0

    @classmethod
    def from_object(cls, body: dict[str, Any]) -> "LeaseRecord":
        spec = body.get("spec") or {}
        seconds, moves = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
        return cls(str(spec.get("holderIdentity") or ""),
                   seconds if isinstance(seconds, int) and not isinstance(seconds, bool) else None,
                   parse_micro(spec.get("acquireTime")), parse_micro(spec.get("renewTime")),
                   moves if isinstance(moves, int) and not isinstance(moves, bool) else 0)

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"holderIdentity": self.holder or None, "leaseTransitions": self.transitions}
        if self.duration is not None:
            spec["leaseDurationSeconds"] = self.duration
        if self.acquired is not None:
            spec["acquireTime"] = micro(self.acquired)
        if self.renewed is not None:
            spec["renewTime"] = micro(self.renewed)
        return spec


@dataclass(frozen=True)
class Held:
    """A record as read, with the resourceVersion a conditional write needs."""

    record: LeaseRecord
    resource_version: str


def read(client: KubeClient, ref: ObjectRef) -> Held | None:
    body = client.get(ref)
    if body is None:
        return None
    return Held(LeaseRecord.from_object(body), str(body["metadata"].get("resourceVersion") or ""))


def write(client: KubeClient, ref: ObjectRef, record: LeaseRecord, read_as: Held | None) -> Held:
    """Create the Lease (`read_as` None) or replace the version read; `AlreadyExists` /
    `Outdated` when another writer was first — the caller reads again."""
    meta: dict[str, Any] = {"name": ref.name, "namespace": ref.namespace,
                            "labels": {"app.kubernetes.io/managed-by": "intentc"}}
    if read_as is not None:
        meta["resourceVersion"] = read_as.resource_version
    body = {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta, "spec": record.spec()}
    out = client.create(body) if read_as is None else client.replace(body)
    return Held(LeaseRecord.from_object(out), str(out["metadata"].get("resourceVersion") or ""))
