"""A Job pinned to a node the fallback chain tainted moves before it starts (issue 40, item 3).

A whole control plane (API server, controller-manager with the real Job
controller, scheduler) and kwok playing the kubelet for two fake 8 x H100
nodes.  The Job of intent `waiting` is applied as previewed (pinned to its
planned node) while a foreign pod holds that node's eight GPUs, so its pod is
Pending there.  The real `intentc daemon` follows the same commit (it adopts
what is applied, it does not roll out).  Then the node gets the
GPU-observation taint the fallback chain writes (the chain's own tainting is
`tests/test_fallback_kube.py`); with nothing else done by the test:

* the daemon re-binds the Job on live occupancy, deletes it (its Pending pod
  goes with it) and creates it pinned to the other node, where its pod is
  scheduled — read from the API server (`pod.spec.nodeName`);
* a `JobMoved` Event on the Job and `intentc_jobs_moved_total{path="recreated"}`
  say so; drift (policy `heal`) reports nothing modified or stale and heals
  nothing: the moved Job carries the preview's spec-hash as any live-bound Job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from intentc.daemon.fallback import OBSERVATION_SECONDS, TaintChange
from tests.kube_env import KubeEnv, free_port
from tests.kube_nodes import add_topology
from tests.kube_support import sigterm
from tests.test_daemon_kube import sample, wait_for
from tests.test_fallback_kube import git

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parent.parent
HOST = "kubernetes.io/hostname"
TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: two}
spec:
  levels: [zone, rack, nvlink, node]
  nodes:
    - name: gpu-a
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      cpu: "192"
      memory: 2Ti
      domains: {zone: z1, rack: r1, nvlink: gpu-a}
    - name: gpu-b
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      cpu: "192"
      memory: 2Ti
      domains: {zone: z1, rack: r1, nvlink: gpu-b}
"""
INTENTS = """\
tenant team-m {
  tier: gold
  drift: heal
}

intent waiting {
  trigger: on push
  action: batch image "batch:1"
  context: tenant team-m
  constraints: gpus 8
}
"""


def make_repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    (repo / "intents").mkdir(parents=True)
    (repo / "clusters").mkdir()
    (repo / "intents" / "team.intent").write_text(INTENTS)
    (repo / "clusters" / "two.yaml").write_text(TOPOLOGY)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "intents")
    return repo, git(repo, "rev-parse", "HEAD")


def intentc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "intentc", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)


def test_a_pending_job_pinned_to_a_tainted_node_is_moved_to_the_other_node(
        kube_cluster: KubeEnv, tmp_path: Path) -> None:
    env = kube_cluster
    repo, sha = make_repo(tmp_path)
    topology = repo / "clusters" / "two.yaml"
    add_topology(env, str(topology))

    # where the preview puts the Job: the node the foreign pod then fills
    plan = intentc("plan", str(repo / "intents"), "-t", str(topology), "-o", "json")
    assert plan.returncode == 0, plan.stderr
    (placement,) = json.loads(plan.stdout)["placements"]
    (planned,) = {a["node"] for a in placement["allocations"]}
    other = next(n for n in ("gpu-a", "gpu-b") if n != planned)
    hog = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog", "namespace": "default"},
           "spec": {"nodeSelector": {HOST: planned},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "c", "image": "hog:1",
                                    "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
    env.kubectl_run("apply", "-f", "-", input=json.dumps(hog))
    wait_for("the foreign pod running on the planned node", lambda: env.kubectl_json(
        "get", "pod", "hog", "-n", "default").get("status", {}).get("phase") == "Running")

    applied = intentc("apply", str(repo / "intents"), "-t", str(topology), "--kubeconfig", str(env.kubeconfig),
                      "--target", "moves-demo", "--binding", "preview", "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    def job() -> dict[str, Any]:
        return dict(env.kubectl_json("get", "job", "waiting", "-n", "team-m"))

    def pods() -> list[dict[str, Any]]:
        return list(env.kubectl_json("get", "pods", "-n", "team-m", "-l",
                                     "batch.kubernetes.io/job-name=waiting")["items"])

    def unschedulable() -> bool:
        return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for p in pods() for c in p.get("status", {}).get("conditions") or [])

    first = job()
    assert first["spec"]["template"]["spec"]["nodeSelector"][HOST] == planned
    wait_for("the scheduler to find no room for the Job's pod", unschedulable)
    assert [p["spec"].get("nodeName") for p in pods()] == [None]

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo), "--branch", "main",
         "-t", "clusters/two.yaml", "--kubeconfig", str(env.kubeconfig), "--target", "moves-demo",
         "--listen", f"127.0.0.1:{port}", "--no-metrics-secure", "--interval", "1", "--resync", "2",
         "--workdir", str(tmp_path / "work"), "--rollout-timeout", "120", "--log-format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def metrics() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            return str(resp.read().decode())

    try:
        wait_for("the daemon to adopt the applied commit", lambda: f'commit="{sha}"' in metrics())
        # the taint the fallback chain puts on a node whose GPU failed (daemon/fallback.py)
        taint = TaintChange(planned, True, int(time.time()) + OBSERVATION_SECONDS).taint()
        env.kubectl_run("patch", "node", planned, "--type=merge", "-p", json.dumps({"spec": {"taints": [taint]}}))

        def moved() -> str | None:
            body = job()
            if body["metadata"]["uid"] == first["metadata"]["uid"]:
                return None
            return str(body["spec"]["template"]["spec"].get("nodeSelector", {}).get(HOST) or "")
        assert wait_for("the Job re-created with a new pin", moved) == other

        new = job()["metadata"]["uid"]

        def on_nodes() -> set[str] | None:
            now = pods()     # the old Pending pod went with the old Job; the new one is scheduled
            owners = {o.get("uid") for p in now for o in p["metadata"].get("ownerReferences") or []}
            if not now or owners != {new} or not all(p["spec"].get("nodeName") for p in now):
                return None
            return {p["spec"]["nodeName"] for p in now}
        assert wait_for("the moved Job's pod scheduled, the old one gone", on_nodes) == {other}

        events = env.kubectl_json("get", "events", "-n", "team-m", "--field-selector", "reason=JobMoved")["items"]
        assert [e["involvedObject"]["name"] for e in events] == ["waiting"]
        assert f"moved from {planned} to {other}" in events[0]["message"]
        annotations = job()["metadata"]["annotations"]
        assert annotations["intentc.dev/preview-spec-hash"] == first["metadata"]["annotations"]["intentc.dev/spec-hash"]

        text = metrics()
        assert sample(text, "intentc_jobs_moved_total", path="recreated") == 1.0
        assert sample(text, "intentc_jobs_moved_total", path="updated") == 0.0
        # drift agrees: the moved Job is intentc's own change (two resyncs after the move)
        resyncs = sample(text, "intentc_reconcile_duration_seconds_count", trigger="resync") or 0.0

        def after_two_resyncs() -> str | None:
            t = metrics()
            done = sample(t, "intentc_reconcile_duration_seconds_count", trigger="resync") or 0.0
            return t if done >= resyncs + 2 else None
        later = wait_for("two more resyncs", after_two_resyncs)
        for cls in ("modified", "stale", "missing", "orphan"):
            assert sample(later, "intentc_drift_objects", drift_class=cls) == 0.0, cls
        assert not any(sample(later, "intentc_heals_total", drift_class=c) for c in ("modified", "stale", "missing"))
        assert sample(later, "intentc_jobs_moved_total", path="recreated") == 1.0, "moved once"
        assert job()["metadata"]["uid"] == new
    finally:
        code, out = sigterm(proc)
        (tmp_path / "daemon.log").write_text(out)
    assert code == 0, out[-4000:]


