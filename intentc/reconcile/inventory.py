"""The inventory: what intentc manages on a cluster, and what it did there.

One ConfigMap per target, `intentc-system/intentc-inventory-<target>`,
with one JSON document (key `inventory.json`).  A ConfigMap holds at most
1 MiB, about 3,000 objects of plain JSON; past `PLAIN_LIMIT` bytes the
document is stored gzipped under `binaryData` (`inventory.json.gz`, about a
fifth of the size: the spec hashes do not compress), so one ConfigMap holds
about 15,000 objects while small inventories stay readable with
`kubectl get -o yaml`.  Past `SHARD_BUDGET` gzipped bytes the objects move
to *shards* (`intentc-inventory-<target>.<i>.<digest>`, see `shards`): the
index ConfigMap keeps the history and names each shard with its digest, so
an inventory has no size cap.  It is the memory that makes prune and
rollback need no guessing:

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
import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from intentc.ir.reserved import INTENTC_NAMESPACE
from intentc.objectmeta import ObjectRef
from intentc.reconcile import inventory_schema
from intentc.render.meta import labels
from intentc.render.model import is_commit_stamp

INVENTORY_NAMESPACE = INTENTC_NAMESPACE
INVENTORY_KEY = "inventory.json"
INVENTORY_GZ_KEY = "inventory.json.gz"
PLAIN_LIMIT = 512 * 1024            # bytes of JSON kept readable (about 1,500 objects); larger ones are gzipped
CONFIGMAP_LIMIT = 1024 * 1024       # what the API server accepts in one ConfigMap's data
INVENTORY_LABEL = "intentc.dev/inventory"       # value: the target name
SHARD_LABEL = "intentc.dev/inventory-shard"     # value: the target name; never on an index
SHARD_KEY = "objects.json.gz"
# Gzipped bytes one ConfigMap carries before the objects are sharded; below the
# 1 MiB limit with room for the quarantine record on the index.
SHARD_BUDGET = 768 * 1024
INVENTORY_FORMAT = inventory_schema.FORMAT
HISTORY_LIMIT = 10
DEFAULT_TARGET_NAME = "default"
LAST_GOOD = "last-good"             # the revision word for `lastKnownGood` (rollback --to)


def inventory_name(target: str) -> str:
    return f"intentc-inventory-{target}"


def inventory_ref(target: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", INVENTORY_NAMESPACE, inventory_name(target))


def shard_ref(name: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", INVENTORY_NAMESPACE, name)


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

    @property
    def applied_commit(self) -> str | None:
        """`commit` when it names a commit: None when nothing was applied, or when the last
        apply was of a dirty tree (`<sha>-dirty`, `render.model.dirty_stamp`), whose objects no
        commit holds, so that the daemon neither adopts it nor takes it for the branch head."""
        return self.commit if is_commit_stamp(self.commit) else None

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
        if record.result == "succeeded" and record.health == "Healthy" and is_commit_stamp(record.commit):
            # a dirty tree's apply (`<sha>-dirty`) is no commit to roll back to
            inv = replace(inv, last_known_good=record.commit, last_known_good_at=record.finished_at)
        return inv

    def mark_interrupted(self) -> "Inventory":
        """A `running` record at the start of an apply belongs to one that was cut off."""
        history = tuple(replace(r, result="interrupted") if r.result == "running" else r for r in self.history)
        return replace(self, history=history)

    # -- encoding ---------------------------------------------------------
    def _doc(self) -> dict[str, Any]:
        return {"format": INVENTORY_FORMAT, "target": self.target, "commit": self.commit,
                "lastKnownGood": ({"commit": self.last_known_good, "at": self.last_known_good_at}
                                  if self.last_known_good else None),
                "objects": [e.to_json() for e in self.entries],
                "history": [r.to_json() for r in self.history]}

    def to_json(self) -> str:
        return json.dumps(self._doc(), sort_keys=True, indent=1, ensure_ascii=False)

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

    def configmaps(self) -> tuple[dict[str, Any], ...]:
        """Every ConfigMap of this inventory in the order to write them: the shards
        (none while the objects fit in one ConfigMap), then the index.

        A shard's name carries the digest of its content, so writing new shards never
        touches one the current index names: a write cut off before the index leaves
        the old index and its shards whole, and an unchanged shard is not rewritten."""
        doc = self._doc()
        estimate = len(_gzip(_compact(doc)))     # fast; the indented form packs a little larger
        if estimate <= SHARD_BUDGET:
            text = self.to_json()
            if len(text.encode("utf-8")) <= PLAIN_LIMIT:
                return (self._index(text),)
            packed = _gzip(text)
            if len(packed) <= SHARD_BUDGET:
                return (self._index(text, packed),)
        shards = [self._shard(i, packed) for i, packed in enumerate(_partition(self, doc["objects"], estimate))]
        listed = [{"name": b["metadata"]["name"], "objects": n, "sha256": d} for b, n, d in shards]
        return tuple(b for b, _, _ in shards) + (self._index(self._index_json(listed)),)

    def configmap(self) -> dict[str, Any]:
        """The index ConfigMap (the whole inventory while it fits in one)."""
        return self.configmaps()[-1]

    def _index_json(self, shards: list[dict[str, Any]]) -> str:
        doc = {**replace(self, entries=())._doc(), "shards": shards}
        return json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False)

    def _index(self, text: str, packed: bytes | None = None) -> dict[str, Any]:
        meta = {"name": inventory_name(self.target), "namespace": INVENTORY_NAMESPACE,
                "labels": {**labels(), INVENTORY_LABEL: self.target}}
        doc: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
        if len(text.encode("utf-8")) <= PLAIN_LIMIT:
            doc["data"] = {INVENTORY_KEY: text}
        else:
            # Server-side apply drops the plain key this manager no longer sends, and the other way round.
            doc["binaryData"] = {INVENTORY_GZ_KEY: base64.b64encode(packed or _gzip(text)).decode("ascii")}
        return doc

    def _shard(self, i: int, part: tuple[bytes, int]) -> tuple[dict[str, Any], int, str]:
        packed, count = part
        digest = hashlib.sha256(packed).hexdigest()
        meta = {"name": f"{inventory_name(self.target)}.{i}.{digest[:12]}", "namespace": INVENTORY_NAMESPACE,
                "labels": {SHARD_LABEL: self.target}}
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "immutable": True,
                "binaryData": {SHARD_KEY: base64.b64encode(packed).decode("ascii")}}
        return body, count, digest

    @classmethod
    def from_configmap(cls, body: Mapping[str, Any] | None, target: str,
                       shards: Mapping[str, Mapping[str, Any]] | None = None) -> "Inventory":
        """The inventory from its index ConfigMap and, when it is sharded, its shard
        ConfigMaps by name (others are ignored).  ValueError when a shard the index
        names is missing or not the one it names (digest)."""
        if body is None:
            return cls(target)
        doc = inventory_schema.parse(_index_text(body, target))
        objects = list(doc.get("objects") or [])
        for listed in doc.get("shards") or []:
            objects += _read_shard(listed, (shards or {}).get(listed["name"]), target)
        good = doc.get("lastKnownGood") or {}
        return cls(target, doc.get("commit"),
                   _sorted(Entry.from_json(e) for e in objects),
                   tuple(Record.from_json(r) for r in doc.get("history") or []),
                   good.get("commit"), good.get("at"), exists=True)


def shard_names(body: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The shards an index ConfigMap names (none for an unsharded one), without reading
    further: what a reader must fetch."""
    if body is None:
        return ()
    try:
        doc = inventory_schema.parse(_index_text(body, ""))
    except ValueError:
        return ()            # reading the index again says why
    return tuple(s["name"] for s in doc.get("shards") or [])


