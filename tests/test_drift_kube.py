"""Drift detection and healing against a real kube-apiserver + etcd (tests/kube_env.py).

Each test gets its own git repository with a uniquely named tenant (so its
own namespace) and its own inventory target.  "Another field manager" is
simulated the way `kubectl edit` / `kubectl apply --server-side` behave:
a PATCH with a different `fieldManager`.
"""

from __future__ import annotations

import itertools
import json
import secrets
from pathlib import Path
from typing import Any, Iterator

import git
import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.drift.detect import DriftClass, Finding, History, Report
from intentc.drift.managed import heal, observe
from intentc.drift.policy import Policies, Verb, decide
from intentc.kube.client import MERGE_PATCH, KubeClient
from intentc.objectmeta import ObjectRef
from intentc.pipeline import CompileResult, compile_paths
from intentc.reconcile.result import ApplyResult
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.render.capabilities import KubeVersion
from intentc.render.model import COMMIT_ANNOTATION, Manifest
from tests.kube_env import KubeEnv, finished_job_status

pytestmark = pytest.mark.kube
runner = CliRunner()
_ids = itertools.count(1)

TOPOLOGY = Path(__file__).parent / "fixtures" / "repo" / "clusters" / "small.yaml"

INTENTS = """\
tenant {tenant} {{
  tier: gold
  drift: {tenant_policy}{tenant_extra}
}}

intent prep {{
  trigger: on push
  action: batch image "{prep_image}" command ["true"]
  context: tenant {tenant}{prep_policy}
  constraints: cpu 1, memory 1Gi{prep_sla}
}}

intent web {{
  trigger: after prep
  action: serve image "{web_image}" replicas 2 port 8080
  context: tenant {tenant}{web_policy}
  constraints: cpu 1, memory 1Gi
}}
"""


class DriftRepo:
    """A git repository (branch `main`) with one tenant, a Job and a Deployment."""

    def __init__(self, tmp: Path, env: KubeEnv, tenant_policy: str = "report", prep_policy: str | None = None,
                 web_policy: str | None = None) -> None:
        n = next(_ids)
        self.env = env
        # random parts: this module is also imported by other test modules (a second counter)
        self.tenant = f"dr{n}-{secrets.token_hex(3)}"
        self.target = self.tenant
        self.dir = tmp / "repo"
        (self.dir / "intents").mkdir(parents=True)
        (self.dir / "clusters").mkdir()
        (self.dir / "clusters" / "small.yaml").write_text(TOPOLOGY.read_text())
        self.settings = {"tenant": self.tenant, "tenant_policy": tenant_policy,
                         "prep_policy": f", drift {prep_policy}" if prep_policy else "",
                         "web_policy": f", drift {web_policy}" if web_policy else "",
                         "prep_image": "busybox:1.0", "web_image": "nginx:1.0", "tenant_extra": "", "prep_sla": ""}
        self.repo = git.Repo.init(self.dir, initial_branch="main")
        with self.repo.config_writer() as cw:
            cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")
        self.write()
        self.commit("initial intents")

    def write(self, **changes: str) -> None:
        self.settings.update(changes)
        (self.dir / "intents" / "team.intent").write_text(INTENTS.format(**self.settings))

    def commit(self, message: str, **changes: str) -> str:
        if changes:
            self.write(**changes)
        self.repo.git.add(A=True)
        return str(self.repo.index.commit(message).hexsha)

    @property
    def head(self) -> str:
        return str(self.repo.head.commit.hexsha)

    @property
    def history(self) -> History:
        return History(tuple(c.hexsha for c in self.repo.iter_commits("main")))

    def client(self) -> KubeClient:
        return KubeClient.connect(str(self.env.kubeconfig))

    def compiled(self, sha: str | None = None) -> CompileResult:
        result = compile_paths([str(self.dir / "intents")], str(self.dir / "clusters" / "small.yaml"),
                               sha or self.head, KubeVersion(1, 37))
        assert result.ok and result.rendered is not None, [str(d.message) for d in result.diagnostics]
        return result

    def apply(self, result: CompileResult | None = None) -> ApplyResult:
        result = result or self.compiled()
        assert result.rendered is not None
        applied = Reconciler(self.client(), ApplyOptions(target=self.target, wait=False)).apply(result.rendered)
        assert applied.result == "succeeded", applied.to_text()
        return applied

    def manifests(self, result: CompileResult | None = None) -> tuple[Manifest, ...]:
        result = result or self.compiled()
        assert result.rendered is not None
        return result.rendered.manifests

    def observe(self, result: CompileResult | None = None) -> Report:
        report, _ = observe(self.client(), self.manifests(result), self.target, self.history)
        return report

    def ref(self, kind: str, name: str) -> ObjectRef:
        api = {"Job": "batch/v1", "Deployment": "apps/v1", "Service": "v1", "Namespace": "v1"}[kind]
        return ObjectRef(api, kind, "" if kind == "Namespace" else self.tenant, name)


