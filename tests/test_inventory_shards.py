"""A target's inventory past what one ConfigMap holds: sharded, written so a crash never loses an entry.

Pure tests shrink `SHARD_BUDGET` so that a few hundred entries shard; the
`kube` tests write and read 20,000 entries on the real API server at the
real budget.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import intentc.reconcile.inventory as inventory_module
from intentc.kube.client import KubeClient
from intentc.reconcile import inventory_store
from intentc.reconcile.inventory import (CONFIGMAP_LIMIT, SHARD_LABEL, Entry, Inventory, Record, inventory_ref,
                                         shard_names, shard_ref)
from intentc.objectmeta import ObjectRef
from intentc.render.stamp import spec_hash
from tests.kube_env import KubeEnv

_ids = itertools.count(1)


def big_inventory(target: str, objects: int, commit: str = "c" * 40) -> Inventory:
    entries = [Entry(ObjectRef("batch/v1", "Job", f"{target}-ns{i % 40}", f"job-{i:05d}"), 100 + i % 3,
                     spec_hash({"i": i}), commit, f"intent-{i}", "team") for i in range(objects)]
    return Inventory(target, commit).with_entries(entries).with_record(Record(commit, "t0", "t1", "succeeded"))


@pytest.fixture()
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inventory_module, "SHARD_BUDGET", 4096)


def _size(body: dict) -> int:
    return sum(len(v) for key in ("data", "binaryData") for v in (body.get(key) or {}).values())


def test_an_inventory_that_fits_stays_one_configmap() -> None:
    inv = big_inventory("prod", 500)
    assert len(inv.configmaps()) == 1 and shard_names(inv.configmap()) == ()


def test_past_the_budget_the_objects_move_to_shards_and_read_back(small_budget: None) -> None:
    inv = big_inventory("prod", 600)
    bodies = inv.configmaps()
    index, shards = bodies[-1], bodies[:-1]
    assert len(shards) >= 4
    assert json.loads(index["data"]["inventory.json"])["objects"] == []          # the index holds no objects
    assert shard_names(index) == tuple(b["metadata"]["name"] for b in shards)
    assert all(b["metadata"]["labels"] == {SHARD_LABEL: "prod"} for b in shards)
    assert all(_size(b) <= 4096 for b in shards)
    back = Inventory.from_configmap(index, "prod", {b["metadata"]["name"]: b for b in shards})
    assert back == inv and back.history == inv.history
    assert inv.configmaps() == bodies                      # same bytes every time


def test_a_change_rewrites_only_the_shards_holding_it(small_budget: None) -> None:
    inv = big_inventory("prod", 600)
    before = {b["metadata"]["name"] for b in inv.configmaps()[:-1]}
    one = inv.entries[17]
    changed = inv.with_entries([Entry(one.ref, one.step, "x" * 64, one.commit, one.intent, one.tenant)])
    after = {b["metadata"]["name"] for b in changed.configmaps()[:-1]}
    assert len(after - before) == 1 and len(before - after) == 1


def test_a_missing_or_altered_shard_makes_the_inventory_unreadable(small_budget: None) -> None:
    bodies = big_inventory("prod", 600).configmaps()
    index, shards = bodies[-1], {b["metadata"]["name"]: b for b in bodies[:-1]}
    first = next(iter(shards))
    with pytest.raises(ValueError, match="is missing"):
        Inventory.from_configmap(index, "prod", {k: v for k, v in shards.items() if k != first})
    other = next(b for k, b in shards.items() if k != first)
    with pytest.raises(ValueError, match="digest differs"):
        Inventory.from_configmap(index, "prod", {**shards, first: other})


class _Recorder:
    """A client double that records writes; enough for the write order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def apply(self, body: dict, force: bool = False) -> dict:
        self.calls.append(("apply", body["metadata"]["name"]))
        return body

    def delete(self, ref: ObjectRef) -> bool:
        self.calls.append(("delete", ref.name))
        return True


def test_writes_go_shards_then_index_then_deletions(small_budget: None) -> None:
    rec = _Recorder()
    old = big_inventory("prod", 600)
    present = inventory_store.write(rec, old)  # type: ignore[arg-type]
    assert rec.calls[-1] == ("apply", "intentc-inventory-prod") and len(rec.calls) == len(present) + 1
    rec.calls.clear()
    new = old.without([old.entries[0].ref])
    now = inventory_store.write(rec, new, present)  # type: ignore[arg-type]
    index_at = rec.calls.index(("apply", "intentc-inventory-prod"))
    assert all(op == "apply" for op, _ in rec.calls[:index_at]) and len(rec.calls[:index_at]) == len(now - present)
    assert sorted(n for op, n in rec.calls[index_at + 1:]) == sorted(present - now)
    rec.calls.clear()
    inventory_store.write(rec, new, now)  # type: ignore[arg-type]
    assert rec.calls == [("apply", "intentc-inventory-prod")]        # unchanged shards are not sent again