def _index_text(body: Mapping[str, Any], target: str) -> str:
    packed = (body.get("binaryData") or {}).get(INVENTORY_GZ_KEY)
    if packed:
        return _unpack(packed, INVENTORY_GZ_KEY)
    text = (body.get("data") or {}).get(INVENTORY_KEY)
    if not text or not isinstance(text, str):
        raise ValueError(f"ConfigMap {INVENTORY_NAMESPACE}/{inventory_name(target)} has no {INVENTORY_KEY}")
    return text


def _read_shard(listed: Mapping[str, Any], body: Mapping[str, Any] | None, target: str) -> list[Any]:
    name = listed["name"]
    if body is None:
        raise ValueError(f"shard {INVENTORY_NAMESPACE}/{name} is missing")
    packed = (body.get("binaryData") or {}).get(SHARD_KEY)
    if not packed or not isinstance(packed, str):
        raise ValueError(f"shard {name} has no {SHARD_KEY}")
    try:
        raw = base64.b64decode(packed, validate=True)
    except ValueError:
        raise ValueError(f"shard {name}: {SHARD_KEY} is not base64 text") from None
    if hashlib.sha256(raw).hexdigest() != listed["sha256"]:
        raise ValueError(f"shard {name} is not the one the index names (digest differs)")
    try:
        doc = inventory_schema.parse_shard(inventory_schema.inflate(raw))
    except ValueError as e:
        raise ValueError(f"shard {name}: {e}") from None
    if doc.get("target") != target or len(doc["objects"]) != listed["objects"]:
        raise ValueError(f"shard {name} does not hold what the index says")
    return list(doc["objects"])


def _unpack(packed: Any, key: str) -> str:
    if not isinstance(packed, str):
        raise ValueError(f"{key} is not base64 text")
    try:
        return inventory_schema.inflate(base64.b64decode(packed, validate=True))
    except ValueError as e:
        raise ValueError(f"{key} is not gzipped JSON: {e}") from None


def _compact(doc: Any) -> str:
    """Shards are read by intentc only: the C encoder's compact form (`indent` would
    fall back to the pure-Python encoder, much slower)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _gzip(text: str) -> bytes:
    # mtime=0: the same inventory always encodes to the same bytes (no-op applies stay no-ops).
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def _bucket(ref: ObjectRef, n: int) -> int:
    key = f"{ref.api_version}/{ref.kind}/{ref.namespace}/{ref.name}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % n


def _partition(inv: Inventory, docs: list[dict[str, Any]], packed_size: int) -> list[tuple[bytes, int]]:
    """The entries (`docs`, in entry order) in buckets by a hash of their ref, as few
    buckets (a power of two) as keep each under `SHARD_BUDGET` gzipped, each as (its
    gzipped shard document, its entry count): a change to some objects rewrites only
    their buckets' shards, and the same entries always land in the same shards."""
    n = 2
    while n * SHARD_BUDGET * 0.8 < packed_size:
        n *= 2
    while True:
        buckets: list[list[dict[str, Any]]] = [[] for _ in range(n)]
        for e, d in zip(inv.entries, docs):
            buckets[_bucket(e.ref, n)].append(d)
        parts = [(_gzip(_compact({"format": inventory_schema.SHARD_FORMAT, "target": inv.target, "objects": b})),
                  len(b)) for b in buckets]
        if max(len(p) for p, _ in parts) <= SHARD_BUDGET or n >= len(docs):
            return parts
        n *= 2


def _sorted(entries: Iterable[Entry]) -> tuple[Entry, ...]:
    return tuple(sorted(entries, key=lambda e: (e.step, e.ref.kind, e.ref.namespace, e.ref.name, e.ref.api_version)))
