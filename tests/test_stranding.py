"""Jobs stranded on unusable nodes: the daemon's pure decision (daemon/stranding.py) and the
live binder giving them a new binding instead of keeping them as created (reconcile/live_binding.py).

A Job pinned to a node that the fallback chain tainted, or that is cordoned, NotReady or
gone, and whose pods have not started, is moved: in place when it is suspended and never
started (the API server allows its scheduling directives to change then), else deleted and
created again.  A Job that ran, or whose pods run, is never touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentc.daemon.fallback import TaintChange
from intentc.daemon.stranding import MovePath, Stranded, pinned_nodes, plan_move, stranded, unusable_nodes
from intentc.objectmeta import INTENT_LABEL, ObjectRef
from intentc.render.fallback import FALLBACK_OF
from intentc.render.model import PREVIEW_HASH_ANNOTATION, SPEC_HASH_ANNOTATION

HOST = "kubernetes.io/hostname"
REF = ObjectRef("batch/v1", "Job", "team-a", "train")


def node(name: str, *, taint: bool = False, cordoned: bool = False, ready: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": cordoned}
    if taint:
        spec["taints"] = [TaintChange(name, True, 2_000_000_000).taint()]
    return {"metadata": {"name": name}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def job(*nodes: str, suspend: bool | None = None, status: dict[str, Any] | None = None, intent: str | None = "train",
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if len(nodes) == 1:
        spec["nodeSelector"] = {HOST: nodes[0]}
    elif nodes:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": HOST, "operator": "In", "values": list(nodes)}]}]}}}
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a", "uid": "u1", "resourceVersion": "7",
                     "labels": {INTENT_LABEL: intent} if intent else {}, "annotations": dict(annotations or {})},
        "spec": {"template": {"spec": spec}}, "status": dict(status or {})}
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    return body


def pod(phase: str = "Pending", on: str | None = None, owner: str = "u1") -> dict[str, Any]:
    spec = {"nodeName": on} if on else {}
    return {"metadata": {"name": "train-x", "namespace": "team-a", "labels": {INTENT_LABEL: "train"},
                         "ownerReferences": [{"kind": "Job", "name": "train", "uid": owner}]},
            "spec": spec, "status": {"phase": phase}}


# -- what pins a Job ------------------------------------------------------------------

def test_a_job_is_pinned_by_a_hostname_selector_or_a_required_hostname_affinity() -> None:
    assert pinned_nodes(job("a")) == ("a",)
    assert pinned_nodes(job("b", "a")) == ("a", "b")
    assert pinned_nodes(job()) == ()


def test_a_product_requirement_with_the_node_only_preferred_pins_nothing() -> None:
    variant = job()
    variant["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100-80GB"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {"matchExpressions": [
            {"key": HOST, "operator": "In", "values": ["a"]}]}}]}}
    assert pinned_nodes(variant) == ()


def test_unusable_is_what_the_live_planner_leaves_out() -> None:
    bad = unusable_nodes([node("a", taint=True), node("b", cordoned=True), node("c", ready=False), node("d")])
    assert set(bad) == {"a", "b", "c"}
    assert bad["a"].startswith("tainted intentc.dev/gpu-observation=") and bad["a"].endswith(":NoSchedule")
    assert (bad["b"], bad["c"]) == ("cordoned", "NotReady")


# -- which Jobs are stranded ------------------------------------------------------------

def test_a_pending_job_pinned_to_the_tainted_node_is_stranded() -> None:
    (s,) = stranded([job("a")], [pod()], [node("a", taint=True), node("b")])
    assert (s.ref, s.intent, s.pinned) == (REF, "train", ("a",))
    assert s.why().startswith("a tainted intentc.dev/gpu-observation=")


@pytest.mark.parametrize("bad, why", [
    (node("a", cordoned=True), "a cordoned"),
    (node("a", ready=False), "a NotReady"),
    (None, "a is gone from the cluster"),
])
def test_cordoned_notready_and_gone_nodes_strand_too(bad: dict[str, Any] | None, why: str) -> None:
    nodes = [node("b")] + ([bad] if bad else [])
    (s,) = stranded([job("a")], [], nodes)
    assert s.why() == why


def test_one_unusable_node_of_a_gang_strands_the_whole_gang() -> None:
    (s,) = stranded([job("a", "b")], [pod(), pod()], [node("a"), node("b", taint=True)])
    assert s.pinned == ("a", "b") and [n for n, _ in s.unusable] == ["b"]


@pytest.mark.parametrize("pods, status, why", [
    ([pod("Running", on="a")], {}, "its pod runs: never touched"),
    ([pod("Pending", on="a")], {}, "bound to the node already (starting)"),
    ([pod("Pending")], {"failed": 1}, "a pod of it failed: the fallback chain's business"),
    ([], {"succeeded": 1}, "part of it succeeded"),
    ([], {"conditions": [{"type": "Complete", "status": "True"}]}, "finished"),
])
def test_a_job_that_started_is_left_alone(pods: list[dict[str, Any]], status: dict[str, Any], why: str) -> None:
    assert stranded([job("a", status=status)], pods, [node("a", taint=True), node("b")]) == [], why


def test_healthy_pins_other_jobs_pods_and_foreign_jobs_are_not_stranded() -> None:
    nodes = [node("a", taint=True), node("b")]
    assert stranded([job("b")], [], nodes) == []
    assert stranded([job("a", intent=None)], [], nodes) == [], "not intentc's"
    assert len(stranded([job("a")], [pod("Running", on="b", owner="someone-else")], nodes)) == 1
    deleting = job("a")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert stranded([deleting], [], nodes) == []


# -- how it moves ---------------------------------------------------------------------------

def stuck() -> Stranded:
    return Stranded(REF, "train", ("a",), (("a", "tainted intentc.dev/gpu-observation=1:NoSchedule"),))


def test_a_started_job_is_deleted_and_created_again_with_the_new_pins() -> None:
    move = plan_move(stuck(), job("a", status={"startTime": "2026-01-01T00:00:00Z", "active": 1}), job("b"))
    assert move is not None and move.path is MovePath.RECREATE
    assert (move.before, move.after) == (("a",), ("b",))
    assert pinned_nodes(move.body) == ("b",)
    assert "deleted and created again" in move.message() and "from a to b" in move.message()


@pytest.mark.parametrize("live, path", [
    (job("a", suspend=True), MovePath.UPDATE),
    (job("a", suspend=True, status={"startTime": "2026-01-01T00:00:00Z"}), MovePath.RECREATE),
    (job("a", suspend=False), MovePath.RECREATE),
])
def test_only_a_suspended_never_started_job_is_updated_in_place(live: dict[str, Any], path: MovePath) -> None:
    move = plan_move(stuck(), live, job("b", suspend=True))
    assert move is not None and move.path is path


def test_a_recreated_variant_keeps_its_live_suspend() -> None:
    variant = {FALLBACK_OF: "train"}
    live = job("a", suspend=False, status={"startTime": "2026-01-01T00:00:00Z"}, annotations=variant)
    move = plan_move(stuck(), live, job("b", suspend=True, annotations=variant))
    assert move is not None and move.path is MovePath.RECREATE and move.body["spec"]["suspend"] is False


@pytest.mark.parametrize("rebound", [None, job("a"), job("a", "b")])
def test_no_move_when_the_binder_found_nowhere_else(rebound: dict[str, Any] | None) -> None:
    assert plan_move(stuck(), job("a"), rebound) is None


# -- the binder gives a moving Job its live binding -------------------------------------------

def test_the_binder_rebinds_a_moving_job_instead_of_keeping_it_where_it_was_created() -> None:
    from intentc.kube.cluster_state import ClusterState
    from intentc.pipeline import compile_paths
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.render.capabilities import KubeVersion

    repo = Path(__file__).parent / "fixtures" / "repo"
    result = compile_paths([str(repo / "intents")], str(repo / "clusters" / "small.yaml"), "f" * 40,
                           KubeVersion(1, 37))
    assert result.program and result.plan and result.rendered and result.topology
    (preview,) = [m for m in result.rendered.manifests if m.ref.kind == "Job" and m.ref.name == "evaluate"]
    planned = pinned_nodes(preview.body)
    assert planned == ("node-1",)
    nodes = tuple(node(f"node-{i}", taint=f"node-{i}" == "node-1") | {"status": {
        "conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "8"}}}
        for i in (1, 2, 3))
    binder = LiveBinder(result.program, result.topology, result.plan, result.rendered, KubeVersion(1, 37),
                        lambda: ClusterState(nodes, ()))
    live = {preview.ref: dict(preview.body)}        # created from the preview, its pod Pending on node-1

    kept = binder.bind(["evaluate"], live)
    assert preview.ref in kept.kept, "without `moving` a created Job stays as created"

    moved = binder.bind(["evaluate"], live, moving=frozenset({preview.ref}))
    (m,) = [m for m in moved.manifests if m.ref == preview.ref]
    assert preview.ref not in moved.kept and pinned_nodes(m.body) not in ((), planned)
    annotations = m.body["metadata"]["annotations"]
    assert annotations[PREVIEW_HASH_ANNOTATION] == preview.spec_hash, "drift takes it for the preview's object"
    assert annotations[SPEC_HASH_ANNOTATION] != preview.spec_hash
    s = Stranded(preview.ref, "evaluate", planned, (("node-1", "tainted"),))
    move = plan_move(s, live[preview.ref], m.body)
    assert move is not None and move.path is MovePath.RECREATE and move.after == pinned_nodes(m.body)


# -- the reactor step (daemon/moves.py) with the writes stubbed ------------------------------------

def test_the_mover_falls_back_to_recreating_when_the_api_server_refuses_the_update(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    from intentc.daemon import moves
    from intentc.daemon.metrics import DaemonMetrics
    from intentc.kube.errors import Invalid

    calls: list[str] = []

    def update(_client: Any, _live: Any, _body: Any) -> dict[str, Any]:
        calls.append("update")
        raise Invalid("spec.template: field is immutable", 422, "Invalid")

    def recreate(_client: Any, _live: Any, body: Any) -> dict[str, Any]:
        calls.append("recreate")
        return dict(body)

    said: list[tuple[str, str]] = []
    monkeypatch.setattr(moves.reactions, "update_job", update)
    monkeypatch.setattr(moves.reactions, "recreate_job", recreate)
    monkeypatch.setattr(moves.events, "emit", lambda _c, _ref, reason, message, *_a: said.append((reason, message)))
    rebound: dict[str, Any] = {"to": job("b", suspend=True)}
    binder = SimpleNamespace(bind=lambda names, live, moving, held: SimpleNamespace(
        manifests=[SimpleNamespace(ref=REF, body=rebound["to"])] if rebound["to"] else []))
    metrics = DaemonMetrics()
    mover = moves.JobMover(SimpleNamespace(), metrics, lambda _d: binder)   # type: ignore[arg-type]
    desired = SimpleNamespace(by_ref={REF: None})
    live = {REF: job("a", suspend=True)}
    observed = ([], [node("a", taint=True), node("b")])

    mover.react(desired, live, observed)      # type: ignore[arg-type]
    assert calls == ["update", "recreate"]
    assert metrics.moves.labels("recreated")._value.get() == 1.0 and metrics.moves.labels("updated")._value.get() == 0
    ((reason, message),) = said
    assert reason == "JobMoved" and "from a to b" in message and "deleted and created again" in message

    rebound["to"] = None                      # nowhere to go: it waits, said once
    caplog.set_level("WARNING", logger="intentc.daemon")
    mover.react(desired, live, observed)      # type: ignore[arg-type]
    mover.react(desired, live, observed)      # type: ignore[arg-type]
    assert [r.getMessage() for r in caplog.records if "it waits" in r.getMessage()] == [
        "Job team-a/train is pinned to a (a tainted intentc.dev/gpu-observation=2000000000:NoSchedule) and has "
        "not started; no other GPUs for it now, it waits"]
    mover.react(desired, live, None)          # informers not synced: nothing decided
    assert calls == ["update", "recreate"]


def test_other_created_jobs_not_scheduled_yet_hold_the_gpus_they_are_pinned_to() -> None:
    from intentc.daemon.stranding import waiting_pins
    from intentc.plan.model import NodeAllocation

    def pinned_job(intent: str, uid: str, *nodes: str, gpus: str, **kw: Any) -> dict[str, Any]:
        body = job(*nodes, intent=intent, **kw)
        body["metadata"]["uid"] = uid
        body["spec"]["template"]["metadata"] = {"annotations": {"intentc.dev/nodes": ",".join(nodes),
                                                                "intentc.dev/gpu-indices": gpus}}
        return body
    jobs = [pinned_job("one", "u1", "b", gpus="0,1,2,3"),
            pinned_job("gang", "u2", "b", "c", gpus="b=4,5;c=0,1"),
            pinned_job("moving", "u3", "a", gpus="0,1"),
            pinned_job("running", "u4", "c", gpus="2,3"),
            pinned_job("done", "u5", "c", gpus="4", status={"conditions": [{"type": "Complete", "status": "True"}]}),
            pinned_job("standby", "u6", "c", gpus="5", suspend=True)]
    assert waiting_pins(jobs, [pod("Running", on="c", owner="u4")], ["moving"]) == {
        "one": (NodeAllocation("b", (0, 1, 2, 3)),),
        "gang": (NodeAllocation("b", (4, 5)), NodeAllocation("c", (0, 1)))}


def test_the_binder_holds_what_other_waiting_jobs_are_pinned_to() -> None:
    from intentc.kube.cluster_state import ClusterState
    from intentc.pipeline import compile_paths
    from intentc.plan.model import NodeAllocation
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.render.capabilities import KubeVersion

    repo = Path(__file__).parent / "fixtures" / "repo"
    result = compile_paths([str(repo / "intents")], str(repo / "clusters" / "small.yaml"), "f" * 40,
                           KubeVersion(1, 37))
    assert result.program and result.plan and result.rendered and result.topology
    (preview,) = [m for m in result.rendered.manifests if m.ref.kind == "Job" and m.ref.name == "evaluate"]
    nodes = tuple(node(f"node-{i}", taint=i == 1) | {"status": {
        "conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "8"}}}
        for i in (1, 2, 3))
    binder = LiveBinder(result.program, result.topology, result.plan, result.rendered, KubeVersion(1, 37),
                        lambda: ClusterState(nodes, ()))
    live = {preview.ref: dict(preview.body)}
    free = binder.bind(["evaluate"], live, moving=frozenset({preview.ref}))
    (m,) = [m for m in free.manifests if m.ref == preview.ref]
    first = pinned_nodes(m.body)
    assert first and "node-1" not in first
    # another created Job waits for all of that node's GPUs: the move goes elsewhere
    held = {"other": (NodeAllocation(first[0], tuple(range(8))),)}
    again = binder.bind(["evaluate"], live, moving=frozenset({preview.ref}), held=held)
    (m2,) = [m for m in again.manifests if m.ref == preview.ref]
    assert pinned_nodes(m2.body) and not set(pinned_nodes(m2.body)) & {"node-1", first[0]}
    assert any("intent other, created, its pods not scheduled yet" in n for n in again.notes)
