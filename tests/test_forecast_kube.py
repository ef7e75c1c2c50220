"""The live forecast against a real control plane (issue 40, item 3): `intentc status`, the Intent columns.

kwok holds every Job pod Running for *twice* its intent's declared
`duration` (tests/kwok_stages.py at two real hours per plan hour), so every
job overruns: the forecast must call that schedule drift and push what waits
for it.  Every assertion compares what `intentc status` (or the daemon's
forecast pass) said with what the API server recorded — Jobs' creation,
start and completion, pods' phases — never with wall-clock thresholds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import pytest

from intentc.pipeline import compile_paths
from intentc.render.capabilities import KubeVersion
from intentc.render.fallback import FALLBACK_OF
from tests.conftest import _control_plane
from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir
from tests.kube_nodes import add_topology
from tests.kube_support import finished_at, invoke, recorded_jobs, wait_for
from tests.kwok_stages import planned_duration_stages

pytestmark = pytest.mark.kube

SHA = "f" * 40
MS_PER_HOUR = 2 * 3_600_000          # a pod runs twice its declared duration
ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def late_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    stages = planned_duration_stages(assets, tmp_path_factory.mktemp("kwok"), MS_PER_HOUR)
    yield from _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok"), (stages,))


def intent(name: str, tenant: str, seconds: int, trigger: str = "on push") -> str:
    # slack 3: the Job's deadline (4 x duration) outlives the doubled run
    return (f"intent {name} {{\n  trigger: {trigger}\n  action: batch image \"registry.example/{name}:1\"\n"
            f"  context: tenant {tenant}\n"
            f"  constraints: cpu 1, memory 1Gi, gpus 8 x \"H100-80GB\" within node, duration {seconds}s, "
            f"slack 3\n}}\n")


@pytest.fixture(scope="module")
def kueue_timed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """Kueue on the test bed, pods held Running exactly their declared duration."""
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    stages = planned_duration_stages(assets, tmp_path_factory.mktemp("kwok"), 3_600_000)
    yield from _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok", "kueue"), (stages,))


class Case:
    def __init__(self, tmp: Path, env: KubeEnv, name: str, intents: str, nodes: int = 2) -> None:
        self.env = env
        self.t = f"{name}-{int(time.time()) % 100000}"
        self.tenant = f"{self.t}-a"
        self.dir = tmp / self.t
        (self.dir / "intents").mkdir(parents=True)
        (self.dir / "intents" / "main.intent").write_text(
            f"tenant {self.tenant} {{ tier: gold }}\n\n" + intents.replace("{tenant}", self.tenant))
        self.topology = self.dir / "cluster.yaml"
        self.topology.write_text(
            f"apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {{name: {self.t}}}\nspec:\n"
            "  levels: [zone, rack, nvlink, node]\n  nodes:\n"
            + "".join(f"    - name: {self.t}-n{i}\n      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}\n"
                      f"      cpu: \"192\"\n      memory: 2Ti\n"
                      f"      domains: {{zone: z1, rack: r1, nvlink: {self.t}-n{i}}}\n"
                      for i in range(1, nodes + 1)))
        add_topology(env, str(self.topology))

    def cli(self, command: str) -> list[str]:
        return [command, str(self.dir / "intents"), "-t", str(self.topology), "--kubeconfig", str(self.env.kubeconfig),
                "--only-topology-nodes"]

    def apply_in_background(self) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "intentc", *self.cli("apply"), "--commit", SHA,
                                 "--target", self.t], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)

    def status(self, *flags: str) -> tuple[int, dict[str, Any]]:
        code, out, output = invoke(*self.cli("status"), "-o", "json", *flags)
        assert code in (0, 1), output
        doc = json.loads(out)
        return code, doc

    def jobs(self) -> dict[str, dict[str, Any]]:
        """Each intent's Job (not the suspended steps of its fallback chain)."""
        return {j["metadata"]["labels"]["intentc.dev/intent"]: j for j in recorded_jobs(self.env, self.tenant)
                if FALLBACK_OF not in (j["metadata"].get("annotations") or {})}

    def pod_phases(self, intent: str) -> set[str]:
        pods = self.env.kubectl_json("get", "pods", "-n", self.tenant, "-l", f"intentc.dev/intent={intent}")["items"]
        return {p["status"].get("phase") for p in pods}


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in doc["intents"]}


