"""The inventory: what intentc manages on a cluster, and what it did there.

One ConfigMap per target, `intentc-system/intentc-inventory-<target>`,
with one JSON document (key `inventory.json`).  A ConfigMap holds at most
1 MiB, about 3,000 objects of plain JSON; past `PLAIN_LIMIT` bytes the
document is stored gzipped under `binaryData` (`inventory.json.gz`, about a
fifth of the size: the spec hashes do not compress), so one target can
manage about 15,000 objects while small inventories stay readable with
`kubectl get -o yaml`.  It is the memory that makes prune and rollback need
no guessing:

* `objects` — every object intentc applied or was about to apply, with the
  spec hash and commit it was applied from.  `state: pending` marks objects
  whose apply was started but not confirmed (written *before* a step runs),
  so an apply cut off mid-step still leaves every object that may exist on
  record.  `desired: false` marks objects the last apply no longer wanted
  but did not prune.
* `history` — the last `HISTORY_LIMIT` applies, newest first, each with
  its commit, result, aggregated health and timestamps; `running` on an
  entry found at the start of the next apply means that apply was cut off.
* `lastKnownGood` — the last commit whose apply succeeded with every object
  healthy: what drift rollback returns to.

Pure data here; `intentc.reconcile.sync` reads and writes it.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from intentc.reconcile import inventory_schema
from intentc.render.meta import labels
from intentc.render.model import ObjectRef
from intentc.reserved import INTENTC_NAMESPACE

INVENTORY_NAMESPACE = INTENTC_NAMESPACE
INVENTORY_KEY = "inventory.json"
INVENTORY_GZ_KEY = "inventory.json.gz"
PLAIN_LIMIT = 512 * 1024            # bytes of JSON kept readable (about 1,500 objects); larger ones are gzipped
CONFIGMAP_LIMIT = 1024 * 1024       # what the API server accepts in one ConfigMap's data
INVENTORY_LABEL = "intentc.dev/inventory"       # value: the target name
INVENTORY_FORMAT = inventory_schema.FORMAT
HISTORY_LIMIT = 10
DEFAULT_TARGET_NAME = "default"
LAST_GOOD = "last-good"             # the revision word for `lastKnownGood` (rollback --to)


def inventory_name(target: str) -> str:
    return f"intentc-inventory-{target}"


def inventory_ref(target: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", INVENTORY_NAMESPACE, inventory_name(target))


@dataclass(frozen=True)
class Entry:
    ref: ObjectRef
    step: int
    spec_hash: str
    commit: str
    intent: str | None = None
    tenant: str | None = None
    state: str = "applied"           # applied | pending
    desired: bool = True
    adopted: bool = False            # existed before intentc managed it: never pruned (Namespaces)

    def to_json(self) -> dict[str, Any]:
        doc = {**self.ref.to_json(), "step": self.step, "specHash": self.spec_hash, "commit": self.commit,
               "intent": self.intent, "tenant": self.tenant, "state": self.state, "desired": self.desired}
        if self.adopted:        # written only when set: older inventories read and write the same bytes
            doc["adopted"] = True
        return doc

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Entry":
        return cls(ObjectRef.from_json(d), int(d.get("step", 0)), str(d.get("specHash", "")),
                   str(d.get("commit", "")), d.get("intent"), d.get("tenant"),
                   str(d.get("state", "applied")), bool(d.get("desired", True)), bool(d.get("adopted", False)))


@dataclass(frozen=True)
class Record:
    commit: str
    started_at: str
    finished_at: str | None = None
    result: str = "running"          # running | succeeded | failed | interrupted
    health: str = "Unknown"
    counts: tuple[tuple[str, int], ...] = ()
    message: str = ""

    def same_outcome(self, other: "Record") -> bool:
        """Equal but for timestamps: a no-op re-apply records nothing new."""
        return (self.commit, self.result, self.health, self.message) == \
            (other.commit, other.result, other.health, other.message)

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "startedAt": self.started_at, "finishedAt": self.finished_at,
                "result": self.result, "health": self.health, "counts": dict(self.counts),
                "message": self.message}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Record":
        return cls(str(d.get("commit", "")), str(d.get("startedAt", "")), d.get("finishedAt"),
                   str(d.get("result", "running")), str(d.get("health", "Unknown")),
                   tuple(sorted((str(k), int(v)) for k, v in (d.get("counts") or {}).items())),
                   str(d.get("message", "")))


@dataclass(frozen=True)
class Inventory:
    target: str = DEFAULT_TARGET_NAME
    commit: str | None = None                  # last commit whose apply finished
    entries: tuple[Entry, ...] = ()
    history: tuple[Record, ...] = ()           # newest first
    last_known_good: str | None = None
    last_known_good_at: str | None = None
    exists: bool = field(default=False, compare=False)   # read from the cluster (vs new)

    # -- queries ----------------------------------------------------------
    def refs(self) -> set[ObjectRef]:
        return {e.ref for e in self.entries}

    def entry(self, ref: ObjectRef) -> Entry | None:
        return next((e for e in self.entries if e.ref == ref), None)

    @property
    def last(self) -> Record | None:
        return self.history[0] if self.history else None

    # -- updates (each returns a new inventory) ----------------------------
    def with_entries(self, entries: Iterable[Entry]) -> "Inventory":
        by_ref = {e.ref: e for e in self.entries}
        for e in entries:
            by_ref[e.ref] = e
        return replace(self, entries=_sorted(by_ref.values()))

    def without(self, refs: Iterable[ObjectRef]) -> "Inventory":
        gone = set(refs)
        return replace(self, entries=tuple(e for e in self.entries if e.ref not in gone))

    def with_record(self, record: Record) -> "Inventory":
        """Put `record` first, replacing a running record of the same start."""
        rest = tuple(r for r in self.history if not (r.started_at == record.started_at and r.commit == record.commit))
        inv = replace(self, history=(record,) + rest[:HISTORY_LIMIT - 1])
        if record.result in ("succeeded", "failed"):
            inv = replace(inv, commit=record.commit if record.result == "succeeded" else inv.commit)
        if record.result == "succeeded" and record.health == "Healthy":
            inv = replace(inv, last_known_good=record.commit, last_known_good_at=record.finished_at)
        return inv

    def mark_interrupted(self) -> "Inventory":
        """A `running` record at the start of an apply belongs to one that was cut off."""
        history = tuple(replace(r, result="interrupted") if r.result == "running" else r for r in self.history)
        return replace(self, history=history)

    # -- encoding ---------------------------------------------------------
    def to_json(self) -> str:
        doc = {"format": INVENTORY_FORMAT, "target": self.target, "commit": self.commit,
               "lastKnownGood": ({"commit": self.last_known_good, "at": self.last_known_good_at}
                                 if self.last_known_good else None),
               "objects": [e.to_json() for e in self.entries],
               "history": [r.to_json() for r in self.history]}
        return json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, target: str) -> "Inventory":
        """Raises ValueError on a document that is not an intentc inventory
        (checked against `inventory_schema.SCHEMA` before anything is read)."""
        doc = inventory_schema.parse(text)
        good = doc.get("lastKnownGood") or {}
        return cls(target, doc.get("commit"),
                   _sorted(Entry.from_json(e) for e in doc.get("objects") or []),
                   tuple(Record.from_json(r) for r in doc.get("history") or []),
                   good.get("commit"), good.get("at"), exists=True)

    def configmap(self) -> dict[str, Any]:
        meta = {"name": inventory_name(self.target), "namespace": INVENTORY_NAMESPACE,
                "labels": {**labels(), INVENTORY_LABEL: self.target}}
        text = self.to_json()
        doc: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
        if len(text.encode("utf-8")) <= PLAIN_LIMIT:
            doc["data"] = {INVENTORY_KEY: text}
        else:
            # mtime=0: the same inventory always encodes to the same bytes (no-op applies stay no-ops).
            # Server-side apply drops the plain key this manager no longer sends, and the other way round.
            packed = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
            doc["binaryData"] = {INVENTORY_GZ_KEY: base64.b64encode(packed).decode("ascii")}
        return doc

    @classmethod
    def from_configmap(cls, body: Mapping[str, Any] | None, target: str) -> "Inventory":
        if body is None:
            return cls(target)
        packed = (body.get("binaryData") or {}).get(INVENTORY_GZ_KEY)
        if packed:
            if not isinstance(packed, str):
                raise ValueError(f"{INVENTORY_GZ_KEY} is not base64 text")
            try:
                text = inventory_schema.inflate(base64.b64decode(packed, validate=True))
            except ValueError as e:
                raise ValueError(f"{INVENTORY_GZ_KEY} is not gzipped JSON: {e}") from None
            return cls.from_json(text, target)
        plain = (body.get("data") or {}).get(INVENTORY_KEY)
        if not plain or not isinstance(plain, str):
            raise ValueError(f"ConfigMap {INVENTORY_NAMESPACE}/{inventory_name(target)} has no {INVENTORY_KEY}")
        return cls.from_json(plain, target)


def _sorted(entries: Iterable[Entry]) -> tuple[Entry, ...]:
    return tuple(sorted(entries, key=lambda e: (e.step, e.ref.kind, e.ref.namespace, e.ref.name, e.ref.api_version)))
