"""The one reader of `metadata.managedFields` (`reconcile/fields.py`).

The reconciler (repair decision, `--dry-run` diff) and drift detection (who changed a
field, who wrote last) read the same entries and the same FieldsV1 tries; these tests
hold the reader to what the API server writes and the two callers to the reader.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from intentc.drift.detect import UNKNOWN_MANAGER, last_updater
from intentc.reconcile.diff import live_view
from intentc.reconcile.fields import (diff_fields, field_sets, latest_writer, managed_fields, owned_fields,
                                      project_fields)

INTENTC_TRIE = {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
    'k:{"name":"app"}': {".": {}, "f:name": {}, "f:image": {},
                         "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}


def entry(manager: str, trie: dict[str, Any], operation: str = "Apply", time: str = "2026-01-01T00:00:00Z"
          ) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": copy.deepcopy(trie)}


def deployment(*entries: dict[str, Any], replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "t", "managedFields": list(entries)},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                 "terminationMessagePath": "/dev/termination-log"}]}}}}


@pytest.mark.parametrize("live", [
    {}, {"metadata": None}, {"metadata": {}}, {"metadata": {"managedFields": None}}, {"metadata": "not a map"},
])
def test_an_object_without_entries_has_none(live: dict[str, Any]) -> None:
    assert managed_fields(live) == [] and field_sets(live) == {} and owned_fields(live, "intentc") == []
    assert latest_writer(live, "intentc") is None
    assert last_updater(live) == UNKNOWN_MANAGER


def test_a_managers_entries_merge_over_operations() -> None:
    scale = {"f:spec": {"f:replicas": {}}}
    live = deployment(entry("intentc", INTENTC_TRIE), entry("kubectl", scale, "Update"),
                      entry("intentc", {"f:metadata": {"f:labels": {}}}, "Update"))
    sets = field_sets(live)
    assert sorted(sets) == ["intentc", "kubectl"]
    assert sets["intentc"]["f:spec"] == INTENTC_TRIE["f:spec"] and "f:metadata" in sets["intentc"]
    # only the manager's applies are what it owns by server-side apply
    assert owned_fields(live, "intentc") == [INTENTC_TRIE]
    assert owned_fields(live, "intentc", "Update") == [{"f:metadata": {"f:labels": {}}}]
    assert owned_fields(live, "nobody") == []


def test_the_latest_writer_is_by_time_then_name() -> None:
    live = deployment(entry("intentc", INTENTC_TRIE, time="2026-01-03T00:00:00Z"),
                      entry("kubectl", {}, "Update", "2026-01-02T00:00:00Z"),
                      entry("hpa", {}, "Update", "2026-01-02T00:00:00Z"),
                      entry("", {}, "Update", "2026-01-01T00:00:00Z"))
    assert latest_writer(live, "intentc") == "kubectl" == last_updater(live)
    assert latest_writer(deployment(entry("", {}, "Update")), "intentc") == ""
    assert last_updater(deployment(entry("", {}, "Update"))) == UNKNOWN_MANAGER
    assert latest_writer(deployment(entry("intentc", INTENTC_TRIE)), "intentc") is None


def test_projecting_a_trie_keeps_what_it_names() -> None:
    live = deployment(entry("intentc", INTENTC_TRIE))
    owned = project_fields(live, INTENTC_TRIE)
    assert owned == {"spec": {"replicas": 2, "template": {"spec": {"containers": [
        {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}
    # a set of scalars: the members the trie names
    assert project_fields(["a", "b", "c"], {'v:"a"': {}, 'v:"c"': {}}) == ["a", "c"]
    # a key that is not JSON names nothing (the server never writes one)
    assert project_fields([{"name": "app"}], {"k:{name": {}}) == []
    assert project_fields({"a": 1}, {}) == {"a": 1}


def test_the_reconciler_and_detection_read_the_same_owners() -> None:
    """`kubectl scale` takes `spec.replicas`: the reconciler's view of what intentc applied
    and detection's owners of the changed field both come from the one reader."""
    desired = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "t"},
               "spec": {"replicas": 2, "template": {"spec": {"containers": [
                   {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}
    without_replicas = copy.deepcopy(INTENTC_TRIE)
    del without_replicas["f:spec"]["f:replicas"]
    live = deployment(entry("intentc", without_replicas), entry("kubectl", {"f:spec": {"f:replicas": {}}}, "Update"),
                      replicas=5)
    [changed] = diff_fields(desired, live)
    assert (changed.path, changed.desired, changed.live, changed.owners) == ("spec.replicas", 2, 5, ("kubectl",))
    view = live_view(live, desired, "intentc")
    assert view["spec"]["replicas"] == 5          # the live value at a path desired sets
    assert "terminationMessagePath" not in view["spec"]["template"]["spec"]["containers"][0]   # a server default
    assert last_updater(live) == "kubectl"
