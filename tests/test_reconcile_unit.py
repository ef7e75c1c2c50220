"""The reconciler's pure parts (health, pairing, field diff, inventory, error parsing)
and its behaviour when no cluster answers — none of these needs an API server."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from intentc.cli import app
from intentc.kube.errors import AlreadyExists, ApplyConflict, Invalid, KubeError, NotFound
from intentc.reconcile.diff import Action, Pair, decide, field_diff, pair, repair_diff
from intentc.reconcile.fields import project_fields
from intentc.reconcile.health import HealthStatus, health_of, worst, Health
from intentc.reconcile.inventory import HISTORY_LIMIT, Entry, Inventory, Record
from intentc.render import render
from intentc.objectmeta import ObjectRef
from intentc.render.stamp import spec_hash
from tests.render_cases import SHA_A, SHA_B, sample_plan, sample_program

FIXTURE = Path(__file__).parent / "fixtures" / "repo"


def job(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"completions": 2},
            "status": status}


def test_job_health() -> None:
    assert health_of(job()).status is HealthStatus.PROGRESSING
    assert health_of(job(succeeded=1)).message == "1/2 pods succeeded"
    assert health_of(job(conditions=[{"type": "Complete", "status": "True"}])).status is HealthStatus.HEALTHY
    failed = health_of(job(conditions=[{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                                        "message": "too slow"}]))
    assert failed.status is HealthStatus.DEGRADED and failed.message == "DeadlineExceeded: too slow"
    assert health_of(job(conditions=[{"type": "Complete", "status": "False"}])).status is HealthStatus.PROGRESSING


def test_deployment_and_other_health() -> None:
    def dep(gen: int = 1, **status: Any) -> dict[str, Any]:
        return {"kind": "Deployment", "metadata": {"generation": gen}, "spec": {"replicas": 2}, "status": status}
    assert health_of(dep(2, observedGeneration=1)).status is HealthStatus.PROGRESSING
    assert health_of(dep(observedGeneration=1, updatedReplicas=2, replicas=3, availableReplicas=2)).status \
        is HealthStatus.PROGRESSING
    assert health_of(dep(observedGeneration=1, updatedReplicas=2, replicas=2, availableReplicas=2)).status \
        is HealthStatus.HEALTHY
    stuck = dep(observedGeneration=1, conditions=[{"type": "Progressing", "status": "False",
                                                  "reason": "ProgressDeadlineExceeded"}])
    assert health_of(stuck).status is HealthStatus.DEGRADED
    assert health_of({"kind": "Service", "spec": {"type": "LoadBalancer"}}).status is HealthStatus.PROGRESSING
    assert health_of({"kind": "ConfigMap"}).status is HealthStatus.HEALTHY
    assert health_of(None).status is HealthStatus.MISSING
    assert worst([Health(HealthStatus.HEALTHY), Health(HealthStatus.DEGRADED), Health(HealthStatus.PROGRESSING)]) \
        is HealthStatus.DEGRADED


def test_pairing_and_decisions_follow_the_spec_hash() -> None:
    a = render(sample_program(), sample_plan(), SHA_A).manifests
    b = render(sample_program(), sample_plan(), SHA_B).manifests
    live = {m.ref: dict(m.body) for m in a}
    stale = ObjectRef("batch/v1", "Job", "team-a", "gone")
    pairs = pair(b, live, {a[0].ref, stale})
    assert [p.ref for p in pairs] == [m.ref for m in b] + [stale]
    assert {decide(p) for p in pairs[:-1]} == {Action.UNCHANGED}, "a new commit alone changes nothing"
    assert decide(pairs[-1]) is Action.PRUNE
    assert decide(Pair(b[0].ref, b[0], None, False)) is Action.CREATE
    edited = dict(a[0].body, metadata={**a[0].body["metadata"], "annotations": {"intentc.dev/spec-hash": "x"}})
    assert decide(Pair(b[0].ref, b[0], edited, True)) is Action.UPDATE


def test_same_spec_hash_with_a_changed_value_is_repaired() -> None:
    """Skip only what is in sync: equal spec-hashes are not enough when a value moved."""
    [quota] = [m for m in render(sample_program(), sample_plan(), SHA_A).manifests if m.ref.kind == "ResourceQuota"][:1]
    live = json.loads(json.dumps(dict(quota.body)))
    assert decide(Pair(quota.ref, quota, live, True)) is Action.UNCHANGED
    hard = live["spec"]["hard"]
    key = sorted(hard)[0]
    hard[key] = "500"
    live["metadata"]["managedFields"] = [{"manager": "kubectl-edit", "operation": "Update",
                                          "fieldsV1": {"f:spec": {"f:hard": {f"f:{key}": {}}}}}]
    assert decide(Pair(quota.ref, quota, live, True)) is Action.REPAIR
    [line] = repair_diff(quota.body, live)
    assert line.startswith(f'~ spec.hard') and '"500" ->' in line and "kubectl-edit" in line


def test_field_diff_uses_what_intentc_owns() -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}},
               "data": {"k": "new", "added": "x"}}
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "u", "labels": {"a": "1", "other": "z"},
                         "managedFields": [{"manager": "intentc", "operation": "Apply", "fieldsV1": {
                             "f:metadata": {"f:labels": {"f:a": {}}}, "f:data": {"f:k": {}, "f:dropped": {}}}}]},
            "data": {"k": "old", "dropped": "y", "foreign": "f"}}
    assert field_diff(desired, live) == ('+ data.added: "x"', '- data.dropped: "y"', '~ data.k: "old" -> "new"')
    assert field_diff(desired, None) == ()


def test_project_fields_on_keyed_lists() -> None:
    live = {"containers": [{"name": "a", "image": "i", "tty": True}, {"name": "b", "image": "j"}],
            "finalizers": ["x", "y"]}
    fields = {"f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}}, "f:finalizers": {'v:"y"': {}}}
    assert project_fields(live, fields) == {"containers": [{"name": "a", "image": "i"}], "finalizers": ["y"]}


def test_inventory_round_trip_history_and_last_known_good() -> None:
    ref = ObjectRef("batch/v1", "Job", "ns", "j")
    inv = Inventory("prod").with_entries([Entry(ref, 4, "h", SHA_A, "j", "ns", "pending")])
    for i in range(HISTORY_LIMIT + 3):
        inv = inv.with_record(Record(SHA_A, f"2024-01-01T00:00:{i:02d}Z", f"2024-01-01T00:00:{i:02d}Z",
                                     "succeeded", "Progressing"))
    assert len(inv.history) == HISTORY_LIMIT and inv.last_known_good is None and inv.commit == SHA_A
    inv = inv.with_record(Record(SHA_B, "t1", "t2", "succeeded", "Healthy"))
    assert inv.last_known_good == SHA_B and inv.last_known_good_at == "t2"
    inv = inv.with_record(Record(SHA_A, "t3", "t4", "failed", "Degraded"))
    assert inv.commit == SHA_B and inv.last_known_good == SHA_B
    inv = inv.with_record(Record(SHA_A, "t5"))
    back = Inventory.from_configmap(inv.configmap(), "prod")
    assert back == inv and back.exists
    assert back.mark_interrupted().history[0].result == "interrupted"
    assert back.configmap()["metadata"] == {"name": "intentc-inventory-prod", "namespace": "intentc-system",
                                            "labels": {"app.kubernetes.io/managed-by": "intentc",
                                                       "intentc.dev/inventory": "prod"}}
    assert Inventory.from_configmap(None, "x") == Inventory("x")
    with pytest.raises(ValueError):
        Inventory.from_json(json.dumps({"format": "something-else"}), "x")


def test_large_inventories_are_gzipped_deterministically() -> None:
    entries = [Entry(ObjectRef("batch/v1", "Job", "team", f"job-{i:05d}"), 100, spec_hash({"i": i}), SHA_A)
               for i in range(3000)]
    inv = Inventory("prod", SHA_A).with_entries(entries)
    body = inv.configmap()
    assert list(body) == ["apiVersion", "kind", "metadata", "binaryData"]
    assert inv.configmap() == body                          # same bytes every time: no-op applies stay no-ops
    assert Inventory.from_configmap(body, "prod") == inv
    small = Inventory("prod", SHA_A).with_entries(entries[:10])
    assert list(small.configmap()["data"]) == ["inventory.json"]
    broken = {**body, "binaryData": {"inventory.json.gz": "bm90IGd6aXA="}}
    with pytest.raises(ValueError, match="not gzipped JSON"):
        Inventory.from_configmap(broken, "prod")


def test_status_errors_become_typed() -> None:
    conflict = {"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
                "message": 'Apply failed with 2 conflicts: conflict with "kubectl-edit" using apps/v1: .spec.replicas',
                "details": {"causes": [
                    {"reason": "FieldManagerConflict", "message": 'conflict with "kubectl-edit" using apps/v1',
                     "field": ".spec.replicas"},
                    {"reason": "FieldManagerConflict", "message": 'conflict with "helm"', "field": ".metadata.labels.x"}]}}
    err = KubeError.from_status(409, json.dumps(conflict))
    assert isinstance(err, ApplyConflict)
    assert err.managers == ("helm", "kubectl-edit")
    assert [c.field for c in err.conflicts] == [".spec.replicas", ".metadata.labels.x"]
    assert isinstance(KubeError.from_status(409, '{"reason": "AlreadyExists"}'), AlreadyExists)
    assert isinstance(KubeError.from_status(404, "not json"), NotFound)
    inv = KubeError.from_status(422, json.dumps({"reason": "Invalid", "message": "spec.template: field is immutable"}))
    assert isinstance(inv, Invalid) and inv.immutable


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_cluster_exits_2_without_traceback(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
        f"    server: https://127.0.0.1:{_closed_port()}\n    insecure-skip-tls-verify: true\n"
        "users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
        "current-context: x\n")
    base = ["apply", str(FIXTURE / "intents"), "-t", str(FIXTURE / "clusters" / "small.yaml"), "--commit", SHA_A]
    res = CliRunner().invoke(app, base + ["--kubeconfig", str(kubeconfig)])
    assert res.exit_code == 2
    assert "cannot reach the API server" in res.output and "connection refused" in res.output
    assert "Traceback" not in res.output and "Retrying" not in res.output
    res = CliRunner().invoke(app, base + ["--kubeconfig", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "kubeconfig not found" in res.output
    res = CliRunner().invoke(app, base + ["--kubeconfig", str(kubeconfig), "--context", "missing"])
    assert res.exit_code == 2 and "missing" in res.output


_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
_ENTRIES = st.lists(st.builds(
    Entry,
    st.builds(ObjectRef, st.sampled_from(["v1", "batch/v1", "apps/v1"]), st.sampled_from(["Job", "Service"]),
              _NAMES, _NAMES),
    st.integers(0, 200), st.text(min_size=0, max_size=64), st.sampled_from([SHA_A, SHA_B]),
    st.one_of(st.none(), _NAMES), st.one_of(st.none(), st.text(max_size=10)),
    st.sampled_from(["applied", "pending"]), st.booleans()), max_size=60)


@settings(max_examples=60, deadline=None)
@given(_ENTRIES, st.sampled_from([0, 512 * 1024]))
def test_inventory_round_trips_plain_or_gzipped(entries: list[Entry], limit: int) -> None:
    import intentc.reconcile.inventory as inventory_module
    inv = Inventory("prod", SHA_A).with_entries(entries)
    saved, inventory_module.PLAIN_LIMIT = inventory_module.PLAIN_LIMIT, limit     # 0: always gzipped
    try:
        body = inv.configmap()
    finally:
        inventory_module.PLAIN_LIMIT = saved
    assert ("binaryData" in body) == (limit == 0)
    assert Inventory.from_configmap(body, "prod") == inv
