"""The drift daemon against a real kube-apiserver + etcd, following a real git repository.

There is no controller-manager: where a rollout needs a Job to finish (or
fail) or a Deployment to become available, the test writes `.status`
through the status subresource, as the controller would.  Waits are
event-driven with generous deadlines (the machine may be busy); nothing
asserts on how long anything took.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from intentc.daemon.loop import Daemon, DaemonConfig
from intentc.drift.quarantine import QUARANTINE_KEY, Quarantine
from intentc.kube.client import KubeClient
from intentc.objectmeta import ObjectRef
from intentc.reconcile.inventory import Inventory, inventory_ref
from intentc.render.model import COMMIT_ANNOTATION
from tests.kube_env import KubeEnv, finished_job_status, free_port
from tests.kube_support import sigterm
from tests.test_drift_kube import DriftRepo, edit_as

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parent.parent


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def commit_of(body: dict[str, Any] | None) -> str | None:
    return ((body or {}).get("metadata", {}).get("annotations") or {}).get(COMMIT_ANNOTATION)


def job_done(c: KubeClient, ref: ObjectRef, failed: bool = False) -> None:
    c.patch_status(ref, finished_job_status(c.get(ref), failed=failed, message="all pods failed"))


def deployment_available(c: KubeClient, ref: ObjectRef) -> None:
    live = c.get(ref)
    assert live is not None
    gen = live["metadata"].get("generation", 1)
    c.patch_status(ref, {"observedGeneration": gen, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                         "availableReplicas": 2})


def inventory(c: KubeClient, target: str) -> Inventory:
    return Inventory.from_configmap(c.get(inventory_ref(target)), target)


def quarantined(c: KubeClient, target: str) -> Quarantine:
    return Quarantine.from_configmap(c.get(inventory_ref(target)))


def metrics(daemon: Daemon) -> str:
    assert daemon.http is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{daemon.http.port}/metrics", timeout=10) as resp:
        return resp.read().decode()


def sample(text: str, name: str, **labels: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


class Running:
    """`Daemon` on `repo`'s target, on a thread of its own, following the branch of `source`
    (the repository's folder unless given: a remote's URL), its work directory `tmp/<work>`."""

    def __init__(self, repo: DriftRepo, tmp: Path, source: str | None = None, work: str = "work",
                 **overrides: Any) -> None:
        config = DaemonConfig(repo=source or str(repo.dir), branch="main", paths=("intents",),
                              topology="clusters/small.yaml", interval=0.5, resync=5.0, listen="127.0.0.1:0",
                              target=repo.target, workdir=str(tmp / work), rollout_timeout=180.0, watch_timeout=20,
                              **overrides)
        self.client = repo.client()
        self.daemon = Daemon(config, self.client)
        self.code: list[int] = []
        self.thread = threading.Thread(target=lambda: self.code.append(self.daemon.run()), daemon=True)
        self.thread.start()

    def stop(self) -> int:
        self.daemon.stop()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "daemon did not stop"
        return self.code[0]


@pytest.fixture
def running(request: pytest.FixtureRequest, tmp_path: Path, kube_env: KubeEnv) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(repo: DriftRepo, **overrides: Any) -> Running:
        r = Running(repo, tmp_path, **overrides)
        started.append(r)
        return r
    yield start
    for r in started:
        if r.thread.is_alive():
            r.stop()


def settle(c: KubeClient, repo: DriftRepo, sha: str) -> None:
    """Play the controller-manager for one rollout: finish the Job, make the Deployment available."""
    job, web = repo.ref("Job", "prep"), repo.ref("Deployment", "web")
    wait_for(f"Job of {sha[:8]}", lambda: commit_of(c.get(job)) == sha)
    job_done(c, job)
    wait_for(f"Deployment of {sha[:8]}", lambda: c.get(web))
    deployment_available(c, web)


def test_failed_rollout_is_rolled_back_and_the_bad_commit_is_not_reapplied(
        kube_env: KubeEnv, tmp_path: Path, running: Callable[..., Running], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="report", prep_policy="rollback")
    good = repo.head
    r = running(repo)
    c = r.client
    job = repo.ref("Job", "prep")
    settle(c, repo, good)
    wait_for("last known-good = first commit", lambda: inventory(c, repo.target).last_known_good == good)
    # the inventory is written before the apply returns (and releases its Lease); the metric after
    wait_for("the metric names the first commit",
             lambda: sample(metrics(r.daemon), "intentc_last_applied_commit_info", commit=good) == 1.0)

    bad = repo.commit("broken prep image", prep_image="busybox:2.0-broken")
    wait_for("the bad commit's Job", lambda: commit_of(c.get(job)) == bad)
    # applied, health not yet known: /readyz must not vouch for it (issue 14: it said "ok" for ~20 s)
    ready, why, said = r.daemon.ready()
    assert not ready and said == "rollout of the head commit not verified yet" and bad[:12] in why
    job_done(c, job, failed=True)

    # the daemon rolls back: the Job of the good commit comes back (replaced: the template is immutable)
    wait_for("the good commit's Job again", lambda: commit_of(c.get(job)) == good)
    job_done(c, job)
    wait_for("quarantine of the bad commit", lambda: bad in quarantined(c, repo.target))
    entry = quarantined(c, repo.target).get(bad)
    assert entry is not None and entry.rolled_back_to == good
    assert "not consistent" in entry.reason and "prep" in entry.reason
    wait_for("rollback recorded in metrics", lambda: sample(metrics(r.daemon), "intentc_rollbacks_total") == 1.0)
    wait_for("ready again, on the good commit", lambda: r.daemon.ready()[:2] == (True, f"ok: commit {good[:12]}"))
    # a daemon starting now says how many commits are held back before its first cycle
    fresh = Daemon(replace(r.daemon.config, listen=None, leader_elect=True), c)
    fresh._startup_gauges()
    text = fresh.metrics.exposition().decode()
    assert sample(text, "intentc_quarantined_commits") == 1.0 and sample(text, "intentc_leader") == 0.0
    events = c.events(inventory_ref(repo.target))
    assert any(e["reason"] == "RolledBack" and bad[:12] in e["message"] for e in events)
    assert any(e["reason"] == "RolledBack" for e in c.events(job))
    assert any("quarantined" in rec.getMessage() and bad[:12] in rec.getMessage() for rec in caplog.records)
    # the inventory keeps the reconciler's own record next to the quarantine
    inv = inventory(c, repo.target)
    assert inv.last_known_good == good
    assert QUARANTINE_KEY in c.get(inventory_ref(repo.target))["data"]

    # the branch still points at the bad commit: several polls later it has not been applied again
    polls = r.daemon.polls
    wait_for("three more git polls", lambda: r.daemon.polls >= polls + 3)
    assert commit_of(c.get(job)) == good
    assert r.daemon.rollouts.count(("rollout", bad)) == 1

    # a newer commit clears the quarantine and is rolled out
    fixed = repo.commit("fixed prep image", prep_image="busybox:3.0")
    settle(c, repo, fixed)
    wait_for("inventory at the fixed commit", lambda: inventory(c, repo.target).commit == fixed)
    wait_for("quarantine cleared", lambda: bad not in quarantined(c, repo.target))
    assert r.stop() == 0


def test_daemon_heals_and_survives_an_api_server_restart(
        kube_env: KubeEnv, tmp_path: Path, running: Callable[..., Running]) -> None:
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="heal")
    r = running(repo)
    c = r.client
    web = repo.ref("Deployment", "web")
    settle(c, repo, repo.head)
    wait_for("the rollout recorded", lambda: inventory(c, repo.target).commit == repo.head)
    wait_for("daemon ready", lambda: r.daemon.ready()[0])
    wait_for("the rollout finished", lambda: not r.daemon.state.busy)

    edit_as(c, web, {"spec": {"replicas": 4}}, "kubectl-edit")
    wait_for("heal of the edited Deployment", lambda: c.get(web)["spec"]["replicas"] == 2)
    text = metrics(r.daemon)
    assert (sample(text, "intentc_heals_total", drift_class="modified") or 0) >= 1

    kube_env.stop_apiserver()
    try:
        wait_for("daemon notices the API server is gone", lambda: not r.daemon.ready()[0])
        assert r.daemon.live()[0]
    finally:
        kube_env.start_apiserver()
    wait_for("daemon ready again", lambda: r.daemon.ready()[0], timeout=180)
    assert (sample(metrics(r.daemon), "intentc_watch_restarts_total", reason="error") or 0) >= 1

    edit_as(c, web, {"spec": {"replicas": 7}}, "kubectl-edit")
    wait_for("heal after the restart", lambda: c.get(web)["spec"]["replicas"] == 2, timeout=180)
    # a field only the other manager sets is recorded, not fought over
    edit_as(c, web, {"metadata": {"annotations": {"team/owner": "alice"}}}, "kubectl-annotate")
    passes = r.daemon.passes
    wait_for("a detection pass after the annotation", lambda: r.daemon.passes > passes)
    assert c.get(web)["metadata"]["annotations"]["team/owner"] == "alice"
    assert sample(metrics(r.daemon), "intentc_drift_objects", drift_class="modified") == 0.0
    assert r.stop() == 0


def test_local_mode_hot_reloads_and_applies_a_saved_change(
        kube_env: KubeEnv, tmp_path: Path, running: Callable[..., Running]) -> None:
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="heal")
    r = running(repo, local=True, commit=repo.head)
    c = r.client
    web = repo.ref("Deployment", "web")
    settle(c, repo, repo.head)
    wait_for("the first rollout finished", lambda: inventory(c, repo.target).commit == repo.head
             and not r.daemon.state.busy)

    def image() -> str:
        return str(c.get(web)["spec"]["template"]["spec"]["containers"][0]["image"])

    def shows(want: str) -> Callable[[], bool]:
        return lambda: image() == want
    assert image() == "nginx:1.0"
    for n in range(1, 100):         # the OS watcher arms asynchronously: save until the daemon reacts
        repo.write(web_image=f"nginx:1.{n}")
        try:
            wait_for("the saved image on the cluster", shows(f"nginx:1.{n}"), timeout=3)
            break
        except AssertionError:
            continue
    assert image().startswith("nginx:1.") and image() != "nginx:1.0"
    # a broken save keeps the plan in force: nothing is applied
    before = c.get(web)["metadata"]["resourceVersion"]
    (repo.dir / "intents" / "team.intent").write_text("tenant {")
    passes = r.daemon.passes
    wait_for("a detection pass", lambda: r.daemon.passes > passes, timeout=30)
    assert c.get(web)["metadata"]["resourceVersion"] == before
    assert r.stop() == 0


def test_daemon_endpoints_and_clean_sigterm(kube_env: KubeEnv, tmp_path: Path) -> None:
    """The real command line in a subprocess: probes, metrics, and exit 0 on SIGTERM."""
    repo = DriftRepo(tmp_path, kube_env)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo.dir), "--branch", "main",
         "-t", "clusters/small.yaml", "--kubeconfig", str(kube_env.kubeconfig), "--target", repo.target,
         "--listen", f"127.0.0.1:{port}", "--no-metrics-secure", "--interval", "1", "--workdir", str(tmp_path / "work"),
         "--rollout-timeout", "2", "--log-format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        wait_for("/healthz", lambda: get("/healthz")[0] == 200)
        wait_for("/readyz", lambda: get("/readyz")[0] == 200, timeout=180)
        status, text = get("/metrics")
        assert status == 200
        for name in ("intentc_drift_objects", "intentc_reconcile_duration_seconds_bucket",
                     "intentc_last_applied_commit_info", "intentc_rollbacks_total"):
            assert name in text, name
        assert get("/nope")[0] == 404
    finally:
        code, out = sigterm(proc)
    assert code == 0, out
    records = [json.loads(line) for line in out.splitlines() if line.strip()]   # --log-format json: every line
    messages = [r["msg"] for r in records if r["logger"] == "intentc.daemon"]
    assert any("shutting down" in m for m in messages) and "stopped" in messages
    assert {r["level"] for r in records} <= {"debug", "info", "warning", "error", "critical"}


DEPLOY = ROOT / "examples" / "deploy"


def test_deploy_manifests_apply_and_their_role_is_enough(kube_env: KubeEnv, tmp_path: Path) -> None:
    """examples/deploy/ is accepted by the API server, and a token of its ServiceAccount
    can do everything the daemon does (apply, list/watch, drift, heal, quarantine, Events)
    and no more than that (no Secret reads, no ConfigMaps outside intentc-system)."""
    import yaml

    from intentc.drift import quarantine
    from intentc.drift.detect import DriftClass
    from intentc.drift.managed import heal, observe
    from intentc.kube import events
    from intentc.kube.errors import AccessDenied
    from intentc.kube.watch import Watch, list_objects
    from intentc.reconcile.sync import ApplyOptions, Reconciler

    admin = KubeClient.connect(str(kube_env.kubeconfig))
    files = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    docs = [d for f in files for d in yaml.safe_load_all((DEPLOY / f).read_text()) if d]
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"} <= {d["kind"] for d in docs}
    for d in docs:
        admin.apply(d, dry_run=d["kind"] in ("Deployment", "Service"), field_manager="deploy-test")
    token = admin.request("POST", "/api/v1/namespaces/intentc-system/serviceaccounts/intentc/token", (),
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": 3600}}, "application/json")["status"]["token"]
    kubeconfig = tmp_path / "sa-kubeconfig"
    kubeconfig.write_text(kube_env.kubeconfig_text().replace(kube_env.token, token))
    sa = KubeClient.connect(str(kubeconfig))

    repo = DriftRepo(tmp_path, kube_env, tenant_policy="heal")
    repo.commit("tenant with a group, a quota and an SLA class",
                tenant_extra='\n  group: "devs"\n  quota: gpus 4, cpu 8, memory 16Gi', prep_sla=", sla P1")
    result = repo.compiled()
    assert result.rendered is not None
    assert {m.ref.kind for m in result.rendered.manifests} >= {"RoleBinding", "ResourceQuota", "PriorityClass"}
    applied = Reconciler(sa, ApplyOptions(target=repo.target, wait=False)).apply(result.rendered)
    assert applied.result == "succeeded", applied.to_text()

    web = repo.ref("Deployment", "web")
    edit_as(admin, web, {"spec": {"replicas": 3}}, "kubectl-edit")
    report, _ = observe(sa, result.rendered.manifests, repo.target, repo.history)
    assert [f.drift for f in report.drifted if f.ref.namespace == repo.tenant] == [DriftClass.MODIFIED]
    assert heal(sa, next(m for m in result.rendered.manifests if m.ref == web)).ok
    quarantine.write(sa, repo.target, quarantine.Quarantine().add(
        quarantine.Entry("f" * 40, "test", "2024-01-01T00:00:00Z")))
    assert "f" * 40 in quarantine.read(sa, repo.target)
    assert events.emit(sa, web, "DriftHealed", "rbac test", "Normal")
    _, rv = list_objects(sa, "batch/v1", "Job", "", "app.kubernetes.io/managed-by=intentc")
    w = Watch(sa, "batch/v1", "Job", rv, timeout_seconds=1)
    assert [e for e in w if e.type == "ERROR"] == []

    # leader election: create, renew (update against resourceVersion), release, and its Event
    from intentc.daemon.election import Elector, election_ref
    from intentc.daemon.leader import Timing
    elector = Elector(sa, repo.target, Timing())
    elector.tick()
    elector.tick()
    assert elector.leading()
    elector.stop()
    lease = admin.get(election_ref(repo.target))
    assert lease is not None and not lease["spec"].get("holderIdentity")
    assert any(e["reason"] == "LeaderElection" for e in admin.events(election_ref(repo.target)))
    with pytest.raises(AccessDenied):
        sa.get(ObjectRef("v1", "Secret", "default", "anything"))
    with pytest.raises(AccessDenied):
        sa.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}})
