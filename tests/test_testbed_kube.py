"""What only a whole control plane can show: the cluster does what the plan says.

kube-scheduler binds the pods intentc renders, kwok runs them on fake GPU
nodes made from a Topology file, the Job controller completes the Jobs,
and the Deployment controller scales — so a `kubectl scale` is a real
write through the scale subresource. Kueue admits a suspended Job.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.render.capabilities import KubeVersion
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import recorded_jobs, wait_for

pytestmark = pytest.mark.kube

FIXTURES = Path(__file__).parent / "fixtures"
INTENTS = FIXTURES / "repo" / "intents"
TOPOLOGY = FIXTURES / "testbed" / "cluster.yaml"
SHA = "c" * 40
runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.stdout


@pytest.fixture(scope="module")
def cluster(kube_cluster: KubeEnv) -> KubeEnv:
    add_topology(kube_cluster, str(TOPOLOGY))
    return kube_cluster


def test_the_control_plane_is_a_current_release(kube_cluster: KubeEnv) -> None:
    assert KubeVersion.parse(kube_cluster.version()) >= KubeVersion(1, 34)
    out = subprocess.run([str(kube_cluster.assets / "kube-apiserver"), "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert KubeVersion.parse(out.split()[-1]) >= KubeVersion(1, 34), out


def test_fake_gpu_nodes_carry_gfd_labels_and_capacity(cluster: KubeEnv) -> None:
    node = cluster.kubectl_json("get", "node", "tb-h100-1")
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "H100-80GB" and labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.memory"] == str(80 * 1024)
    assert labels["topology.kubernetes.io/zone"] == "z1"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True", "kwok plays the kubelet"


def _pods(env: KubeEnv, namespace: str, selector: str) -> list[dict[str, Any]]:
    return list(env.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"])


def test_planned_jobs_are_scheduled_on_their_planned_nodes_and_complete(cluster: KubeEnv,
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "build"
    code, text = invoke("compile", str(INTENTS), "-t", str(TOPOLOGY), "--out-dir", str(out), "--commit", SHA,
                        "--kube-version", "1.37")
    assert code == 0, text
    plan = json.loads((out / "plan.json").read_text())
    planned = {p["intent"]: sorted(a["node"] for a in p["allocations"]) for p in plan["placements"]}
    code, text = invoke("apply", str(INTENTS), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                        "--commit", SHA, "--timeout", "300", "-o", "json")
    assert code == 0, text
    doc = json.loads(text)
    assert doc["kubeVersion"] == "1.37" and doc["result"] == "succeeded", text
    for namespace, job in (("tn-alpha", "train"), ("tn-beta", "evaluate")):
        # apply saw its pods succeed; the Job controller records it a batch period later
        status = next(j for j in recorded_jobs(cluster, namespace) if j["metadata"]["name"] == job)["status"]
        assert any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions", [])), status
        nodes = sorted(p["spec"]["nodeName"] for p in _pods(cluster, namespace, f"job-name={job}")
                       if p["status"].get("phase") == "Succeeded")
        # A gang's pods repel each other while they run; kwok ends each at once, so a later
        # index may land where an earlier one already finished — but never off the plan.
        assert len(nodes) == len(planned[job]) and set(nodes) <= set(planned[job]), \
            f"{job}: the scheduler bound {nodes}, the plan said {planned[job]}"
    serving = _pods(cluster, "tn-beta", "intentc.dev/intent=serve")
    assert sorted({p["spec"]["nodeName"] for p in serving}) == planned["serve"]


def test_kubectl_scale_is_drift_and_apply_restores_it(cluster: KubeEnv) -> None:
    """The sync issue's reproducer on a real 1.37 control plane: the write goes through
    the scale subresource and the Deployment controller acts on it."""
    common = [str(INTENTS), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig), "--commit", SHA]
    code, text = invoke("apply", *common, "--timeout", "300", "-o", "json")
    assert code == 0, text
    cluster.kubectl_run("scale", "deployment/serve", "-n", "tn-beta", "--replicas=0")
    code, text = invoke("drift", *common, "-o", "json")
    assert code == 1, text
    assert "spec.replicas" in text
    code, text = invoke("apply", *common, "--timeout", "300", "-o", "json")
    assert code == 0, text
    doc = json.loads(text)
    repaired = [o for o in doc["objects"] if o["action"] == "repair"]
    assert [(o["kind"], o["name"]) for o in repaired] == [("Deployment", "serve")], text
    assert any("spec.replicas: 0 -> 2" in line for line in repaired[0]["diff"]), repaired
    assert cluster.kubectl_json("get", "deployment", "serve", "-n", "tn-beta")["spec"]["replicas"] == 2
    code, text = invoke("apply", *common, "--no-wait", "-o", "json")
    assert code == 0, text
    again = json.loads(text)
    assert not any(o["written"] for o in again["objects"]) and not again["inventoryWritten"], \
        "a second apply sends no write"


def test_a_live_plan_avoids_gpus_a_foreign_pod_holds(cluster: KubeEnv, tmp_path: Path) -> None:
    """The plan issue's check: a pod intentc does not manage holds 4 GPUs of a node;
    `plan --kubeconfig` leaves them alone and says why, the preview does not know."""
    foreign = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook", "namespace": "default"},
               "spec": {"nodeName": "tb-h100-1", "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "jupyter:1",
                                        "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    cluster.kubectl_run("create", "-f", "-", input=json.dumps(foreign))
    wait_for(lambda: cluster.kubectl_json("get", "pod", "notebook", "-n", "default")["status"].get("phase") == "Running",
              120, "kwok to run the foreign pod")
    try:
        code, text = invoke("plan", str(INTENTS), "-t", str(TOPOLOGY), "--kubeconfig", str(cluster.kubeconfig),
                            "-o", "json")
        assert code == 0, text
        plan = json.loads(text)
        assert plan["basis"]["kind"] == "live"
        assert any("pod default/notebook" in n and "tb-h100-1" in n for n in plan["basis"]["notes"]), plan["basis"]
        used = [g for p in plan["placements"] for a in p["allocations"] if a["node"] == "tb-h100-1" for g in a["gpus"]]
        assert not set(used) & {4, 5, 6, 7} and len(used) <= 4, used
        code, text = invoke("plan", str(INTENTS), "-t", str(TOPOLOGY), "-o", "json")
        assert code == 0 and json.loads(text)["basis"] == {"kind": "preview", "notes": []}
    finally:
        cluster.kubectl_run("delete", "pod", "notebook", "-n", "default", "--wait=false")


KUEUE = "kueue.x-k8s.io/v1beta2"


def test_kueue_admits_a_suspended_job(kueue_cluster: KubeEnv) -> None:
    env = kueue_cluster
    add_topology(env, str(TOPOLOGY))
    objects = [
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "h100"},
         "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100-80GB"}}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
             "flavors": [{"name": "h100", "resources": [
                 {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "512Gi"},
                 {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kq"}},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "kq"},
         "spec": {"clusterQueue": "cq"}},
    ]
    env.kubectl_run("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "gang", "namespace": "kq", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
           "spec": {"suspend": True, "parallelism": 1, "completions": 1, "template": {"spec": {
               "restartPolicy": "Never",
               "containers": [{"name": "main", "image": "busybox:1.36",
                               "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "4"},
                                             "limits": {"nvidia.com/gpu": "4"}}}]}}}}
    env.kubectl_run("create", "-f", "-", input=json.dumps(job))

    def admitted() -> Any:
        items = env.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", "kq")["items"]
        return [w for w in items
                if any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))]
    [workload] = wait_for(admitted, 120, "Kueue to admit the workload")
    assert workload["status"]["admission"]["clusterQueue"] == "cq"
    wait_for(lambda: not env.kubectl_json("get", "job", "gang", "-n", "kq")["spec"].get("suspend"), 60,
              "Kueue to resume the Job")

    def complete() -> Any:
        status = env.kubectl_json("get", "job", "gang", "-n", "kq").get("status", {})
        return any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions", []))
    wait_for(complete, 120, "the admitted Job to complete on a kwok node")
    [pod] = _pods(env, "kq", "job-name=gang")
    assert pod["spec"]["nodeName"].startswith("tb-h100-"), "the flavor's node labels steer the pod"
