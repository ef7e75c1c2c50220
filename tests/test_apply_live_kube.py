"""`intentc apply` binds on the live cluster, wave by wave (issue 12 items 2 and 3, issue 14 item 2).

A whole control plane with kwok playing the kubelet of fake GPU nodes
(tests/kube_nodes.py): Job pods are scheduled by kube-scheduler on their
pinned node and completed by kwok, so waves really run one after another.
"Foreign" pods are plain pods holding GPUs that no intent of the test owns.
Each test has its own nodes, tenants and inventory target, and plans only onto
its own topology file's nodes (`--only-topology-nodes`): the other tests' fake
nodes share the cluster.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import git
import pytest

from intentc.ir.duration import parse_duration
from intentc.kube.client import KubeClient
from intentc.kube.cluster_state import read_cluster_state
from intentc.objectmeta import ObjectRef
from intentc.pipeline import compile_paths
from intentc.reconcile.live_binding import Binding, LiveBinder
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.reconcile.timeouts import wave_budgets
from intentc.render.capabilities import KubeVersion
from intentc.render.model import PREVIEW_HASH_ANNOTATION
from tests.git_support import commit
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import apply_json, invoke, wait_for

pytestmark = pytest.mark.kube

SHA = "e" * 40
HOSTNAME = "kubernetes.io/hostname"
_ids = itertools.count(1)

TOPOLOGY = """apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {{name: {t}}}
spec:
  levels: [zone, rack, nvlink, node]
  nodes:
""" + "".join(f"""    - name: {{t}}-n{i}
      gpu: {{{{product: H100-80GB, count: 8, memory: 80Gi}}}}
      cpu: "192"
      memory: 2Ti
      domains: {{{{zone: z1, rack: r1, nvlink: {{t}}-n{i}}}}}
""" for i in (1, 2))

INTENTS = """tenant {t}-a {{ tier: gold }}

intent first {{
  trigger: on push
  action: batch image "registry.example/first:1"
  context: tenant {t}-a
  constraints: cpu 1, memory 1Gi, gpus 8 x "H100-80GB" within node, duration 10m
}}

intent second {{
  trigger: after first
  action: batch image "registry.example/second:1"
  context: tenant {t}-a
  constraints: cpu 1, memory 1Gi, gpus 8 x "H100-80GB" within node, duration 10m
}}
"""


class Case:
    """One test's cluster nodes, intents and target."""

    def __init__(self, tmp: Path, env: KubeEnv, intents: str = INTENTS) -> None:
        self.env = env
        self.t = f"lv{next(_ids)}-{int(time.time()) % 100000}"
        self.tenant = f"{self.t}-a"
        self.dir = tmp / self.t
        (self.dir / "intents").mkdir(parents=True)
        (self.dir / "intents" / "main.intent").write_text(intents.format(t=self.t))
        self.topology = self.dir / "cluster.yaml"
        self.topology.write_text(TOPOLOGY.format(t=self.t))
        self.nodes = add_topology(env, str(self.topology))

    def preview_node(self, intent: str) -> str:
        result = compile_paths([str(self.dir / "intents")], str(self.topology), SHA, KubeVersion(1, 37))
        assert result.plan is not None and result.rendered is not None, [d.message for d in result.diagnostics]
        placement = result.plan.placement(intent)
        assert placement is not None and len(placement.nodes) == 1
        return placement.nodes[0]

    def other(self, node: str) -> str:
        return next(n for n in self.nodes if n != node)

    def foreign_pod(self, node: str, gpus: int, name: str = "notebook") -> str:
        ns = f"{self.t}-research"
        self.env.kubectl_run("create", "namespace", ns, check=False)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/nb:1",
                                                          "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}
        self.env.kubectl_run("create", "-f", "-", input=json.dumps(pod))
        wait_for(lambda: self.env.kubectl_json("get", "pod", "-n", ns, name)["status"].get("phase") == "Running",
                 60, f"foreign pod {name} running")
        return f"{ns}/{name}"

    def apply(self, *flags: str) -> tuple[int, dict[str, Any], str]:
        return apply_json(self.dir / "intents", self.topology, self.env, self.t, SHA, *flags)

    def has_job(self, name: str) -> bool:
        found = self.env.kubectl_run("get", "jobs", "-n", self.tenant, "-o", "name", check=False)
        return f"job.batch/{name}" in found.stdout

    def job(self, name: str) -> dict[str, Any]:
        return dict(self.env.kubectl_json("get", "job", "-n", self.tenant, name))

    def events(self, reason: str) -> list[dict[str, Any]]:
        items = self.env.kubectl_json("get", "events", "-n", "intentc-system")["items"]
        return [e for e in items if e.get("reason") == reason and e["involvedObject"]["name"].endswith(self.t)]


