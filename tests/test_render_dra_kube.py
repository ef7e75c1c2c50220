"""`--render-target dra` on a real control plane: kube-scheduler allocates the planned GPUs.

The fake GPU nodes publish ResourceSlices the way NVIDIA's DRA driver does
(tests/kube_nodes.py); intentc renders ResourceClaimTemplates that select the
planned indices; kube-scheduler allocates claims against the slices.  The
devices each pod got are read from the claims (status.allocation) and must be
plan.json's, node by node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kube_support import WatchRecorder, allocated_claims, allocated_devices, invoke, wait_for
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).parent / "fixtures" / "dra"
INTENTS = FIXTURES / "intents"
TOPOLOGY = FIXTURES / "cluster.yaml"
SHA = "d" * 40
INTENT_LABEL = "intentc.dev/intent"


@pytest.fixture(scope="module")
def cluster(kube_cluster: KubeEnv) -> KubeEnv:
    add_topology(kube_cluster, str(TOPOLOGY), dra=True)
    return kube_cluster


def planned(tmp_path: Path) -> set[tuple[str, str, tuple[int, ...]]]:
    out = tmp_path / "build"
    code, text, output = invoke("compile", str(INTENTS), "-t", str(TOPOLOGY), "--out-dir", str(out), "--commit", SHA,
                        "--kube-version", "1.37", "--render-target", "dra")
    assert code == 0, output
    plan = json.loads((out / "plan.json").read_text())
    return {(p["intent"], a["node"], tuple(a["gpus"])) for p in plan["placements"] for a in p["allocations"]}


def test_allocated_devices_are_the_planned_ones(cluster: KubeEnv, tmp_path: Path) -> None:
    expected = planned(tmp_path)
    assert len({i for i, _, _ in expected}) == 4 and len(expected) == 5, expected
    recorder = WatchRecorder(cluster, "resourceclaims.resource.k8s.io")
    try:
        code, text, output = invoke("apply", str(INTENTS), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                            "--commit", SHA, "--render-target", "dra", "--timeout", "300", "-o", "json")
    finally:
        claims = allocated_claims(recorder.stop())
    assert code == 0, output
    assert json.loads(text)["result"] == "succeeded", output
    seen = set()
    for claim in claims.values():
        pool, gpus = allocated_devices(claim) or ("", ())
        assert all(r["driver"] == "gpu.nvidia.com" for r in claim["status"]["allocation"]["devices"]["results"])
        seen.add((claim["metadata"]["labels"][INTENT_LABEL], pool, gpus))
    assert len(claims) == len(expected), "one claim per pod, one pod per planned node"
    assert seen == expected, f"allocated {sorted(seen)}, planned {sorted(expected)}"


def test_a_pod_waits_rather_than_take_other_gpus(cluster: KubeEnv, tmp_path: Path) -> None:
    """Enforcement, not advice: with a planned GPU taken by someone else the pod stays
    Pending although other GPUs on its node are free."""
    out = tmp_path / "build"
    code, text, output = invoke("compile", str(INTENTS), "-t", str(TOPOLOGY), "--out-dir", str(out), "--commit", SHA,
                        "--kube-version", "1.37", "--render-target", "dra")
    assert code == 0, output
    plan = json.loads((out / "plan.json").read_text())
    [alloc] = next(p for p in plan["placements"] if p["intent"] == "warm-b")["allocations"]
    node, taken = alloc["node"], alloc["gpus"][0]
    cluster.kubectl_run("create", "namespace", "squatter", check=False)
    squatter = {
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "one-gpu", "namespace": "squatter"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "gpu.nvidia.com", "count": 1, "selectors": [{"cel": {
                     "expression": f'device.attributes["gpu.nvidia.com"].index == {taken}'}}]}}]}}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "squatter", "namespace": "squatter"},
             "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                      "resourceClaims": [{"name": "gpu", "resourceClaimName": "one-gpu"}],
                      "containers": [{"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}]}},
        ]}
    cluster.kubectl_run("create", "-f", "-", input=json.dumps(squatter))
    cluster.kubectl_run("wait", "--for=condition=PodScheduled", "-n", "squatter", "pod/squatter", "--timeout=60s")
    manifests = sorted((out / "manifests").glob("*warm-b*"))
    ns = "tn-dra"
    cluster.kubectl_run("delete", "job", "warm-b", "-n", ns, "--ignore-not-found", "--wait=true")
    for m in manifests:
        cluster.kubectl_run("apply", "--server-side", "--force-conflicts", "-f", str(m))

    def unschedulable() -> str:
        pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", "job-name=warm-b")["items"]
        conds = [c for p in pods for c in p.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"]
        return " ".join(c.get("message", "") for c in conds if c["status"] == "False")
    message = wait_for(unschedulable, 90, "warm-b's pod to be reported unschedulable")
    assert "claim" in message, message
    # Enough GPUs are free on the node (4 in all, the squatter holds one): only the planned set would do.
    assert 4 - 1 >= len(alloc["gpus"])
    pods = cluster.kubectl_json("get", "pods", "-n", ns, "-l", "job-name=warm-b")["items"]
    assert all(not p["spec"].get("nodeName") for p in pods), "still Pending"
    cluster.kubectl_run("delete", "job", "warm-b", "-n", ns, "--wait=false")
    cluster.kubectl_run("delete", "namespace", "squatter", "--wait=false")


def test_apply_refuses_a_target_the_cluster_does_not_serve(cluster: KubeEnv) -> None:
    code, text, output = invoke("apply", str(INTENTS), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                        "--commit", SHA, "--render-target", "kueue", "--dry-run")
    assert code == 2, output
    assert "render target 'kueue' needs Kueue (kueue.x-k8s.io/v1beta2)" in output and "does not serve" in output, output


def test_the_daemon_refuses_it_too(cluster: KubeEnv, tmp_path: Path) -> None:
    """The daemon checks with the same helper before it starts following a branch."""
    code, _, output = invoke("daemon", "--repo", str(tmp_path), "--branch", "main", "-t", "cluster.yaml",
                             "--kubeconfig", str(cluster.kubeconfig), "--listen", "", "--render-target", "kueue",
                             "--workdir", str(tmp_path / "work"))
    assert code == 2, output
    assert "render target 'kueue' needs Kueue (kueue.x-k8s.io/v1beta2)" in output, output
    code, _, output = invoke("daemon", "--repo", str(tmp_path), "--branch", "main", "-t", "cluster.yaml",
                             "--kubeconfig", str(cluster.kubeconfig), "--listen", "", "--render-target", "dra",
                             "--kube-version", "1.33", "--workdir", str(tmp_path / "work"))
    assert code == 2 and "'dra' needs Kubernetes 1.34" in output, output
