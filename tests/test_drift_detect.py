"""The pure drift detector on plain-dict fixtures (no cluster needed).

The live objects below carry `managedFields` in the exact shape a 1.20
API server writes (checked against the real one in test_drift_kube.py).
"""

from __future__ import annotations

import copy
from typing import Any

from intentc.drift.detect import DriftClass, History, detect, modifications
from intentc.reconcile.fields import diff_fields, same_value
from intentc.objectmeta import ObjectRef
from intentc.render.stamp import stamp

OLD = "a" * 40
NEW = "b" * 40
ALIEN = "f" * 40
HISTORY = History((NEW, OLD))


def deployment(image: str = "ghcr.io/acme/vllm:0.6", replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "team-a",
                     "labels": {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": "serve",
                                "intentc.dev/tenant": "team-a"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "serve"}},
                 "template": {"metadata": {"labels": {"app": "serve"}},
                              "spec": {"containers": [{"name": "main", "image": image,
                                                       "args": ["--port", "8000"],
                                                       "ports": [{"containerPort": 8000}],
                                                       "resources": {"limits": {"cpu": "0.5"}}}]}}},
    }


INTENTC_TRIE = {
    "f:metadata": {"f:annotations": {"f:intentc.dev/commit-sha": {}, "f:intentc.dev/spec-hash": {}},
                   "f:labels": {"f:app.kubernetes.io/managed-by": {}, "f:intentc.dev/intent": {},
                                "f:intentc.dev/tenant": {}}},
    "f:spec": {"f:replicas": {}, "f:selector": {"f:matchLabels": {"f:app": {}}},
               "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:containers": {
                   'k:{"name":"main"}': {".": {}, "f:name": {}, "f:image": {}, "f:args": {},
                                         "f:resources": {"f:limits": {"f:cpu": {}}},
                                         "f:ports": {'k:{"containerPort":8000,"protocol":"TCP"}': {
                                             ".": {}, "f:containerPort": {}}}}}}}},
}


def applied(body: dict[str, Any], commit: str = NEW) -> tuple[dict[str, Any], dict[str, Any]]:
    """(desired, live): the stamped object and what the server holds after intentc applied it,
    with server defaults added (protocol, strategy) that nobody in intentc asked for."""
    desired, _ = stamp(body, commit)
    live = copy.deepcopy(desired)
    live["metadata"]["managedFields"] = [
        {"manager": "intentc", "operation": "Apply", "apiVersion": "apps/v1",
         "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": copy.deepcopy(INTENTC_TRIE)}]
    live["metadata"]["resourceVersion"] = "100"
    live["metadata"]["uid"] = "u-1"
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "500m"
    live["status"] = {"replicas": 2}
    return desired, live


def take(live: dict[str, Any], manager: str, trie: dict[str, Any], remove: list[list[str]],
         time: str = "2024-01-02T00:00:00Z") -> None:
    """Give `trie`'s fields to `manager` (an Update), removing them from intentc's set."""
    for path in remove:
        node = live["metadata"]["managedFields"][0]["fieldsV1"]
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    live["metadata"]["managedFields"].append(
        {"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time,
         "fieldsType": "FieldsV1", "fieldsV1": trie})


IMAGE_PATH = ["f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"main"}', "f:image"]
IMAGE_TRIE = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"main"}': {"f:image": {}}}}}}}