def edit_as(client: KubeClient, ref: ObjectRef, patch: dict[str, Any], manager: str) -> dict[str, Any]:
    """An Update (merge patch) by another field manager — what `kubectl edit` sends."""
    path = client.resource(ref.api_version, ref.kind).path(ref.namespace, ref.name)
    return dict(client.request("PATCH", path, [("fieldManager", manager)], patch, MERGE_PATCH))


def mine(report: Report, namespace: str) -> list[Finding]:
    return [f for f in report.drifted if f.ref.namespace == namespace]


def drifted(report: Report, namespace: str) -> dict[tuple[str, str], str]:
    """Drift in one test's namespace (the API server is shared by the session's tests)."""
    return {(f.ref.kind, f.ref.name): f.drift.value for f in report.drifted if f.ref.namespace == namespace}


@pytest.fixture
def repo(tmp_path: Path, kube_env: KubeEnv) -> Iterator[DriftRepo]:
    yield DriftRepo(tmp_path, kube_env, tenant_policy="heal")


def test_applied_state_is_in_sync_and_status_updates_are_not_drift(repo: DriftRepo) -> None:
    repo.apply()
    assert not mine(repo.observe(), repo.tenant)
    c = repo.client()
    # controllers write status through the status subresource: never drift
    c.patch_status(repo.ref("Job", "prep"), finished_job_status(c.get(repo.ref("Job", "prep"))))
    c.patch_status(repo.ref("Deployment", "web"), {"replicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                                                   "readyReplicas": 2, "observedGeneration": 1})
    report = repo.observe()
    assert not mine(report, repo.tenant), [f.message for f in report.drifted]
    assert report.counts()[DriftClass.IN_SYNC] == 6        # 4 of the tenant, its ResourceQuota, the Intent CRD


def test_edit_by_another_field_manager_is_modified_naming_it_and_heal_restores(repo: DriftRepo) -> None:
    repo.apply()
    c = repo.client()
    web = repo.ref("Deployment", "web")
    edit_as(c, web, {"spec": {"replicas": 5}}, "kubectl-edit")
    report = repo.observe()
    [finding] = mine(report, repo.tenant)
    assert finding.drift is DriftClass.MODIFIED and finding.ref == web
    assert finding.managers == ("kubectl-edit",)
    assert [(ch.path, ch.desired, ch.live) for ch in finding.changes] == [("spec.replicas", 2, 5)]

    # the tenant's policy is heal: re-apply takes the field back
    result = repo.compiled()
    assert result.program is not None
    [decision] = [d for d in decide(report, Policies.from_program(result.program)) if d.finding.ref == web]
    assert decision.verb is Verb.HEAL
    manifest = next(m for m in repo.manifests(result) if m.ref == web)
    outcome = heal(c, manifest)
    assert outcome.ok, outcome.message
    live = c.get(web)
    assert live is not None and live["spec"]["replicas"] == 2
    owners = {e["manager"] for e in live["metadata"]["managedFields"] if "f:replicas" in json.dumps(e["fieldsV1"])}
    assert owners == {"intentc"}
    assert not mine(repo.observe(), repo.tenant)


def test_server_side_apply_by_another_manager_is_attributed(repo: DriftRepo) -> None:
    repo.apply()
    c = repo.client()
    web = repo.ref("Deployment", "web")
    c.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": repo.tenant},
             "spec": {"selector": {"matchLabels": {"intentc.dev/intent": "web", "intentc.dev/tenant": repo.tenant}},
                      "template": {"spec": {"containers": [{"name": "main", "image": "nginx:6.6.6"}]}}}},
            force=True, field_manager="ops-hotfix")
    [finding] = mine(repo.observe(), repo.tenant)
    assert finding.drift is DriftClass.MODIFIED and finding.ref == web and finding.managers == ("ops-hotfix",)
    [change] = finding.changes
    assert change.path == "spec.template.spec.containers[name=main].image"
    assert (change.desired, change.live) == ("nginx:1.0", "nginx:6.6.6")


def test_deleted_object_is_missing_and_heal_recreates_it(repo: DriftRepo) -> None:
    repo.apply()
    c = repo.client()
    job = repo.ref("Job", "prep")
    assert c.delete(job)
    for _ in range(100):
        if c.get(job) is None:
            break
    assert drifted(repo.observe(), repo.tenant) == {("Job", "prep"): "missing"}
    manifest = next(m for m in repo.manifests() if m.ref == job)
    assert heal(c, manifest).ok
    assert not mine(repo.observe(), repo.tenant)


