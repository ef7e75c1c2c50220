"""The failure fallback chain and the Intent mirror on the test bed (issue 15).

A whole control plane (API server, controller-manager with the real Job
controller, scheduler) with kwok playing the kubelet for three fake 8 x H100
nodes.  kwok's stages are its own plus `tests/kwok/gpu-failure.yaml`: every
pod of the intent `gpu-flaky` that is not a fallback variant, or is its
power-capped step, exits with 74 (a GPU device error).  The real `intentc
daemon` (a subprocess, following a git repository) rolls the intents out;
then, with nothing done by the test:

* the Job controller retries on the same product (`podFailurePolicy` Count)
  until `backoffLimit`, and the Job fails with `BackoffLimitExceeded`;
* the daemon taints the node of the failed GPU `intentc.dev/gpu-observation`
  and resumes the first step of the chain, the power-capped retry, which
  tolerates the taint and goes back to the same node, and fails there too;
* the daemon resumes the next step, the smaller chunk, which the scheduler
  puts on another H100 node and whose pod succeeds; the smaller-batch step
  is never resumed;
* `intentc plan --kubeconfig` leaves the tainted node out;
* `kubectl get intents -A` lists every intent with its status.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.conftest import _control_plane
from tests.kube_env import KubeEnv, free_port
from tests.kube_nodes import add_topology
from tests.kube_support import sigterm
from tests.test_daemon_kube import sample, wait_for

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parent.parent
STAGES = ROOT / "tests" / "kwok" / "gpu-failure.yaml"
TOPOLOGY = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
TAINT = "intentc.dev/gpu-observation"
INTENTS = """\
tenant team-f {
  tier: gold
  drift: heal
}

intent gpu-flaky {
  trigger: on push
  action: training image "trainer:1" { batch: 64 }
  context: tenant team-f
  constraints: gpus 8, retries 1, duration 1h
}

intent steady {
  trigger: on push
  action: batch image "batch:1"
  context: tenant team-f
  constraints: gpus 8
}
"""


def merged_stages(default: Path, ours: Path) -> str:
    """kwok's stages with `pod-complete` limited to the pods our failure stage leaves alone."""
    failure = yaml.safe_load(ours.read_text())
    condition = failure["spec"]["selector"]["matchExpressions"][-1]["key"]
    docs = [d for d in yaml.safe_load_all(default.read_text()) if d and d.get("kind") == "Stage"]
    for d in docs:
        if d["metadata"]["name"] == "pod-complete":
            d["spec"]["selector"]["matchExpressions"].append({"key": condition, "operator": "In", "values": ["pass"]})
    return yaml.safe_dump_all([*docs, failure], sort_keys=False)


@pytest.fixture(scope="module")
def failing_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    from tests.kube_env import assets_dir
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS")
    stages = tmp_path_factory.mktemp("kwok") / "stages.yaml"
    stages.write_text(merged_stages(assets / "kwok-stages.yaml", STAGES))
    for env in _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok"), (stages,)):
        add_topology(env, str(TOPOLOGY))
        yield env


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                               "PATH": "/usr/bin:/bin:/usr/local/bin"}).stdout.strip()


def make_repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    (repo / "intents").mkdir(parents=True)
    (repo / "clusters").mkdir()
    (repo / "intents" / "team.intent").write_text(INTENTS)
    shutil.copy(TOPOLOGY, repo / "clusters" / "small.yaml")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "intents")
    return repo, git(repo, "rev-parse", "HEAD")