def classes(report: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(f.drift.value, []).append(f.ref.name)
    return out


def test_freshly_applied_object_with_server_defaults_is_in_sync() -> None:
    desired, live = applied(deployment())
    report = detect([desired], [live], history=HISTORY)
    assert classes(report) == {"in-sync": ["serve"]}
    assert not report.has_drift


def test_edit_by_another_manager_is_modified_and_names_it() -> None:
    desired, live = applied(deployment())
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"
    take(live, "kubectl-edit", IMAGE_TRIE, [IMAGE_PATH])
    report = detect([desired], [live], history=HISTORY)
    [finding] = report.drifted
    assert finding.drift is DriftClass.MODIFIED
    assert finding.managers == ("kubectl-edit",)
    [change] = finding.changes
    assert change.path == "spec.template.spec.containers[name=main].image"
    assert (change.desired, change.live) == ("ghcr.io/acme/vllm:0.6", "evil:latest")
    assert finding.intent == "serve" and finding.tenant == "team-a"
    assert "kubectl-edit" in finding.message


def test_changed_value_is_drift_even_when_intentc_still_owns_the_field() -> None:
    """A write through a subresource (`kubectl scale`) may leave intentc as the recorded
    owner of spec.replicas: the value decides, managedFields only name who."""
    desired, live = applied(deployment(replicas=3))
    live["spec"]["replicas"] = 0
    live["metadata"]["managedFields"].append(
        {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "subresource": "scale",
         "time": "2024-01-02T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {}})
    [finding] = detect([desired], [live], history=HISTORY).drifted
    assert finding.drift is DriftClass.MODIFIED
    [change] = finding.changes
    assert (change.path, change.desired, change.live, change.manager) == ("spec.replicas", 3, 0, "kubectl")


def test_removed_label_is_attributed_to_the_last_updater() -> None:
    desired, live = applied(deployment())
    del live["metadata"]["labels"]["intentc.dev/tenant"]
    take(live, "kubectl-label", {"f:metadata": {"f:labels": {}}},
         [["f:metadata", "f:labels", "f:intentc.dev/tenant"]])
    [change] = detect([desired], [live]).drifted[0].changes
    assert change.path == 'metadata.labels["intentc.dev/tenant"]'
    assert change.live is None and change.manager == "kubectl-label"


def test_fields_owned_only_by_others_are_never_drift() -> None:
    desired, live = applied(deployment())
    # an operator adds an annotation and a sidecar env var; the status changes
    live["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "3"
    live["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "X", "value": "1"}]
    live["status"] = {"replicas": 0, "conditions": [{"type": "Available", "status": "False"}]}
    take(live, "kube-controller-manager", {"f:status": {"f:replicas": {}}}, [])
    assert not detect([desired], [live], history=HISTORY).has_drift


def test_hpa_owning_replicas_that_intentc_does_not_set_is_not_drift() -> None:
    body = deployment()
    del body["spec"]["replicas"]
    desired, live = applied(body)
    live["spec"]["replicas"] = 7
    del live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"]
    take(live, "horizontal-pod-autoscaler", {"f:spec": {"f:replicas": {}}}, [])
    assert not detect([desired], [live], history=HISTORY).has_drift


def test_missing_and_orphan() -> None:
    desired, live = applied(deployment())
    stray = copy.deepcopy(live)
    stray["metadata"]["name"] = "by-hand"
    unrelated = copy.deepcopy(live)
    unrelated["metadata"]["name"] = "not-ours"
    unrelated["metadata"]["labels"] = {"app": "x"}
    report = detect([desired], [stray, unrelated], history=HISTORY)
    assert classes(report) == {"missing": ["serve"], "orphan": ["by-hand"]}


def test_inventory_members_that_are_no_longer_desired_are_not_orphans() -> None:
    desired, live = applied(deployment())
    old = copy.deepcopy(live)
    old["metadata"]["name"] = "retired"
    retired = ObjectRef("apps/v1", "Deployment", "team-a", "retired")
    report = detect([desired], [live, old], inventory=[retired], history=HISTORY)
    assert classes(report) == {"in-sync": ["serve"]}


def test_stale_when_a_newer_commit_changed_the_object() -> None:
    _, live = applied(deployment(image="img:1"), commit=OLD)
    new_desired, _ = stamp(deployment(image="img:2"), NEW)
    report = detect([new_desired], [live], history=HISTORY)
    [finding] = report.drifted
    assert finding.drift is DriftClass.STALE
    assert finding.live_commit == OLD and finding.desired_commit == NEW
    assert "older than" in finding.message
    # the old image is still intentc's own field: not somebody's edit
    assert not modifications(new_desired, live)


def test_unchanged_object_keeps_its_older_commit_and_is_in_sync() -> None:
    _, live = applied(deployment(), commit=OLD)
    desired, _ = stamp(deployment(), NEW)
    assert not detect([desired], [live], history=HISTORY).has_drift


def test_foreign_commit_and_missing_stamp() -> None:
    desired, live = applied(deployment(), commit=ALIEN)
    report = detect([stamp(deployment(), NEW)[0]], [live], history=HISTORY)
    assert [f.drift for f in report.drifted] == [DriftClass.FOREIGN]
    unstamped = copy.deepcopy(live)
    del unstamped["metadata"]["annotations"]
    [finding] = detect([desired], [unstamped], history=HISTORY).drifted
    assert finding.drift is DriftClass.FOREIGN and "no intentc.dev/commit-sha" in finding.message


def test_a_commit_newer_than_the_checked_out_one_is_said_as_such() -> None:
    """After checking out an older commit, objects applied from the branch head are not foreign."""
    desired, _ = applied(deployment(image="old:1"), OLD)
    _, live = applied(deployment(image="new:2"), NEW)
    report = detect([desired], [live], history=History((OLD,), newer=(NEW,)))
    [finding] = [f for f in report.drifted if f.drift is not DriftClass.MODIFIED]
    assert finding.drift is DriftClass.STALE
    assert "newer than the checked-out commit" in finding.message
    assert classes(detect([desired], [live], history=History((OLD,))))["foreign"] == ["serve"]


def test_stale_and_modified_at_once() -> None:
    _, live = applied(deployment(image="img:1", replicas=2), commit=OLD)
    live["spec"]["replicas"] = 9
    take(live, "kubectl-scale", {"f:spec": {"f:replicas": {}}}, [["f:spec", "f:replicas"]])
    desired, _ = stamp(deployment(image="img:2", replicas=2), NEW)
    report = detect([desired], [live], history=HISTORY)
    assert sorted(f.drift.value for f in report.drifted) == ["modified", "stale"]
    modified = next(f for f in report.drifted if f.drift is DriftClass.MODIFIED)
    assert [(c.path, c.desired, c.live, c.manager) for c in modified.changes] == [
        ("spec.replicas", 2, 9, "kubectl-scale")]


def test_atomic_list_change_is_one_change() -> None:
    desired, live = applied(deployment())
    live["spec"]["template"]["spec"]["containers"][0]["args"] = ["--port", "9999"]
    args = IMAGE_PATH[:-1] + ["f:args"]
    take(live, "kubectl-edit",
         {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"main"}': {"f:args": {}}}}}}}, [args])
    [change] = detect([desired], [live]).drifted[0].changes
    assert change.path.endswith("[name=main].args") and change.live == ["--port", "9999"]


def test_counts_and_json_are_stable() -> None:
    desired, _ = applied(deployment())
    report = detect([desired], [], history=HISTORY)
    counts = {c.value: n for c, n in report.counts().items()}
    assert counts == {"in-sync": 0, "modified": 0, "missing": 1, "orphan": 0, "stale": 0, "foreign": 0}
    assert report.to_json() == detect([desired], [], history=HISTORY).to_json()


def test_detect_is_order_independent() -> None:
    objs = []
    lives = []
    for i in range(5):
        body = deployment()
        body["metadata"]["name"] = f"d{i}"
        d, lv = applied(body)
        objs.append(d)
        lives.append(lv)
    lives[2]["spec"]["replicas"] = 1
    take(lives[2], "someone", {"f:spec": {"f:replicas": {}}}, [["f:spec", "f:replicas"]])
    a = detect(objs, lives, history=HISTORY)
    b = detect(list(reversed(objs)), list(reversed(lives)), history=HISTORY)
    assert a == b and [f.ref.name for f in a.drifted] == ["d2"]


def test_value_equality_follows_the_api_server() -> None:
    assert same_value("0.5", "500m") and same_value("64Gi", "68719476736")
    assert same_value(2, 2.0) and not same_value(True, 1) and not same_value("1", "2")


def test_sets_of_scalars_use_v_entries() -> None:
    desired = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "spec": {"finalizers": ["a", "b"]}}
    live = copy.deepcopy(desired)
    live["spec"]["finalizers"] = ["a"]
    live["metadata"]["managedFields"] = [{"manager": "intentc", "fieldsV1": {
        "f:spec": {"f:finalizers": {'v:"a"': {}}}}}]
    [d] = diff_fields(desired, live)
    assert d.path == "spec.finalizers[b]" and d.live is None


# --- the fast path of diff_fields never hides a difference ------------------

import json as _json  # noqa: E402

from hypothesis import given as _given, settings as _settings, strategies as _st  # noqa: E402

from intentc.reconcile import fields as _fields  # noqa: E402

_scalar = _st.one_of(_st.integers(-3, 3), _st.sampled_from(["a", "b", "8", "500m", "0.5", ""]),
                     _st.booleans(), _st.none())
_named = _st.lists(_st.fixed_dictionaries({"name": _st.sampled_from(["x", "y", "z"])},
                                          optional={"v": _scalar, "w": _scalar}), max_size=3,
                  unique_by=lambda item: item["name"])   # merge keys are unique in a valid object
_value = _st.recursive(_st.one_of(_scalar, _named, _st.lists(_scalar, max_size=3)),
                       lambda inner: _st.dictionaries(_st.sampled_from(["p", "q", "r"]), inner, max_size=3),
                       max_leaves=12)


def _trie(value: object) -> dict:
    """A FieldsV1 trie owning every leaf of `value` (named lists keyed by name)."""
    if isinstance(value, dict):
        return {f"f:{k}": _trie(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(i, dict) and "name" in i for i in value):
        return {"k:" + _json.dumps({"name": i["name"]}): _trie(i) for i in value}
    return {}


@_settings(max_examples=400, deadline=None)
@_given(_st.dictionaries(_st.sampled_from(["p", "q", "r"]), _value, max_size=3), _value, _st.booleans())
def test_contained_implies_no_difference(desired: dict, extra: object, mutate: bool) -> None:
    live = _json.loads(_json.dumps(desired))
    if mutate and isinstance(live, dict):
        live["extra"] = extra
        for key in list(live)[:1]:
            live[key] = extra
    nodes = {"intentc": _trie(desired), "other": _trie(live)}
    out: list = []
    _fields._walk(None, desired, live, nodes, out)
    if _fields._contained(desired, live):
        assert out == []
    if live == desired:
        assert _fields._contained(desired, live)
    # server-side defaults (extra keys everywhere) are not drift, on either path
    defaulted = _with_defaults(desired)
    out = []
    _fields._walk(None, desired, defaulted, {"intentc": _trie(desired)}, out)
    if _fields._contained(desired, defaulted):
        assert out == []


def _with_defaults(value: object) -> object:
    if isinstance(value, dict):
        return {**{k: _with_defaults(v) for k, v in value.items()}, "zz-default": 1}
    if isinstance(value, list):
        return [_with_defaults(v) if isinstance(v, dict) else v for v in value]
    return value


def test_a_shared_cluster_object_is_judged_by_content_not_by_commit() -> None:
    """The Intent CRD is applied alike by every repository on a cluster: the commit it
    carries is the last applier's, which this repository's history need not know."""
    from intentc.drift.detect import History, detect
    from intentc.render import crd_manifest
    from intentc.render.capabilities import KubeVersion

    mine = crd_manifest(KubeVersion(1, 33), "a" * 40)
    theirs = crd_manifest(KubeVersion(1, 33), "b" * 40)       # same content, another repository's commit

    history = History(("a" * 40,))
    same = detect([mine.body], [dict(theirs.body)], history=history)
    assert [f.drift.value for f in same.findings] == ["in-sync"]
    other = crd_manifest(KubeVersion(1, 33), "b" * 40)        # different content: another column
    other.body["spec"]["versions"][0]["additionalPrinterColumns"].pop()
    changed = detect([mine.body], [dict(other.body)], history=history)
    assert [f.drift.value for f in changed.findings] != ["in-sync"]
    assert "foreign" not in [f.drift.value for f in changed.findings]


def test_resuming_a_fallback_variant_is_not_drift_but_any_other_change_is() -> None:
    """The daemon resumes a suspended fallback variant (docs/failure-fallback.md) by flipping
    `spec.suspend`: that field of a variant is the controller's.  Any other changed value is
    drift whoever wrote it, intentc's own field manager included."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train-fallback-batch", "namespace": "team-a",
                        "labels": {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": "train",
                                   "intentc.dev/tenant": "team-a"},
                        "annotations": {"intentc.dev/fallback-of": "train"}},
           "spec": {"suspend": True, "parallelism": 1}}
    desired, _ = stamp(job, NEW)
    live = copy.deepcopy(desired)
    live["spec"]["suspend"] = False
    assert not detect([desired], [live], history=HISTORY).has_drift
    live["spec"]["parallelism"] = 4
    [finding] = detect([desired], [live], history=HISTORY).drifted
    assert [c.path for c in finding.changes] == ["spec.parallelism"]