@contextlib.contextmanager
def running_daemon(case: Case, tmp_path: Path, *source: str) -> Iterator[Path]:
    """`intentc daemon` on the case's repository and target, planning onto its own nodes;
    `source`: `--branch main` or `--local`.  Yields its log file."""
    log = tmp_path / "daemon.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "intentc", "daemon", "--repo", str(case.dir), *source,
             "-t", "cluster.yaml", "--kubeconfig", str(case.env.kubeconfig), "--target", case.t,
             "--listen", "", "--interval", "1", "--resync", "3", "--no-leader-elect", "--only-topology-nodes",
             "--workdir", str(tmp_path / "work")], stdout=out, stderr=subprocess.STDOUT)
        try:
            yield log
        finally:
            proc.terminate()
            proc.wait(30)


def pinned_node(job: Mapping[str, Any]) -> str:
    return str(job["spec"]["template"]["spec"]["nodeSelector"][HOSTNAME])


def test_apply_binds_around_gpus_a_foreign_pod_holds(kube_cluster: KubeEnv, tmp_path: Path) -> None:
    case = Case(tmp_path, kube_cluster)
    preview = case.preview_node("first")
    pod = case.foreign_pod(preview, 4)
    code, out, output = invoke("apply", str(case.dir / "intents"), "-t", str(case.topology), "--kubeconfig",
                               str(kube_cluster.kubeconfig), "--commit", SHA, "--target", case.t, "--dry-run",
                               "--only-topology-nodes")
    assert code == 0 and f"first: preview {preview} GPU 0-7 -> live {case.other(preview)}" in out, output
    assert kube_cluster.kubectl_run("get", "jobs", "-n", case.tenant, "-o", "name").stdout == "", "a dry run"
    code, doc, output = case.apply("--no-wait")
    assert code == 0, output
    job = case.job("first")
    assert pinned_node(job) == case.other(preview), output          # not onto the 4 GPUs left beside the pod
    assert job["metadata"]["annotations"][PREVIEW_HASH_ANNOTATION]
    lines = "\n".join(doc["binding"])
    assert f"first: preview {preview} GPU 0-7 -> live {case.other(preview)} GPU 0-7" in lines, lines
    assert f"pod {pod}" in lines, lines
    assert case.events("LiveBinding"), "the difference is recorded as an Event on the target"
    # the same apply again: the binding holds, nothing is written
    code, doc, output = case.apply("--no-wait")
    assert code == 0 and doc["counts"] == {"unchanged": len(doc["objects"])}, output
    # whoever compares with the compiled preview (apply --binding preview, the daemon, drift) takes the
    # live-bound Job for the preview's: its pins are not put back (that would delete and re-run it)
    code, doc, output = case.apply("--no-wait", "--binding", "preview")
    assert code == 0 and not doc["binding"] and doc["counts"] == {"unchanged": len(doc["objects"])}, output
    code, out, output = invoke("drift", str(case.dir / "intents"), "-t", str(case.topology), "--kubeconfig",
                               str(kube_cluster.kubeconfig), "--commit", SHA, "--target", case.t, "-o", "json")
    findings = json.loads(out[out.find("{"):])["findings"]
    assert not [f for f in findings if f["object"]["kind"] == "Job"], findings