def test_gpu_failure_taints_the_node_walks_power_cap_then_smaller_chunk_and_the_fleet_is_mirrored(
        failing_cluster: KubeEnv, tmp_path: Path) -> None:
    env = failing_cluster
    repo, sha = make_repo(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo), "--branch", "main",
         "-t", "clusters/small.yaml", "--kubeconfig", str(env.kubeconfig), "--target", "fallback-demo",
         "--listen", f"127.0.0.1:{port}", "--no-metrics-secure", "--interval", "1", "--resync", "5", "--workdir", str(tmp_path / "work"),
         "--rollout-timeout", "240", "--log-format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def job(name: str) -> dict[str, Any]:
        return dict(env.kubectl_json("get", "job", name, "-n", "team-f"))

    def failed_reason(name: str) -> str | None:
        return next((c.get("reason") for c in job(name).get("status", {}).get("conditions", [])
                     if c["type"] == "Failed" and c["status"] == "True"), None)

    def complete(name: str) -> bool:
        return any(c["type"] == "Complete" and c["status"] == "True"
                   for c in job(name).get("status", {}).get("conditions", []))

    def env_of(j: dict[str, Any]) -> dict[str, str | None]:
        return {e["name"]: e.get("value") for e in j["spec"]["template"]["spec"]["containers"][0]["env"]}

    def pod_nodes(name: str) -> set[str]:
        pods = env.kubectl_json("get", "pods", "-n", "team-f", "-l", f"batch.kubernetes.io/job-name={name}")
        return {p["spec"].get("nodeName") for p in pods["items"]}

    def tainted() -> list[str]:
        nodes = env.kubectl_json("get", "nodes")["items"]
        return [n["metadata"]["name"] for n in nodes
                if any(t["key"] == TAINT for t in n.get("spec", {}).get("taints") or [])]

    try:
        planned = job_node = wait_for("the gpu-flaky Job", lambda: job("gpu-flaky")["spec"]["template"]["spec"]
                                      ["nodeSelector"]["kubernetes.io/hostname"])
        assert all(job(f"gpu-flaky-fallback-{s}")["spec"]["suspend"] is True for s in ("power", "chunk", "batch"))
        # the Job controller retries the GPU failure on the same product, then gives up
        assert wait_for("gpu-flaky to fail", lambda: failed_reason("gpu-flaky")) == "BackoffLimitExceeded"
        assert wait_for("the node of the failed GPU tainted", tainted) == [planned]
        node = env.kubectl_json("get", "node", job_node)
        (taint,) = [t for t in node["spec"]["taints"] if t["key"] == TAINT]
        assert taint["effect"] == "NoSchedule" and int(taint["value"]) > time.time() + 600
        # first the power cap, on the same (tainted) node: the GPU is off the bus, so it fails too
        assert wait_for("the power-capped step to fail",
                        lambda: failed_reason("gpu-flaky-fallback-power")) == "BackoffLimitExceeded"
        power = job("gpu-flaky-fallback-power")
        assert env_of(power)["INTENTC_POWER_LIMIT_FRACTION"] == "0.8"
        assert pod_nodes("gpu-flaky-fallback-power") == {planned}
        # then the smaller chunk runs elsewhere and succeeds; the drift policy (heal) leaves it resumed
        wait_for("the smaller-chunk step to complete", lambda: complete("gpu-flaky-fallback-chunk"))
        variant = job("gpu-flaky-fallback-chunk")
        assert variant["spec"]["suspend"] is False
        assert env_of(variant)["INTENTC_CHUNK_FRACTION"] == "0.5" and env_of(variant)["INTENTC_BATCH"] == "64"
        assert variant["status"]["startTime"] >= next(c["lastTransitionTime"] for c in power["status"]["conditions"]
                                                      if c["type"] == "Failed")
        nodes = pod_nodes("gpu-flaky-fallback-chunk")
        assert nodes and planned not in nodes
        pods = env.kubectl_json("get", "pods", "-n", "team-f", "-l",
                                "batch.kubernetes.io/job-name=gpu-flaky-fallback-chunk")
        assert {p["status"]["phase"] for p in pods["items"]} == {"Succeeded"}
        assert job("gpu-flaky-fallback-batch")["spec"]["suspend"] is True
        events = env.kubectl_json("get", "events", "-A", "--field-selector", "reason=GPUObservation")["items"]
        assert {e["involvedObject"]["name"] for e in events} == {planned}
        resumed = env.kubectl_json("get", "events", "-n", "team-f", "--field-selector", "reason=FallbackResumed")
        assert sorted((e["involvedObject"]["name"], e["message"]) for e in resumed["items"]) == [
            ("gpu-flaky-fallback-chunk", "Job gpu-flaky-fallback-power failed (BackoffLimitExceeded): "
                                         "fallback gpu-flaky-fallback-chunk (smaller-chunk) resumed"),
            ("gpu-flaky-fallback-power", "Job gpu-flaky failed (BackoffLimitExceeded): "
                                         "fallback gpu-flaky-fallback-power (power-cap) resumed")]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
        # each later GPU failure on the node (the power-capped step's) may extend the taint
        failures = sum(len(env.kubectl_json("get", "pods", "-n", "team-f", "-l",
                                            f"batch.kubernetes.io/job-name={n}")["items"])
                       for n in ("gpu-flaky", "gpu-flaky-fallback-power"))
        assert 1.0 <= sample(text, "intentc_gpu_observation_taints_total", action="added") <= failures
        assert sample(text, "intentc_fallback_resumes_total") == 2.0
        assert sample(text, "intentc_drift_objects", drift_class="modified") == 0.0

        # live planning leaves the tainted node out
        plan = subprocess.run([sys.executable, "-m", "intentc", "plan", str(repo / "intents"), "-t",
                               str(repo / "clusters" / "small.yaml"), "--kubeconfig", str(env.kubeconfig),
                               "-o", "json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert plan.returncode == 0, plan.stderr
        data = json.loads(plan.stdout)
        used = {a["node"] for p in data["placements"] for a in p["allocations"]}
        assert used and planned not in used
        assert data["basis"]["kind"] == "live"
        assert any(planned in note and TAINT in note for note in data["basis"]["notes"])

        # every intent mirrored, with its status
        def mirrored() -> dict[str, dict[str, Any]] | None:
            items = env.kubectl_json("get", "intents", "-A")["items"]
            got = {i["metadata"]["name"]: i.get("status") or {} for i in items}
            return got if all(s.get("phase") == "Succeeded" for s in got.values()) and len(got) == 2 else None
        statuses = wait_for("both intents Succeeded in their Intent objects", mirrored)
        assert {s["commit"] for s in statuses.values()} == {sha}
        assert statuses["gpu-flaky"]["placement"].startswith(planned + "[")
        assert all(s["forecast"]["phase"] for s in statuses.values())    # the live forecast, written alongside
        table = env.kubectl_run("get", "intents", "-A").stdout
        assert table.split()[:9] == ["NAMESPACE", "NAME", "TENANT", "ACTION", "PHASE", "START", "ETA", "BEHIND",
                                     "AGE"]
        assert "gpu-flaky" in table and "steady" in table
    finally:
        code, out = sigterm(proc)
        (tmp_path / "daemon.log").write_text(out)
    assert code == 0, out[-4000:]


def test_the_taint_is_lifted_when_the_observation_ends(failing_cluster: KubeEnv) -> None:
    """The reactor itself, on the same cluster: an observation taint whose end has passed is
    removed (other taints of the node kept), with an Event and a metric."""
    import threading

    from intentc.daemon.failures import FailureReactor
    from intentc.daemon.metrics import DaemonMetrics
    from intentc.kube.client import KubeClient

    env = failing_cluster
    client = KubeClient.connect(str(env.kubeconfig))
    ended = {"key": TAINT, "value": str(int(time.time()) - 1), "effect": "NoSchedule"}
    other = {"key": "example.com/maintenance", "value": "disk", "effect": "PreferNoSchedule"}
    env.kubectl_run("patch", "node", "node-3", "--type=merge", "-p", json.dumps({"spec": {"taints": [other, ended]}}))
    metrics, stop = DaemonMetrics(), threading.Event()
    reactor = FailureReactor(client, metrics, stop, lambda: None, watch_timeout=20)
    reactor.start()
    try:
        wait_for("the informers' first lists", lambda: all(i.synced.is_set() for i in reactor.informers))
        wait_for("the node with both taints in the cache", lambda: len(
            reactor.nodes.items()[next(r for r in reactor.nodes.items() if r.name == "node-3")]["spec"]["taints"]) == 2)
        reactor.react({})
        node = env.kubectl_json("get", "node", "node-3")
        assert [t["key"] for t in node["spec"]["taints"]] == ["example.com/maintenance"]
        assert metrics.observation_taints.labels("lifted")._value.get() == 1.0
        events = env.kubectl_json("get", "events", "-A", "--field-selector", "reason=GPUObservationOver")["items"]
        assert [e["involvedObject"]["name"] for e in events] == ["node-3"]
        reactor.react({})      # a stale cache may ask again: the resourceVersion check refuses it
        assert metrics.observation_taints.labels("lifted")._value.get() == 1.0
    finally:
        stop.set()
        for inf in reactor.informers:
            inf.close()
            inf.join()