# -- on the real API server ------------------------------------------------------------------

def _client(env: KubeEnv) -> KubeClient:
    c = KubeClient.connect(str(env.kubeconfig))
    c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "intentc-system"}})
    return c


@pytest.mark.kube
def test_twenty_thousand_entries_write_and_read_back(kube_env: KubeEnv) -> None:
    c = _client(kube_env)
    target = f"shard{next(_ids)}"
    inv = big_inventory(target, 20_000)
    assert len(inv.configmaps()) > 1           # one ConfigMap cannot hold it
    present = inventory_store.write(c, inv)
    stored = inventory_store.read(c, target)
    assert stored.inventory == inv and stored.shards_present == present
    for name in present:
        body = c.get(shard_ref(name))
        assert body is not None and _size(body) <= CONFIGMAP_LIMIT
    # prune-like update: 5,000 fewer objects; the shards it no longer names are deleted
    smaller = inv.without([e.ref for e in inv.entries[:5000]])
    after = inventory_store.write(c, smaller, stored.shards_present)
    assert inventory_store.read(c, target).inventory == smaller
    listed = {b["metadata"]["name"] for b in c.list("v1", "ConfigMap", "intentc-system", f"{SHARD_LABEL}={target}")}
    assert listed == after


@pytest.mark.kube
def test_a_write_cut_off_before_the_index_loses_nothing(kube_env: KubeEnv) -> None:
    """Crash between the shards and the index: the old index and its shards are whole;
    the next write deletes the shards nothing names."""
    c = _client(kube_env)
    target = f"shard{next(_ids)}"
    old = big_inventory(target, 20_000, "a" * 40)
    present = inventory_store.write(c, old)
    new = big_inventory(target, 21_000, "b" * 40)
    for body in new.configmaps()[:-1]:              # the shards of the new write, and then the crash
        c.apply(body, force=True)
    stored = inventory_store.read(c, target)
    assert stored.inventory == old
    assert stored.shards_present > present         # leftovers are seen ...
    final = inventory_store.write(c, new, stored.shards_present)
    assert inventory_store.read(c, target).inventory == new
    listed = {b["metadata"]["name"] for b in c.list("v1", "ConfigMap", "intentc-system", f"{SHARD_LABEL}={target}")}
    assert listed == final                         # ... and gone after the next write


@pytest.mark.kube
def test_apply_drift_and_prune_read_a_sharded_inventory(kube_env: KubeEnv) -> None:
    """The readers: the reconciler's own inventory, another target's objects (never orphans
    of ours), the shards themselves as plumbing."""
    from intentc.drift.managed import read_managed
    from intentc.reconcile.sync import Reconciler, ApplyOptions

    c = _client(kube_env)
    mine, other = f"shard{next(_ids)}", f"shard{next(_ids)}"
    inventory_store.write(c, big_inventory(mine, 24_000))
    theirs = big_inventory(other, 24_000)
    inventory_store.write(c, theirs)
    assert Reconciler(c, ApplyOptions(target=mine)).load_inventory() == big_inventory(mine, 24_000)
    managed = read_managed(c, mine)
    assert theirs.refs() <= managed.refs
    shards = {ObjectRef.of({"apiVersion": "v1", "kind": "ConfigMap", **b})
              for b in c.list("v1", "ConfigMap", "intentc-system", f"{SHARD_LABEL}={other}")}
    assert shards and shards <= managed.plumbing and inventory_ref(other) in managed.plumbing
    rec = Reconciler(c, ApplyOptions(target=mine))
    assert rec._claimed_elsewhere(theirs.entries[3].ref) == other


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=1, max_value=900), st.sampled_from([2048, 4096, 16384]))
def test_any_size_round_trips_and_every_shard_keeps_to_the_budget(monkeypatch: pytest.MonkeyPatch, objects: int,
                                                                 budget: int) -> None:
    monkeypatch.setattr(inventory_module, "SHARD_BUDGET", budget)
    inv = big_inventory("prod", objects)
    bodies = inv.configmaps()
    shards = {b["metadata"]["name"]: b for b in bodies[:-1]}
    assert all(len(b["binaryData"]["objects.json.gz"]) * 3 // 4 <= budget for b in shards.values())
    assert Inventory.from_configmap(bodies[-1], "prod", shards) == inv
    index = json.loads(bodies[-1]["data"]["inventory.json"])
    assert sum([s["objects"] for s in index.get("shards", [])] or [len(index["objects"])]) == objects