class CordonBeforeWave(LiveBinder):
    """The cluster changes after the preview and after wave 0 started: `node` is cordoned
    just before wave 1's `second` is bound (what an operator draining a node does meanwhile)."""

    def __init__(self, *args: Any, env: KubeEnv, node: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env, self.node, self.waves = env, node, []

    def bind(self, names: Sequence[str], live: Mapping[ObjectRef, Mapping[str, Any] | None],
             running: Sequence[str] = ()) -> Binding:
        wave = self.preview.wave_of(names[0])
        if wave == 1 and not self.waves.count(1):
            assert self.env.kubectl_json("get", "job", "-n", next(iter(live)).namespace, "first")
            self.env.kubectl_run("cordon", self.node)
        self.waves.append(wave)
        return super().bind(names, live, running)


def test_a_later_wave_is_rebound_when_its_node_is_cordoned_after_the_preview(kube_cluster: KubeEnv,
                                                                               tmp_path: Path) -> None:
    case = Case(tmp_path, kube_cluster)
    result = compile_paths([str(case.dir / "intents")], str(case.topology), SHA, KubeVersion(1, 37))
    assert result.plan is not None and result.rendered is not None and result.topology is not None
    assert result.plan.wave_of("first") == 0 and result.plan.wave_of("second") == 1
    previewed = result.plan.placement("second")
    assert previewed is not None
    node = previewed.nodes[0]
    client = KubeClient.connect(str(kube_cluster.kubeconfig))
    try:
        binder = CordonBeforeWave(result.program, result.topology, result.plan, result.rendered, KubeVersion(1, 37),
                                  lambda: read_cluster_state(client), cluster_nodes=False, env=kube_cluster,
                                  node=node)
        options = ApplyOptions(target=case.t, budgets=wave_budgets(result.program, result.plan), poll_interval=0.5)
        outcome = Reconciler(client, options, binder=binder).apply(result.rendered)
    finally:
        kube_cluster.kubectl_run("uncordon", node)
        client.close()
    assert outcome.result == "succeeded", outcome.to_text()
    assert binder.waves == [0, 1]
    assert pinned_node(case.job("second")) == case.other(node), outcome.to_text()
    text = "\n".join(outcome.binding)
    assert f"wave-1: live binding differs from the preview: second: preview {node} GPU 0-7 -> live " \
           f"{case.other(node)} GPU 0-7 ({node} unavailable (cordoned))" in text, text
    assert "first" not in text, "wave 0 ran where the preview said"
    assert any("cordoned" in e["message"] for e in case.events("LiveBinding"))


def test_a_wave_that_does_not_fit_waits_then_times_out_with_the_reason(kube_cluster: KubeEnv,
                                                                        tmp_path: Path) -> None:
    case = Case(tmp_path, kube_cluster)
    pods = [case.foreign_pod(n, 5, name=f"hog-{i}") for i, n in enumerate(case.nodes)]
    code, doc, output = case.apply("--timeout", "3")
    assert code == 1, output
    message = doc["message"]
    waited = re.search(r"timed out after (\w+) waiting for room for wave-0 .*its budget 3s", message)
    assert waited and (parse_duration(waited[1]) or 0) >= 3, f"it waited out its budget: {message}"
    assert "waiting for room for wave-0" in message and "first does not fit now" in message, message
    assert "Job" not in {o["kind"] for o in doc["objects"]}, "nothing forced onto busy GPUs"
    assert kube_cluster.kubectl_json("get", "jobs", "-n", case.tenant)["items"] == []
    waiting = case.events("WaveWaiting")
    assert waiting and "first does not fit now" in waiting[0]["message"]
    assert case.events("WaveTimedOut")

    # the room comes free while it waits: the wave goes ahead, bound where the room is
    def free_one() -> None:
        time.sleep(2)
        ns, name = pods[1].split("/")
        kube_cluster.kubectl_run("delete", "pod", "-n", ns, name, "--grace-period=0", "--force")
    helper = threading.Thread(target=free_one)
    helper.start()
    code, doc, output = case.apply("--timeout", "120")
    helper.join()
    assert code == 0, output
    assert pinned_node(case.job("first")) == case.nodes[1] == pinned_node(case.job("second"))


def test_the_daemon_binds_its_rollouts_on_live_state(kube_cluster: KubeEnv, tmp_path: Path) -> None:
    """The daemon's rollout of the branch re-plans each wave on the cluster like `apply --wait`:
    a foreign pod on the preview's node sends `first` to the other node, and drift then takes
    the moved Job for the preview's (no heal puts the pins back)."""
    case = Case(tmp_path, kube_cluster)
    preview = case.preview_node("first")
    case.foreign_pod(preview, 4)
    repo = git.Repo.init(case.dir, initial_branch="main")
    commit(repo, {"intents/main.intent": (case.dir / "intents" / "main.intent").read_text(),
                  "cluster.yaml": case.topology.read_text()}, "intents")
    with running_daemon(case, tmp_path, "--branch", "main") as log:
        wait_for(lambda: case.has_job("first"), 120, "the daemon creates first")
        job = case.job("first")
        assert pinned_node(job) == case.other(preview), log.read_text()
        assert job["metadata"]["annotations"][PREVIEW_HASH_ANNOTATION]
        wait_for(lambda: any(case.events("LiveBinding")), 60, "a LiveBinding Event")
        time.sleep(8)       # two resyncs: drift must not heal the pins back to the preview
        assert pinned_node(case.job("first")) == case.other(preview), log.read_text()
        assert "healed" not in log.read_text(), log.read_text()


def test_a_live_plan_uses_gpu_nodes_the_topology_file_does_not_list(kube_cluster: KubeEnv, tmp_path: Path) -> None:
    """The topology file lists one of the case's two nodes and a foreign pod holds half of
    it: `plan --kubeconfig` places the 8-GPU job on a node it learned from the cluster's
    GPU feature discovery labels, and says so; `--only-topology-nodes` queues it instead."""
    case = Case(tmp_path, kube_cluster)
    listed = case.dir / "one-node.yaml"
    text = case.topology.read_text()
    listed.write_text(text[:text.index(f"    - name: {case.t}-n2")])
    case.foreign_pod(f"{case.t}-n1", 4)
    code, out, output = invoke("plan", str(case.dir / "intents"), "-t", str(listed), "--kubeconfig",
                               str(kube_cluster.kubeconfig), "-o", "json")
    assert code == 0, output
    plan = json.loads(out)
    first = next(p for p in plan["placements"] if p["intent"] == "first")
    node = first["allocations"][0]["node"]
    assert node != f"{case.t}-n1", first
    notes = "\n".join(plan["basis"]["notes"])
    assert f"{node}: added from the cluster's labels (8 × H100-80GB" in notes, notes
    code, out, output = invoke("plan", str(case.dir / "intents"), "-t", str(listed), "--kubeconfig",
                               str(kube_cluster.kubeconfig), "-o", "json", "--only-topology-nodes")
    # the one listed node has 4 GPUs held for as long as anyone knows: 8 never fit there
    assert code == 1 and "E0601" in output, output
    assert "added from the cluster's labels" not in "\n".join(json.loads(out)["basis"]["notes"])
