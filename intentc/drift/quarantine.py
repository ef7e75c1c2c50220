"""Quarantined commits, recorded on the inventory object itself.

A commit whose rollout was rolled back must not be applied again by the
daemon (it would fail the same way, forever); a newer commit on the branch
clears it.  The record lives in the inventory ConfigMap under its own key
(`quarantine.json`), written by server-side apply with its own field
manager (`intentc-rollback`): the reconciler's apply of `inventory.json`
(manager `intentc`) and ours then own disjoint fields, so neither write can
drop the other's — no read-modify-write race between two writers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from intentc.drift.detect import History
from intentc.reconcile.inventory import (
    INVENTORY_NAMESPACE,
    inventory_name,
    inventory_ref,
)

if TYPE_CHECKING:                  # the records are pure data; only read/write need a client
    from intentc.kube.client import KubeClient

QUARANTINE_KEY = "quarantine.json"
QUARANTINE_FORMAT = "intentc.dev/quarantine/v1"
QUARANTINE_MANAGER = "intentc-rollback"


@dataclass(frozen=True)
class Entry:
    commit: str
    reason: str
    at: str                          # when it was quarantined (UTC, RFC 3339)
    rolled_back_to: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "reason": self.reason, "at": self.at, "rolledBackTo": self.rolled_back_to}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Entry:
        return cls(str(d["commit"]), str(d.get("reason", "")), str(d.get("at", "")), d.get("rolledBackTo"))


@dataclass(frozen=True)
class Quarantine:
    entries: tuple[Entry, ...] = ()

    def __contains__(self, commit: object) -> bool:
        return any(e.commit == commit for e in self.entries)

    def get(self, commit: str) -> Entry | None:
        return next((e for e in self.entries if e.commit == commit), None)

    def add(self, entry: Entry) -> Quarantine:
        rest = tuple(e for e in self.entries if e.commit != entry.commit)
        return replace(self, entries=tuple(sorted(rest + (entry,), key=lambda e: (e.at, e.commit))))

    def cleared_by(self, commit: str, history: History) -> Quarantine:
        """Without the entries `commit` supersedes (older commits of the branch)."""
        if not history.knows(commit):
            return self
        keep = tuple(e for e in self.entries
                     if e.commit == commit or not (history.knows(e.commit) and history.older(e.commit, commit)))
        return replace(self, entries=keep)

    def to_json(self) -> str:
        return json.dumps({"format": QUARANTINE_FORMAT, "commits": [e.to_json() for e in self.entries]},
                          sort_keys=True, indent=1)

    @classmethod
    def from_configmap(cls, body: Mapping[str, Any] | None) -> Quarantine:
        text = ((body or {}).get("data") or {}).get(QUARANTINE_KEY)
        if not text:
            return cls()
        try:
            doc = json.loads(text)
            if doc.get("format") != QUARANTINE_FORMAT:
                return cls()
            return cls(tuple(Entry.from_json(e) for e in doc.get("commits") or []))
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()


def read(client: KubeClient, target: str) -> Quarantine:
    return Quarantine.from_configmap(client.get(inventory_ref(target)))


def write(client: KubeClient, target: str, quarantine: Quarantine) -> None:
    """Record `quarantine` on the target's inventory (which must exist: a
    quarantine only ever follows an apply)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": inventory_name(target), "namespace": INVENTORY_NAMESPACE},
            "data": {QUARANTINE_KEY: quarantine.to_json()}}
    client.apply(body, force=True, field_manager=QUARANTINE_MANAGER)
