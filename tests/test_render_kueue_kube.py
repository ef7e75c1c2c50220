"""`--render-target kueue` with the real Kueue controller on the fake GPU cluster.

intentc renders Kueue's objects (flavors, Topology, Cohort, ClusterQueues,
LocalQueues, WorkloadPriorityClasses) and suspended, queue-labelled Jobs;
Kueue admits them.  Work is submitted in batches that are each a feasible
plan but together over-subscribe the cluster, which is what a queue is for.
Admission order is read from a watch on the Workloads as it happens.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from intentc.pipeline import compile_paths
from intentc.drift.admission import assigned_nodes, compare
from intentc.plan.model import Placement
from intentc.render.capabilities import KubeVersion
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import WatchRecorder, invoke, recorded_jobs, wait_for

pytestmark = pytest.mark.kube

TOPOLOGY = Path(__file__).parent / "fixtures" / "testbed" / "cluster.yaml"
SHA = "e" * 40
KUEUE = "kueue.x-k8s.io/v1beta2"
TENANTS = """
tenant tn-gold { tier: gold }
tenant tn-silver { tier: silver }
tenant tn-bronze { tier: bronze }
"""


def intent(name: str, tenant: str, gpus: int, sla: str, scope: str = "within rack") -> str:
    return (f'intent {name} {{\n  trigger: on push\n  action: training image "busybox:1.36"\n'
            f'  context: tenant {tenant}\n  constraints: cpu 1, memory 1Gi, gpus {gpus} x "H100-80GB" {scope}, '
            f'sla {sla}\n}}\n')


def compiled(tmp_path: Path, name: str, intents: str) -> tuple[list[dict[str, Any]], dict[str, Placement]]:
    """Render one batch (tenants + `intents`) for kueue: its manifests and the plan's placements."""
    d = tmp_path / name
    d.mkdir()
    (d / "tenants.intent").write_text(TENANTS)
    (d / "jobs.intent").write_text(intents)
    result = compile_paths([str(d)], str(TOPOLOGY), SHA, KubeVersion(1, 37), "kueue")
    assert result.ok and result.rendered is not None and result.plan is not None, \
        [d.message for d in result.diagnostics]
    return [dict(m.body) for m in result.rendered.manifests], {p.intent: p for p in result.plan.placements}


def kubectl_apply(env: KubeEnv, bodies: list[dict[str, Any]]) -> None:
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=intentc-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}))


def job_of(workload: dict[str, Any]) -> str:
    return next((o["name"] for o in workload["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), "")


def admitted(w: dict[str, Any]) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))


def finished(w: dict[str, Any]) -> bool:
    return any(c["type"] == "Finished" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))


def admission_order(events: list[dict[str, Any]]) -> list[str]:
    order: list[str] = []
    for w in events:
        if admitted(w) and job_of(w) not in order:
            order.append(job_of(w))
    return order


def hold(env: KubeEnv, queue: str, on: bool) -> None:
    """Stop (or resume) admission in one ClusterQueue, so a whole batch is queued before Kueue decides."""
    patch = {"spec": {"stopPolicy": "Hold" if on else "None"}}
    env.kubectl_run("patch", "clusterqueue", queue, "--type=merge", "-p", json.dumps(patch))


@pytest.fixture(scope="module")
def cluster(kueue_cluster: KubeEnv, tmp_path_factory: pytest.TempPathFactory) -> KubeEnv:
    add_topology(kueue_cluster, str(TOPOLOGY))
    bodies, _ = compiled(tmp_path_factory.mktemp("setup"), "setup", intent("noop", "tn-gold", 1, "P3"))
    kubectl_apply(kueue_cluster, [b for b in bodies if b["kind"] != "Job"])
    return kueue_cluster


def test_kueue_accepts_the_queues_flavors_and_topology(cluster: KubeEnv) -> None:
    def active() -> Any:
        queues = cluster.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]
        ok = {q["metadata"]["name"] for q in queues
              if any(c["type"] == "Active" and c["status"] == "True" for c in q.get("status", {}).get("conditions", []))}
        return ok if ok == {"tn-gold", "tn-silver", "tn-bronze"} else None
    wait_for(active, 60, "every tenant's ClusterQueue to be Active (flavors, Topology and Cohort accepted)")
    weights = {q["metadata"]["name"]: q["spec"]["fairSharing"]["weight"]
               for q in cluster.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]}
    assert weights == {"tn-gold": "4", "tn-silver": "2", "tn-bronze": "1"}
    topo = cluster.kubectl_json("get", "topologies.kueue.x-k8s.io", "testbed")
    assert [lvl["nodeLabel"] for lvl in topo["spec"]["levels"]][-1] == "kubernetes.io/hostname"