def _pinned_job(name: str, node: str, suspend: bool) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": {"intentc.dev/intent": name}},
            "spec": {"suspend": suspend, "backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {HOST: node},
                "containers": [{"name": "main", "image": "x:1",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}


def test_the_api_server_lets_only_a_suspended_never_started_job_change_its_pins(kube_cluster: KubeEnv) -> None:
    """The two paths of `kube/reactions.py` against the real API server and Job controller:
    a suspended Job that never started takes new pins in place (KEP-2926); a started one is
    refused (`Invalid`), and is moved by a delete (Background: its Pending pod goes too)
    and a create, the stale read's preconditions refusing a second delete."""
    from intentc.daemon.stranding import pinned_nodes
    from intentc.kube import reactions
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import Invalid, Outdated

    env = kube_cluster
    client = KubeClient.connect(str(env.kubeconfig))
    nowhere = "no-such-node"                 # a pin nothing satisfies: its pod stays Pending
    client.apply(_pinned_job("held", nowhere, True))            # as a rollout creates it: intentc owns it
    held = env.kubectl_json("get", "job", "held", "-n", "default")
    assert not held.get("status", {}).get("startTime")
    done = reactions.update_job(client, held, _pinned_job("held", "gpu-b", True))
    assert pinned_nodes(done) == ("gpu-b",) and done["metadata"]["uid"] == held["metadata"]["uid"]

    client.apply(_pinned_job("started", nowhere, False))

    def started_with_a_pod() -> dict[str, Any] | None:
        j = env.kubectl_json("get", "job", "started", "-n", "default")
        made = env.kubectl_json("get", "pods", "-n", "default", "-l", "batch.kubernetes.io/job-name=started")["items"]
        return dict(j) if j.get("status", {}).get("startTime") and made else None
    started = wait_for("the Job controller to start it and create its pod", started_with_a_pod)
    with pytest.raises(Invalid):
        reactions.update_job(client, started, _pinned_job("started", "gpu-b", False))
    done = reactions.recreate_job(client, started, _pinned_job("started", "gpu-b", False))
    assert done["metadata"]["uid"] != started["metadata"]["uid"] and pinned_nodes(done) == ("gpu-b",)
    with pytest.raises(Outdated):            # a stale cache never deletes the Job just created
        reactions.recreate_job(client, started, _pinned_job("started", "gpu-b", False))

    def old_pod_gone() -> bool:
        items = env.kubectl_json("get", "pods", "-n", "default", "-l", "batch.kubernetes.io/job-name=started")["items"]
        return not any(o.get("uid") == started["metadata"]["uid"]
                       for p in items for o in p["metadata"].get("ownerReferences") or [])
    wait_for("the old Job's Pending pod deleted with it", old_pod_gone)
    client.close()