def test_hand_made_object_with_intentc_labels_is_orphan(repo: DriftRepo) -> None:
    repo.apply()
    c = repo.client()
    c.apply({"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "by-hand", "namespace": repo.tenant,
                          "labels": {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/tenant": repo.tenant}},
             "spec": {"template": {"spec": {"restartPolicy": "Never",
                                            "containers": [{"name": "x", "image": "busybox"}]}}}},
            field_manager="someone")
    try:
        report = repo.observe()
        assert drifted(report, repo.tenant) == {("Job", "by-hand"): "orphan"}
        # orphans are reported, never healed (not in the inventory: intentc has no record of creating it)
        result = repo.compiled()
        assert result.program is not None
        assert [d.verb for d in decide(report, Policies.from_program(result.program))
                if d.finding.ref.namespace == repo.tenant] == [Verb.REPORT]
    finally:
        c.delete(ObjectRef("batch/v1", "Job", repo.tenant, "by-hand"))


def test_stale_and_foreign_commits(repo: DriftRepo) -> None:
    first = repo.head
    repo.apply()
    second = repo.commit("new web image", web_image="nginx:1.1")
    report = repo.observe(repo.compiled(second))
    assert drifted(report, repo.tenant) == {("Deployment", "web"): "stale"}
    [finding] = mine(report, repo.tenant)
    assert finding.live_commit == first and finding.desired_commit == second
    # a commit-sha that is not in the repository's history: applied from elsewhere
    c = repo.client()
    edit_as(c, repo.ref("Job", "prep"), {"metadata": {"annotations": {COMMIT_ANNOTATION: "0" * 40}}}, "someone")
    report = repo.observe(repo.compiled(second))
    assert drifted(report, repo.tenant) == {("Deployment", "web"): "stale", ("Job", "prep"): "foreign"}


def test_cli_drift_exit_codes_and_json(repo: DriftRepo) -> None:
    repo.apply()
    args = ["drift", str(repo.dir / "intents"), "-t", str(repo.dir / "clusters" / "small.yaml"),
            "--kubeconfig", str(repo.env.kubeconfig), "--target", repo.target]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "in sync: 6 objects" in res.stdout      # 4 of the tenant, its ResourceQuota, the Intent CRD
    edit_as(repo.client(), repo.ref("Deployment", "web"), {"spec": {"replicas": 3}}, "kubectl-edit")
    res = runner.invoke(app, args + ["-o", "json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["counts"]["modified"] == 1 and doc["commit"] == repo.head
    [finding] = doc["findings"]
    assert finding["managers"] == ["kubectl-edit"]
    assert finding["changes"] == [{"path": "spec.replicas", "desired": 2, "live": 3, "manager": "kubectl-edit"}]
    text = runner.invoke(app, args)
    assert text.exit_code == 1
    assert "spec.replicas: 2 -> 3  (by kubectl-edit)" in text.stdout
    bad = runner.invoke(app, args[:-4] + ["--kubeconfig", str(repo.dir / "nope"), "--target", repo.target])
    assert bad.exit_code == 2 and "kubeconfig not found" in bad.output


def test_cli_drift_github_annotations_and_merged_kubeconfig(repo: DriftRepo, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`drift -o github` on a real cluster, connected through a KUBECONFIG of two
    files: the cluster and user in one, the context in the other."""
    import yaml

    config = yaml.safe_load(Path(repo.env.kubeconfig).read_text())
    contexts = {"apiVersion": "v1", "kind": "Config", "contexts": config.pop("contexts"),
                "current-context": config.pop("current-context")}
    (tmp_path / "clusters").write_text(yaml.safe_dump(config))
    (tmp_path / "contexts").write_text(yaml.safe_dump(contexts))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'clusters'}:{tmp_path / 'contexts'}")
    repo.apply()
    edit_as(repo.client(), repo.ref("Deployment", "web"), {"spec": {"replicas": 3}}, "kubectl-edit")
    res = runner.invoke(app, ["drift", str(repo.dir / "intents"), "-t", str(repo.dir / "clusters" / "small.yaml"),
                              "--target", repo.target, "-o", "github"])
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("::notice title=intentc drift%3A target") and "1 modified" in lines[0]
    [web] = [line for line in lines if "modified Deployment" in line]
    # on the declaration of intent web (line 13 of the repository's one intent file)
    assert web.startswith(f"::error file={repo.dir / 'intents' / 'team.intent'},line=13,col=1,title=")
    assert web.endswith("%0Aspec.replicas: 2 -> 3 (by kubectl-edit)")