def test_sla_order_and_a_16_gpu_gang_admitted_whole(cluster: KubeEnv, tmp_path: Path) -> None:
    """Two 16-GPU gangs that cannot run together on rack r1's 24 GPUs: P0 first, then
    P3 — each with both pods at once, never one pod of a gang without the other."""
    low, _ = compiled(tmp_path, "low", intent("gang-low", "tn-gold", 16, "P3"))
    high, _ = compiled(tmp_path, "high", intent("gang-high", "tn-gold", 16, "P0"))
    recorder = WatchRecorder(cluster, "workloads.kueue.x-k8s.io")
    pods = WatchRecorder(cluster, "pods")
    try:
        hold(cluster, "tn-gold", True)
        kubectl_apply(cluster, low)       # the low one is queued first
        kubectl_apply(cluster, high)
        time.sleep(2)
        hold(cluster, "tn-gold", False)

        def done() -> Any:
            items = cluster.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", "tn-gold")["items"]
            return {job_of(w) for w in items if finished(w)} >= {"gang-low", "gang-high"}
        wait_for(done, 240, "both gangs to be admitted and finish")
    finally:
        events = recorder.stop()
        pod_events = pods.stop()
    assert admission_order(events)[:2] == ["gang-high", "gang-low"], admission_order(events)
    # all-or-nothing: at admission the whole PodSet (2 pods x 8 GPUs) is assigned ...
    for w in events:
        if admitted(w) and job_of(w) in ("gang-low", "gang-high"):
            [psa] = w["status"]["admission"]["podSetAssignments"]
            assert psa["count"] == 2 and sum(assigned_nodes(w).values()) == 2, psa
    # ... and gang-low had no pod at all while gang-high held the rack
    first_low_pod = next(i for i, p in enumerate(pod_events) if p["metadata"]["name"].startswith("gang-low-"))
    high_done = next(i for i, p in enumerate(pod_events) if p["metadata"]["name"].startswith("gang-high-")
                     and p.get("status", {}).get("phase") == "Succeeded")
    assert first_low_pod > high_done, "gang-low started before gang-high freed the GPUs"


def test_kueue_assignment_is_compared_with_the_plan(cluster: KubeEnv, tmp_path: Path) -> None:
    """Cordon a node the plan uses: Kueue admits on live state elsewhere, and the
    comparison says which node differs and why."""
    bodies, placements = compiled(tmp_path, "cmp", intent("gang-cmp", "tn-silver", 16, "P1"))
    plan = placements["gang-cmp"]
    cordoned = plan.allocations[0].node
    cluster.kubectl_run("cordon", cordoned)
    try:
        kubectl_apply(cluster, bodies)

        def workload() -> Any:
            items = cluster.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", "tn-silver")["items"]
            return next((w for w in items if job_of(w) == "gang-cmp" and admitted(w)), None)
        w = wait_for(workload, 120, "Kueue to admit gang-cmp")
        nodes = cluster.kubectl_json("get", "nodes")["items"]
    finally:
        cluster.kubectl_run("uncordon", cordoned)
    got = assigned_nodes(w)
    assert cordoned not in got and len(got) == 2, got
    [diff] = compare(plan, w, nodes)
    assert diff.kind == "nodes"
    assert f"planned but not assigned: {cordoned}" in diff.message
    assert f"{cordoned}: it is cordoned" in diff.message, diff.message


def test_apply_renders_and_applies_for_kueue(cluster: KubeEnv, tmp_path: Path) -> None:
    """`intentc apply --render-target kueue`: the cluster serves Kueue, so it is not refused."""
    d = tmp_path / "apply"
    d.mkdir()
    (d / "tenants.intent").write_text(TENANTS)
    (d / "jobs.intent").write_text(intent("small", "tn-bronze", 1, "P2", "within node"))
    # --force-conflicts: earlier tests of this module applied the same tenants' quotas under
    # their own field manager, with the plan of their own intents
    code, _, output = invoke("apply", str(d), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                             "--commit", SHA, "--render-target", "kueue", "--timeout", "180", "-o", "json",
                             "--force-conflicts")
    assert code == 0, output
    # apply saw its pod succeed; the Job controller records it a batch period later
    job = next(j for j in recorded_jobs(cluster, "tn-bronze") if j["metadata"]["name"] == "small")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "intentc"
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"].get("conditions", []))
    assert job["spec"]["suspend"] is False, "Kueue unsuspended it"
    # What Kueue wrote is handed over: not drift, and a re-apply writes nothing
    # (objects other tests applied with kubectl carry intentc's label: those are orphans here)
    code, text, output = invoke("drift", str(d), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                                "--commit", SHA, "--render-target", "kueue", "-o", "json")
    report = json.loads(text)
    assert report["counts"]["modified"] == 0, output
    assert not [f for f in report["findings"] if f["object"]["name"] == "small"], output
    code, text, output = invoke("apply", str(d), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                                "--commit", SHA, "--render-target", "kueue", "--no-wait", "-o", "json")
    assert code == 0, output
    assert not [o for o in json.loads(text)["objects"] if o["written"]], text
    assert cluster.kubectl_json("get", "job", "small", "-n", "tn-bronze")["spec"]["suspend"] is False
