"""Reading and writing a target's inventory, index and shards, on the cluster.

`inventory.py` says what the ConfigMaps hold; this module moves them.  The
write order is what keeps a sharded inventory whole through a crash: new
shards first (content-addressed names, so none of them is one the current
index names), then the index in one apply (the switch), then the shards
nothing names any more.  A write cut off before the index leaves the old
index and all its shards; one cut off after it leaves only unnamed shards,
which the next write deletes.  Readers fetch the index and, when it names
shards, every shard of the target in one LIST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from intentc.kube.client import KubeClient
from intentc.reconcile.inventory import (INVENTORY_LABEL, INVENTORY_NAMESPACE, SHARD_LABEL, Inventory,
                                         inventory_ref, shard_names, shard_ref)


@dataclass(frozen=True)
class Stored:
    """An inventory as read, with the shard ConfigMaps of its target found on the cluster
    (named by the index or left over from a cut-off write)."""

    inventory: Inventory
    shards_present: frozenset[str] = frozenset()


def _shards(client: KubeClient, target: str) -> dict[str, Mapping[str, Any]]:
    items = client.list("v1", "ConfigMap", INVENTORY_NAMESPACE, f"{SHARD_LABEL}={target}")
    return {str(b["metadata"]["name"]): b for b in items}


def read(client: KubeClient, target: str) -> Stored:
    """This target's inventory.  Raises KubeError, and ValueError when it is unreadable
    (a shard the index names is missing or altered)."""
    index = client.get(inventory_ref(target))
    named = shard_names(index)
    shards = _shards(client, target) if named else {}
    return Stored(Inventory.from_configmap(index, target, shards), frozenset(shards))


def read_inventory(client: KubeClient, target: str) -> Inventory:
    return read(client, target).inventory


def read_others(client: KubeClient, target: str) -> tuple[dict[str, Inventory], frozenset[Any]]:
    """Every other target's inventory on the cluster (unreadable ones left out: their
    problem, reported when they run), and the refs of all inventory ConfigMaps, indexes
    and shards, ours included: intentc's plumbing, never drift."""
    from intentc.objectmeta import ObjectRef

    indexes = client.list("v1", "ConfigMap", INVENTORY_NAMESPACE, INVENTORY_LABEL)
    shard_items = client.list("v1", "ConfigMap", INVENTORY_NAMESPACE, SHARD_LABEL)
    plumbing = {ObjectRef.of({"apiVersion": "v1", "kind": "ConfigMap", **b}) for b in indexes + shard_items}
    by_name = {str(b["metadata"]["name"]): b for b in shard_items}
    out: dict[str, Inventory] = {}
    for body in indexes:
        other = str((body.get("metadata", {}).get("labels") or {}).get(INVENTORY_LABEL, ""))
        if other and other != target:
            try:
                out[other] = Inventory.from_configmap(body, other, by_name)
            except ValueError:
                continue
    return out, frozenset(plumbing)


def write(client: KubeClient, inventory: Inventory, present: frozenset[str] = frozenset()) -> frozenset[str]:
    """Write `inventory` (shards, then the index, then delete the shards it no longer
    names); `present` are the shard names known to exist, which are not sent again.
    Returns the shard names that exist afterwards."""
    bodies = inventory.configmaps()
    index, shards = bodies[-1], bodies[:-1]
    names = frozenset(str(b["metadata"]["name"]) for b in shards)
    for body in shards:
        if body["metadata"]["name"] not in present:
            client.apply(body, force=True)
    client.apply(index, force=True)
    for name in sorted(present - names):
        client.delete(shard_ref(name))
    return names