def test_status_follows_the_cluster_and_a_late_job_pushes_its_dependant(late_cluster: KubeEnv,
                                                                        tmp_path: Path) -> None:
    """root (10 s declared, runs 20 s) -> dep.  While root runs past its declared end, `status`
    says Running with schedule drift, and dep — not created yet — is expected to start when
    root is now expected to end, behind plan by as much as root.  Afterwards every start and end
    `status` shows is the Job's own, and dep really started only after root completed."""
    case = Case(tmp_path, late_cluster, "fc", intent("root", "{tenant}", 10)
                + intent("dep", "{tenant}", 10, "after root"))
    apply = case.apply_in_background()
    try:
        def drifting() -> tuple[int, dict[str, Any]] | None:
            assert apply.poll() is None, "apply ended before root overran"
            code, doc = case.status()
            root = by_name(doc)["root"]
            return (code, doc) if root["drift"] else None
        code, doc = wait_for(drifting, 120, "status to report root's schedule drift", interval=1.0)
        jobs = case.jobs()                                  # read right after status: still running
        seen = by_name(doc)
        root, dep = seen["root"], seen["dep"]
        assert code == 0
        assert root["phase"] == "Running" and "schedule drift" in root["reason"] and root["pushes"] == ["dep"]
        assert "completionTime" not in jobs["root"]["status"] and "Running" in case.pod_phases("root")
        assert doc["epoch"] == jobs["root"]["metadata"]["creationTimestamp"]
        assert root["actualStart"] == jobs["root"]["status"]["startTime"]
        assert root["behindSeconds"] > 0 and root["eta"] == doc["now"]     # past its end: it may end now
        assert "dep" not in jobs and dep["phase"] == "Queued"
        assert dep["delayedBy"] == ["root"] and dep["etaStart"] == root["eta"]
        assert dep["behindSeconds"] == root["behindSeconds"]
        assert at(dep["etaStart"]) > at(dep["plannedStart"])
        out, _ = apply.communicate(timeout=300)
        assert apply.returncode == 0, out
    finally:
        if apply.poll() is None:
            apply.kill()
            apply.communicate()

    jobs = case.jobs()                  # the Job controller has recorded what apply saw end
    code, doc = case.status()
    done = by_name(doc)
    assert code == 0
    for name in ("root", "dep"):
        status = jobs[name]["status"]
        assert done[name]["phase"] == "Succeeded", done[name]
        assert (done[name]["actualStart"], done[name]["actualEnd"]) == (status["startTime"], status["completionTime"])
        assert done[name]["eta"] == status["completionTime"]
    # what the cluster did bears the forecast out: dep started after root's late end (its pod's),
    # as late behind its plan as the forecast said at the moment above, or later (root ran on after it)
    assert at(jobs["dep"]["status"]["startTime"]) >= finished_at(case.env, case.tenant, "intentc.dev/intent=root")
    assert at(jobs["dep"]["status"]["startTime"]) - at(dep["plannedStart"]) >= dep["behindSeconds"]
    code, table, _ = invoke(*case.cli("status"))
    lines = table.splitlines()
    assert lines[1].split()[:9] == ["NAME", "TENANT", "PHASE", "PLANNED", "START", "START", "ETA", "BEHIND", "REASON"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["root"][2] == rows["dep"][2] == "Succeeded"


def test_the_daemon_writes_the_forecast_into_the_intent_objects_and_kubectl_shows_it(late_cluster: KubeEnv,
                                                                                     tmp_path: Path) -> None:
    """After apply, the daemon's forecast pass (the mirror with its forecaster, on the real API
    server) writes each Intent's status: `kubectl get intents -A` shows PHASE, START, ETA and
    BEHIND, with the Job's own start and completion, and the gauges carry the same ETA."""
    from intentc.daemon.forecast_pass import ForecastPass
    from intentc.daemon.metrics import DaemonMetrics
    from intentc.daemon.mirror import IntentMirror
    from intentc.daemon.source import from_compile
    from intentc.kube.client import KubeClient

    case = Case(tmp_path, late_cluster, "fm", intent("solo", "{tenant}", 5))
    code, out, output = invoke(*case.cli("apply"), "--commit", SHA, "--target", case.t)
    assert code == 0, output
    job = case.jobs()["solo"]["status"]     # the Job controller has recorded what apply saw end
    result = compile_paths([str(case.dir / "intents")], str(case.topology), SHA, KubeVersion(1, 37))
    desired = from_compile(result, "git")
    assert desired is not None and desired.preview is not None
    metrics = DaemonMetrics()
    client = KubeClient.connect(str(late_cluster.kubeconfig))
    try:
        mirror = IntentMirror(client, case.t, forecaster=ForecastPass(client, metrics, 0.0,
                                                                      only_topology_nodes=True))
        mirror.sync(desired, {})            # applies the Intent object (its status is written next pass)
        mirror.sync(desired, {})
    finally:
        client.close()
    obj = late_cluster.kubectl_json("get", "intent", "solo", "-n", case.tenant)
    forecast = obj["status"]["forecast"]
    assert forecast["phase"] == "Succeeded"
    assert (forecast["actualStart"], forecast["eta"]) == (job["startTime"], job["completionTime"])
    table = late_cluster.kubectl_run("get", "intents", "-A").stdout.splitlines()
    assert table[0].split() == ["NAMESPACE", "NAME", "TENANT", "ACTION", "PHASE", "START", "ETA", "BEHIND", "AGE"]
    row = next(line.split() for line in table[1:] if line.split()[:2] == [case.tenant, "solo"])
    assert row[4:8] == ["Succeeded", job["startTime"], job["completionTime"], forecast["behind"]]
    assert forecast["behindSeconds"] > 0         # it ran twice its declared duration
    exposition = metrics.exposition().decode()
    line = next(x for x in exposition.splitlines()
                if x.startswith("intentc_intent_eta_timestamp_seconds{") and 'intent="solo"' in x)
    assert float(line.rsplit(" ", 1)[1]) == at(job["completionTime"])


def test_a_cordoned_planned_node_moves_the_intent_and_its_eta(late_cluster: KubeEnv, tmp_path: Path) -> None:
    """Nothing applied yet: the plan runs a and b side by side, one per node.  Cordon b's node
    on the API server and `status` re-places b onto a's node, after a: its ETA moves by a's
    duration and the reason names the cordon.  Uncordoned, the plan holds again."""
    case = Case(tmp_path, late_cluster, "fn", intent("a", "{tenant}", 10) + intent("b", "{tenant}", 10))
    _, before = case.status()
    a, b = by_name(before)["a"], by_name(before)["b"]
    assert a["plannedStart"] == b["plannedStart"] == before["epoch"] and a["plannedNodes"] != b["plannedNodes"]
    assert b["nodes"] == b["plannedNodes"] and b["behindSeconds"] == 0
    [node] = b["plannedNodes"]
    late_cluster.kubectl_run("cordon", node)
    try:
        assert late_cluster.kubectl_json("get", "node", node)["spec"].get("unschedulable") is True
        _, after = case.status()
        moved = by_name(after)["b"]
        assert moved["phase"] == "Queued" and moved["nodes"] == a["plannedNodes"]
        assert moved["reason"] == f"re-placed: {node} cordoned"
        assert moved["etaStart"] == by_name(after)["a"]["eta"]          # after a, on a's node
        assert moved["behindSeconds"] == at(moved["etaStart"]) - at(after["now"])
    finally:
        late_cluster.kubectl_run("uncordon", node)
    _, again = case.status()
    assert by_name(again)["b"]["nodes"] == b["plannedNodes"] and by_name(again)["b"]["reason"] == ""


def test_under_kueue_a_job_it_holds_is_queued_and_expected_after_the_one_it_admitted(kueue_timed: KubeEnv,
                                                                                    tmp_path: Path) -> None:
    """One 8-GPU node, two 8-GPU intents created at once (`--no-wait`) for Kueue: it admits one
    and holds the other suspended.  `status` says Running and Queued as the Workloads and Jobs
    say, expects the held one when the admitted one ends, and the cluster then starts it no
    earlier than that end."""
    case = Case(tmp_path, kueue_timed, "fk", intent("x", "{tenant}", 10) + intent("y", "{tenant}", 10), nodes=1)
    code, out, output = invoke(*case.cli("apply"), "--commit", SHA, "--target", case.t, "--render-target", "kueue",
                               "--no-wait")
    assert code == 0, output

    def one_running() -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
        _, doc = case.status()
        phases = sorted(i["phase"] for i in doc["intents"])
        return (doc, case.jobs()) if phases == ["Queued", "Running"] else None
    doc, jobs = wait_for(one_running, 120, "one intent Running and the other Queued", interval=1.0)
    seen = by_name(doc)
    running = next(n for n, i in seen.items() if i["phase"] == "Running")
    held = next(n for n, i in seen.items() if i["phase"] == "Queued")
    workloads = kueue_timed.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", case.tenant)["items"]
    admitted = {o["name"]: any(c["type"] == "Admitted" and c["status"] == "True"
                               for c in w.get("status", {}).get("conditions", []))
                for w in workloads for o in w["metadata"].get("ownerReferences", []) if o["kind"] == "Job"}
    assert admitted[jobs[running]["metadata"]["name"]] and not admitted[jobs[held]["metadata"]["name"]]
    assert jobs[held]["spec"]["suspend"] is True and "startTime" not in jobs[held]["status"]
    assert seen[running]["actualStart"] == jobs[running]["status"]["startTime"]
    assert seen[held]["etaStart"] == seen[running]["eta"]          # on the one node, after the admitted one

    def both_done() -> dict[str, dict[str, Any]] | None:
        got = case.jobs()
        return got if all(j["status"].get("completionTime") for j in got.values()) and len(got) == 2 else None
    jobs = wait_for(both_done, 120, "both Jobs complete", interval=1.0)
    assert at(jobs[held]["status"]["startTime"]) >= at(jobs[running]["status"]["completionTime"])
    assert at(jobs[held]["status"]["startTime"]) >= at(seen[held]["etaStart"])
    _, doc = case.status()
    assert {i["phase"] for i in doc["intents"]} == {"Succeeded"}
