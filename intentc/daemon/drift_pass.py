"""What one detection pass looks at, and what it heals: pure decisions.

The reactor (`loop.py`) runs a pass over the objects that changed (an
informer event) or over everything (a resync).  The choices around the
detector are made here from plain data — the desired objects by ref, the
informers' cache, the inventory — so they are tested without a cluster:

* which desired objects the pass covers, and which of them to GET because
  the informers do not hold them (an object whose intentc labels were
  stripped still exists, and must not be called missing);
* which live objects the detector sees;
* which heals run now, and which wait for an earlier wave (a heal respects
  waves as a rollout does).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intentc.drift.policy import Decision, wave_blocker
from intentc.reconcile.inventory import Inventory
from intentc.render.model import Manifest
from intentc.objectmeta import ObjectRef

# Above this many absent objects the informers' word is taken rather than sending a
# GET per object: many are absent during a rollout, or after a namespace was deleted.
MAX_GETS_PER_PASS = 50


def in_scope(by_ref: Mapping[ObjectRef, Manifest], refs: Iterable[ObjectRef] | None) -> Mapping[ObjectRef, Manifest]:
    """The desired objects a pass over `refs` covers (None: a resync covers all)."""
    if refs is None:
        return by_ref
    return {r: by_ref[r] for r in refs if r in by_ref}


def to_fetch(refs: Iterable[ObjectRef], cache: Mapping[ObjectRef, Any]) -> list[ObjectRef]:
    """Of `refs`, those to GET: the ones the informers do not hold, unless too many are absent."""
    absent = [r for r in refs if r not in cache]
    return absent if len(absent) <= MAX_GETS_PER_PASS else []


def live_in_scope(cache: Mapping[ObjectRef, Mapping[str, Any]], refs: Iterable[ObjectRef] | None
                  ) -> Mapping[ObjectRef, Mapping[str, Any]]:
    """The live objects the detector sees: the changed ones, or the whole cache on a resync
    (which lets it find foreign and orphaned objects too)."""
    if refs is None:
        return cache
    return {r: cache[r] for r in refs if r in cache}


def applied_refs(inventory: Inventory | None) -> set[ObjectRef]:
    """Objects the inventory records as applied: a missing one of these is drift to heal;
    a missing one that was never applied is a wave not reached yet."""
    if inventory is None:
        return set()
    return {e.ref for e in inventory.entries if e.state == "applied"}


def drift_level(busy: str) -> int:
    """How loud a new drift finding is: during a rollout or rollback objects come and go
    by design (worth a line, not a warning)."""
    return logging.INFO if busy else logging.WARNING


@dataclass(frozen=True, slots=True)
class HealStep:
    decision: Decision
    manifest: Manifest
    blocked: str | None           # why it waits (an earlier wave not healthy), or None: heal now


def heal_plan(due: Sequence[tuple[Decision, Manifest]], desired: Sequence[Manifest],
              live: Mapping[ObjectRef, Mapping[str, Any]]) -> list[HealStep]:
    """The heals due, in order, each with what it waits for (`drift.policy.wave_blocker`)."""
    return [HealStep(d, m, wave_blocker(m, desired, live)) for d, m in due]
