"""Fetching what detection compares against, and re-applying what `heal` restores.

Every object labelled `managed-by: intentc` is listed (one LIST per kind);
an object whose labels somebody stripped is not in that list but still
exists, and calling it `missing` would be wrong — so desired objects the
list lacks are fetched one by one (usually none).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from intentc.drift.detect import History, Report, detect
from intentc.kube.client import KubeClient
from intentc.kube.errors import ApplyConflict, Invalid, KubeError, NotFound
from intentc.objectmeta import MANAGED_BY, MANAGED_BY_LABEL, ObjectRef
from intentc.reconcile import inventory_store
from intentc.reconcile.inventory import INVENTORY_NAMESPACE, Inventory, inventory_ref
from intentc.reconcile.sync import REPLACEABLE_KINDS
from intentc.render.model import Manifest

SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"


def list_managed(client: KubeClient, kinds: Iterable[tuple[str, str]]) -> dict[ObjectRef, Mapping[str, Any]]:
    """Every object labelled `managed-by: intentc` of `kinds`, cluster-wide, one LIST per kind."""
    live: dict[ObjectRef, Mapping[str, Any]] = {}
    for api_version, kind in sorted(set(kinds)):
        try:
            items = client.list(api_version, kind, "", SELECTOR)
        except NotFound:          # a kind the server does not serve (any more)
            continue
        for item in items:
            live[ObjectRef.of(item)] = item
    return live


def fetch_live(client: KubeClient, manifests: Sequence[Manifest], inventory: Inventory
               ) -> dict[ObjectRef, Mapping[str, Any]]:
    """What detection needs from the cluster for these desired objects."""
    kinds = {(m.ref.api_version, m.ref.kind) for m in manifests} | {(r.api_version, r.kind) for r in inventory.refs()}
    return complete(client, list_managed(client, kinds), (m.ref for m in manifests))


@dataclass(frozen=True)
class Managed:
    """What every intentc target on the cluster records as its own.

    A cluster can hold several targets (one inventory each); an object in
    another target's inventory is that target's, not an orphan of ours.
    The inventories themselves and their namespace are intentc's plumbing."""

    inventory: Inventory                 # this target's
    refs: frozenset[ObjectRef]           # every target's objects
    plumbing: frozenset[ObjectRef]       # inventory ConfigMaps and their namespace


def own_plumbing(target: str) -> frozenset[ObjectRef]:
    """This target's inventory and the namespace holding it."""
    return frozenset({inventory_ref(target), ObjectRef("v1", "Namespace", "", INVENTORY_NAMESPACE)})


def read_managed(client: KubeClient, target: str) -> Managed:
    """Raises KubeError, and ValueError for an unreadable inventory of `target`."""
    own = inventory_store.read_inventory(client, target)
    refs = set(own.refs())
    others, listed = inventory_store.read_others(client, target)   # unreadable ones: their objects may show as orphans
    for other in others.values():
        refs |= other.refs()
    return Managed(own, frozenset(refs), own_plumbing(target) | listed)


def observe(client: KubeClient, manifests: Sequence[Manifest], target: str, history: History | None
            ) -> tuple[Report, Inventory]:
    """Read the cluster and detect: the whole of `intentc drift`, minus printing.
    Raises KubeError (unreachable, denied) and ValueError (unreadable inventory)."""
    managed = read_managed(client, target)
    live = fetch_live(client, manifests, managed.inventory)
    report = detect([m.body for m in manifests], live.values(), managed.refs, history, exclude=managed.plumbing,
                    own=managed.inventory.refs())
    return report, managed.inventory


def complete(client: KubeClient, live: dict[ObjectRef, Mapping[str, Any]],
             wanted: Iterable[ObjectRef]) -> dict[ObjectRef, Mapping[str, Any]]:
    """`live` plus a GET of each wanted object it does not hold."""
    for ref in wanted:
        if ref not in live:
            body = client.get(ref)
            if body is not None:
                body.setdefault("apiVersion", ref.api_version)
                body.setdefault("kind", ref.kind)
                live[ref] = body
    return live


@dataclass(frozen=True)
class HealOutcome:
    ref: ObjectRef
    ok: bool
    message: str
    body: Mapping[str, Any] | None = None


def heal(client: KubeClient, manifest: Manifest, sleep: Callable[[float], None] = time.sleep) -> HealOutcome:
    """Server-side apply of the desired object with `force`: intentc takes back
    the fields it sets.  A Job whose immutable template drifted (stale or
    foreign) can only be replaced, as the reconciler does."""
    try:
        return HealOutcome(manifest.ref, True, "re-applied", client.apply(manifest.body, force=True))
    except Invalid as e:
        if not (e.immutable and manifest.ref.kind in REPLACEABLE_KINDS):
            return HealOutcome(manifest.ref, False, e.message)
    except ApplyConflict as e:       # cannot happen with force; kept for a clear message
        return HealOutcome(manifest.ref, False, e.message)
    except KubeError as e:
        return HealOutcome(manifest.ref, False, e.message)
    try:
        client.delete(manifest.ref)
        for _ in range(60):
            if client.get(manifest.ref) is None:
                break
            sleep(0.5)
        return HealOutcome(manifest.ref, True, "replaced (immutable fields)", client.apply(manifest.body, force=True))
    except KubeError as e:
        return HealOutcome(manifest.ref, False, e.message)
