"""`intentc apply` against a real kube-apiserver + etcd (see tests/kube_env.py).

Each test works on its own copy of the fixture repository (tests/fixtures/repo)
with tenant names made unique, and its own inventory target, so tests share
one API server without seeing each other's objects.  There is no
controller-manager: Jobs never run; where a test needs a finished Job or an
available Deployment it writes `.status` as the controller would.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import git
import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.pipeline import compile_paths
from intentc.kube.client import KubeClient
from intentc.reconcile.inventory import Entry, Inventory, inventory_ref
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.render.capabilities import KubeVersion
from intentc.render.model import COMMIT_ANNOTATION, SPEC_HASH_ANNOTATION
from intentc.objectmeta import MANAGED_BY_LABEL, ObjectRef
from intentc.render.stamp import spec_hash
from tests.kube_env import KubeEnv, finished_job_status, write_requests

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "repo"
EXAMPLE_INTENTS = ROOT / "intents"
EXAMPLE_TOPOLOGY = ROOT / "examples" / "topologies" / "cluster.yaml"
runner = CliRunner()
_ids = itertools.count(1)


class Workspace:
    """A git repository holding a uniquely-named copy of the fixture intents."""

    def __init__(self, tmp: Path, env: KubeEnv) -> None:
        n = next(_ids)
        self.env = env
        self.alpha, self.beta, self.target = f"t{n}-alpha", f"t{n}-beta", f"t{n}"
        self.dir = tmp / "repo"
        shutil.copytree(FIXTURE, self.dir)
        for f in (self.dir / "intents").iterdir():
            self.edit(f.name, lambda t: t.replace("tn-alpha", self.alpha).replace("tn-beta", self.beta), commit=False)
        self.repo = git.Repo.init(self.dir)
        with self.repo.config_writer() as cw:
            cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")
        self.commit("initial intents")

    def edit(self, name: str, change: Any, commit: bool = True) -> str | None:
        path = self.dir / "intents" / name
        before = path.read_text()
        after = change(before)
        assert after != before, f"edit of {name} changed nothing"
        path.write_text(after)
        return self.commit(f"edit {name}") if commit else None

    def commit(self, message: str) -> str:
        self.repo.git.add(A=True)
        return str(self.repo.index.commit(message).hexsha)

    @property
    def head(self) -> str:
        return str(self.repo.head.commit.hexsha)

    def apply(self, *flags: str) -> tuple[int, dict[str, Any], str]:
        args = ["apply", str(self.dir / "intents"), "-t", str(self.dir / "clusters" / "small.yaml"),
                "--kubeconfig", str(self.env.kubeconfig), "--target", self.target, "-o", "json", *flags]
        res = runner.invoke(app, args)
        out = res.stdout
        start = out.find("{")
        doc = json.loads(out[start:]) if start >= 0 else {}
        return res.exit_code, doc, res.output

    def client(self) -> KubeClient:
        return KubeClient.connect(str(self.env.kubeconfig))

    def inventory(self) -> Inventory:
        c = self.client()
        return Inventory.from_configmap(c.get(inventory_ref(self.target)), self.target)

    def live(self) -> dict[str, dict[str, Any]]:
        """Every object in this workspace's namespaces (plus PriorityClasses), by "Kind ns/name"."""
        c = self.client()
        out = {}
        for api_version, kind in (("v1", "Namespace"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
                                  ("v1", "ResourceQuota"), ("batch/v1", "Job"), ("apps/v1", "Deployment"),
                                  ("v1", "Service"), ("v1", "ConfigMap")):
            for item in c.list(api_version, kind):
                ref = ObjectRef.of(item)
                if self.alpha in (ref.namespace, ref.name) or self.beta in (ref.namespace, ref.name):
                    out[str(ref)] = item
        return out


@pytest.fixture
def ws(tmp_path: Path, kube_env: KubeEnv) -> Iterator[Workspace]:
    yield Workspace(tmp_path, kube_env)


def versions(objs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {k: v["metadata"]["resourceVersion"] for k, v in objs.items()}


def commits(objs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {k: v["metadata"]["annotations"].get(COMMIT_ANNOTATION, "") for k, v in objs.items()}


def actions(doc: dict[str, Any]) -> dict[str, str]:
    return {f"{o['kind']} {o['namespace'] + '/' if o['namespace'] else ''}{o['name']}": o["action"]
            for o in doc["objects"]}


# --------------------------------------------------------------------------


@pytest.mark.skipif(not EXAMPLE_TOPOLOGY.exists(), reason="example repository not present")
def test_apply_example_repository_then_noop(kube_env: KubeEnv) -> None:
    sha = "e" * 40
    result = compile_paths([str(EXAMPLE_INTENTS)], str(EXAMPLE_TOPOLOGY), sha, KubeVersion(1, 37))
    assert result.rendered is not None, [str(d) for d in result.diagnostics]
    client = KubeClient.connect(str(kube_env.kubeconfig))
    opts = ApplyOptions(target="example", wait=False)
    first = Reconciler(client, opts).apply(result.rendered)
    assert first.result == "succeeded", first.to_text()
    before = {}
    for m in result.rendered.manifests:
        live = client.get(m.ref)
        assert live is not None, f"{m.ref} missing"
        meta = live["metadata"]
        assert meta["labels"][MANAGED_BY_LABEL] == "intentc"
        for key, value in m.body["metadata"]["labels"].items():
            assert meta["labels"][key] == value, (m.ref, key)
        assert meta["annotations"][COMMIT_ANNOTATION] == sha
        assert meta["annotations"][SPEC_HASH_ANNOTATION] == m.spec_hash == spec_hash(m.body)
        before[m.ref] = meta["resourceVersion"]
    inv = Inventory.from_configmap(client.get(inventory_ref("example")), "example")
    assert inv.refs() == set(before) and inv.commit == sha

    writes_before = write_requests(kube_env.metrics())
    second = Reconciler(client, opts).apply(result.rendered)
    writes_after = write_requests(kube_env.metrics())
    assert second.result == "succeeded"
    assert {o.action.value for o in second.objects} == {"unchanged"}
    assert not second.inventory_written and second.writes == 0
    assert writes_after == writes_before, "a no-op re-apply sends no write request at all"
    assert {m.ref: client.get(m.ref)["metadata"]["resourceVersion"] for m in result.rendered.manifests} == before


def test_changed_intent_rewrites_only_its_objects(ws: Workspace) -> None:
    code, doc, out = ws.apply("--no-wait")
    assert code == 0, out
    first_sha = ws.head
    before = ws.live()
    assert set(commits(before).values()) == {first_sha}
    # a serving intent changes its image: Deployment updated in place, its Service untouched
    second_sha = ws.edit("pipeline.intent", lambda t: t.replace("server:1.0", "server:1.1"))
    code, doc, out = ws.apply("--no-wait")
    assert code == 0, out
    changed = {k for k, a in actions(doc).items() if a != "unchanged"}
    assert changed == {f"Deployment {ws.beta}/serve"}
    after = ws.live()
    rewritten = {k for k in before if versions(before)[k] != versions(after)[k]}
    assert rewritten == {f"Deployment {ws.beta}/serve"}
    assert {k for k, c in commits(after).items() if c == second_sha} == {f"Deployment {ws.beta}/serve"}
    update = next(o for o in doc["objects"] if o["action"] == "update")
    assert '~ spec.template.spec.containers[0].image: "ghcr.io/acme/server:1.0" -> "ghcr.io/acme/server:1.1"' \
        in update["diff"]
    assert ws.inventory().commit == second_sha
    # a Job's pod template is immutable: the Job is replaced (deleted, re-created)
    third_sha = ws.edit("pipeline.intent", lambda t: t.replace("eval:1.0", "eval:1.1"))
    code, doc, out = ws.apply("--no-wait")
    assert code == 0, out
    # with the suspended steps of its fallback chain, whose templates carry the image too
    assert {k: a for k, a in actions(doc).items() if a != "unchanged"} == {
        f"Job {ws.beta}/{n}": "replace" for n in ("evaluate", "evaluate-fallback-chunk", "evaluate-fallback-power")}
    final = ws.live()
    assert final[f"Job {ws.beta}/evaluate"]["metadata"]["uid"] != after[f"Job {ws.beta}/evaluate"]["metadata"]["uid"]
    assert commits(final)[f"Job {ws.beta}/evaluate"] == third_sha
    assert commits(final)[f"Deployment {ws.beta}/serve"] == second_sha
    assert commits(final)[f"Job {ws.alpha}/train"] == first_sha


def test_prune_removes_exactly_the_deleted_intent(ws: Workspace) -> None:
    assert ws.apply("--no-wait")[0] == 0
    c = ws.client()
    # objects intentc does not manage, in a managed namespace: one unlabelled, one labelled but not ours
    c.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hand-made", "namespace": ws.beta},
             "data": {"a": "b"}}, field_manager="someone")
    c.apply({"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "lookalike", "namespace": ws.beta, "labels": {MANAGED_BY_LABEL: "intentc"}},
             "data": {"a": "b"}}, field_manager="someone")
    before = ws.live()
    ws.edit("pipeline.intent", lambda t: t[:t.index("intent cleanup")])
    code, doc, out = ws.apply("--no-wait")
    assert code == 0, out
    assert actions(doc)[f"Job {ws.beta}/cleanup"] == "orphan", "without --prune it is only reported"
    assert f"Job {ws.beta}/cleanup" in ws.live()
    entry = ws.inventory().entry(ObjectRef("batch/v1", "Job", ws.beta, "cleanup"))
    assert entry is not None and entry.desired is False
    code, doc, out = ws.apply("--no-wait", "--prune")
    assert code == 0, out
    assert {k for k, a in actions(doc).items() if a == "prune"} == {f"Job {ws.beta}/cleanup"}
    after = ws.live()
    assert set(before) - set(after) == {f"Job {ws.beta}/cleanup"}
    assert {k: v for k, v in versions(after).items()} == {k: v for k, v in versions(before).items() if k in after}
    assert ws.inventory().entry(ObjectRef("batch/v1", "Job", ws.beta, "cleanup")) is None
    # a whole tenant goes: its objects are pruned, but not its namespace, which still
    # holds objects intentc does not manage (deleting it would take them along)
    ws.edit("pipeline.intent", lambda t: t[:t.index("intent evaluate")])
    ws.edit("tenants.intent", lambda t: t[:t.index(f"tenant {ws.beta}")])
    p0 = ObjectRef("scheduling.k8s.io/v1", "PriorityClass", "", "intentc-p0")
    other = Inventory(f"{ws.target}-other").with_entries([Entry(p0, 3, "h", "c" * 40)])
    c.apply(other.configmap(), force=True)      # another target still wants intentc-p0
    code, doc, out = ws.apply("--no-wait", "--prune")
    assert code == 0, out
    acts = actions(doc)
    assert {k for k, a in acts.items() if a == "prune" and not k.startswith("PriorityClass")} == {
        f"Job {ws.beta}/evaluate", f"Job {ws.beta}/evaluate-fallback-chunk", f"Job {ws.beta}/evaluate-fallback-power",
        f"Deployment {ws.beta}/serve", f"Service {ws.beta}/serve", f"ResourceQuota {ws.beta}/intentc-tenant-quota"}
    assert acts[f"Namespace {ws.beta}"] == "orphan"
    kept = next(o for o in doc["objects"] if o["kind"] == "Namespace" and o["name"] == ws.beta)
    assert "ConfigMap hand-made" in kept["message"] and "ConfigMap lookalike" in kept["message"]
    left = ws.live()
    assert {k for k in left if ws.beta in k} == {f"Namespace {ws.beta}", f"ConfigMap {ws.beta}/hand-made",
                                                 f"ConfigMap {ws.beta}/lookalike"}
    assert acts["PriorityClass intentc-p0"] == "orphan", "another target still uses it"
    assert c.get(p0) is not None


def test_conflict_names_the_other_manager(ws: Workspace) -> None:
    assert ws.apply("--no-wait")[0] == 0
    c = ws.client()
    c.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "serve", "namespace": ws.beta},
             "spec": {"replicas": 5}}, field_manager="ops-oncall", force=True)
    ws.edit("pipeline.intent", lambda t: t.replace("replicas 2 port 8080", "replicas 1 port 8080"))
    code, doc, out = ws.apply("--no-wait")
    assert code == 1
    failed = [o for o in doc["objects"] if not o["ok"]]
    assert [(o["kind"], o["name"]) for o in failed] == [("Deployment", "serve")]
    assert failed[0]["conflictManagers"] == ["ops-oncall"]
    assert '"ops-oncall"' in failed[0]["message"] and ".spec.replicas" in failed[0]["message"]
    assert c.get(ObjectRef("apps/v1", "Deployment", ws.beta, "serve"))["spec"]["replicas"] == 5
    code, doc, out = ws.apply("--no-wait", "--force-conflicts")
    assert code == 0, out
    assert c.get(ObjectRef("apps/v1", "Deployment", ws.beta, "serve"))["spec"]["replicas"] == 1


def test_text_output_reports_a_conflict_by_name(ws: Workspace) -> None:
    assert ws.apply("--no-wait")[0] == 0
    ws.client().apply({"apiVersion": "v1", "kind": "ResourceQuota",
                       "metadata": {"name": "intentc-tenant-quota", "namespace": ws.beta},
                       "spec": {"hard": {"requests.nvidia.com/gpu": "99"}}}, field_manager="kubectl-edit", force=True)
    ws.edit("tenants.intent", lambda t: t.replace("quota: gpus 8", "quota: gpus 10"))
    res = runner.invoke(app, ["apply", str(ws.dir / "intents"), "-t", str(ws.dir / "clusters" / "small.yaml"),
                              "--kubeconfig", str(ws.env.kubeconfig), "--target", ws.target, "--no-wait"])
    assert res.exit_code == 1
    assert re.search(r"FAILED\s+ResourceQuota .*owned by field manager \"kubectl-edit\"", res.stdout), res.stdout
    assert "Traceback" not in res.output


def test_dry_run_writes_nothing(ws: Workspace, kube_env: KubeEnv) -> None:
    writes = write_requests(kube_env.metrics())
    code, doc, out = ws.apply("--dry-run")
    assert code == 0, out
    # cluster-scoped objects every target shares (an earlier test made them): PriorityClasses, the Intent CRD
    shared = ("PriorityClass", "CustomResourceDefinition")
    assert {a for k, a in actions(doc).items() if not k.startswith(shared)} == {"create"}
    assert ws.live() == {} and ws.client().get(inventory_ref(ws.target)) is None
    assert write_requests(kube_env.metrics()) == writes
    assert ws.apply("--no-wait")[0] == 0
    before, inv_before = ws.live(), ws.inventory()
    ws.edit("pipeline.intent", lambda t: t.replace("prep:1.0", "prep:1.1"))
    ws.edit("pipeline.intent", lambda t: t[:t.index("intent cleanup")])
    writes = write_requests(kube_env.metrics())
    # client (bare --dry-run, as kubectl): compared with the live objects, nothing sent to the
    # API server, so the image change of a Job (immutable) shows as an update
    dry_sent = write_requests(kube_env.metrics(), dry_run=True)
    code, doc, out = ws.apply("--dry-run", "--prune")
    assert code == 0, out
    assert actions(doc)[f"Job {ws.alpha}/prep"] == "update"
    assert write_requests(kube_env.metrics(), dry_run=True) == dry_sent
    # server: each change also goes to the API server as a dry run (dryRun=All), which knows better
    code, doc, out = ws.apply("--dry-run=server", "--prune")
    assert code == 0, out
    assert write_requests(kube_env.metrics(), dry_run=True).get("APPLY", 0) > dry_sent.get("APPLY", 0)
    acts = actions(doc)
    assert acts[f"Job {ws.alpha}/prep"] == "replace"
    assert acts[f"Job {ws.beta}/cleanup"] == "prune"
    assert {a for k, a in acts.items() if k not in (f"Job {ws.alpha}/prep", f"Job {ws.beta}/cleanup")} == {"unchanged"}
    prep = next(o for o in doc["objects"] if o["name"] == "prep")
    assert any("prep:1.1" in line for line in prep["diff"])
    assert write_requests(kube_env.metrics()) == writes
    assert versions(ws.live()) == versions(before) and ws.inventory() == inv_before


def _complete_jobs(c: KubeClient, refs: list[ObjectRef]) -> None:
    for ref in refs:
        c.patch_status(ref, finished_job_status(c.get(ref)))


def test_wait_gates_waves_on_health(ws: Workspace) -> None:
    code, doc, out = ws.apply("--wait", "--timeout", "1")
    assert code == 1
    assert "timed out" in doc["message"] and "wave-0" in doc["message"]
    assert f"Job {ws.alpha}/train" not in ws.live(), "wave 1 does not start before wave 0 is healthy"
    c = ws.client()
    _complete_jobs(c, [ObjectRef("batch/v1", "Job", ws.alpha, "prep"), ObjectRef("batch/v1", "Job", ws.beta, "cleanup")])
    code, doc, out = ws.apply("--wait", "--timeout", "1")
    assert code == 1 and "wave-1" in doc["message"]
    train = ObjectRef("batch/v1", "Job", ws.alpha, "train")
    c.patch_status(train, finished_job_status(c.get(train), failed=True))
    code, doc, out = ws.apply("--wait", "--timeout", "5")
    assert code == 1
    assert "failed" in doc["message"] and "BackoffLimitExceeded" in doc["message"]
    assert f"Deployment {ws.beta}/serve" not in ws.live()
    # Failed is terminal (1.31+ refuses to take it back): the operator deletes the Job to run it again
    c.delete(train)
    code, doc, out = ws.apply("--wait", "--timeout", "1")
    assert code == 1 and "wave-1" in doc["message"], "the re-created Job is waited for"
    _complete_jobs(c, [train])
    code, doc, out = ws.apply("--wait", "--timeout", "1")
    assert code == 1 and "wave-2" in doc["message"], "the last wave is applied, then waited for"
    _complete_jobs(c, [ObjectRef("batch/v1", "Job", ws.beta, "evaluate")])
    dep = ObjectRef("apps/v1", "Deployment", ws.beta, "serve")
    generation = c.get(dep)["metadata"]["generation"]
    c.patch_status(dep, {"observedGeneration": generation, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                         "availableReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]})
    code, doc, out = ws.apply("--wait", "--timeout", "5")
    assert code == 0, out
    assert doc["health"] == "Healthy"
    inv = ws.inventory()
    assert inv.last_known_good == ws.head and inv.history[0].health == "Healthy"


class _Failing(KubeClient):
    """A real client whose API server is stopped after `after` object applies."""

    def __init__(self, base: KubeClient, env: KubeEnv, after: int) -> None:
        super().__init__(base.api, base.timeout)
        self.env, self.left = env, after

    def apply(self, body: Any, **kw: Any) -> dict[str, Any]:
        if body.get("kind") != "ConfigMap":
            if self.left == 0:
                self.env.stop_apiserver()
            self.left -= 1
        return super().apply(body, **kw)


def test_interrupted_apply_leaves_an_exact_inventory_and_rerun_converges(ws: Workspace, kube_env: KubeEnv) -> None:
    result = compile_paths([str(ws.dir / "intents")], str(ws.dir / "clusters" / "small.yaml"), ws.head)
    assert result.rendered is not None
    opts = ApplyOptions(target=ws.target, wait=False, workers=1)
    client = _Failing(KubeClient.connect(str(kube_env.kubeconfig)), kube_env, after=5)
    try:
        outcome = Reconciler(client, opts).apply(result.rendered)
    finally:
        if kube_env.apiserver is None:
            kube_env.start_apiserver()
    assert outcome.result == "error" and outcome.exit_code == 2
    assert "cannot reach the API server" in outcome.message and "run again" in outcome.message
    inv = ws.inventory()
    c = ws.client()
    live = {m.ref for m in result.rendered.manifests if c.get(m.ref) is not None}
    assert {ObjectRef.of(o) for o in ws.live().values()} <= live
    confirmed = {e.ref for e in inv.entries if e.state == "applied"}
    pending = {e.ref for e in inv.entries if e.state == "pending"}
    assert confirmed <= live, "everything marked applied exists"
    assert live <= confirmed | pending, "everything that exists is on record"
    assert pending, "the step that was cut off is recorded as pending"
    assert inv.history[0].result == "running"
    again = Reconciler(KubeClient.connect(str(kube_env.kubeconfig)), opts).apply(result.rendered)
    assert again.result == "succeeded", again.to_text()
    inv = ws.inventory()
    assert {e.state for e in inv.entries} == {"applied"}
    assert inv.refs() == {m.ref for m in result.rendered.manifests}
    assert [r.result for r in inv.history[:2]] == ["succeeded", "interrupted"]
    third = Reconciler(KubeClient.connect(str(kube_env.kubeconfig)), opts).apply(result.rendered)
    assert third.writes == 0 and not third.inventory_written


def test_server_version_decides_the_render(ws: Workspace) -> None:
    code, doc, out = ws.apply("--no-wait")
    assert code == 0, out
    assert doc["kubeVersion"] == "1.37", "the test bed's server"
    train = ws.live()[f"Job {ws.alpha}/train"]
    assert train["spec"]["completionMode"] == "Indexed" and train["spec"]["completions"] == 2
    code, doc, out = ws.apply("--no-wait", "--kube-version", "1.32", "--dry-run")
    assert code == 2 and "supports 1.33 and later" in out, out


def _big_inventory(target: str, objects: int) -> Inventory:
    entries = [Entry(ObjectRef("batch/v1", "Job", f"{target}-ns{i % 40}", f"job-{i:05d}"), 100 + i % 3,
                     spec_hash({"i": i}), "c" * 40, f"intent-{i}", "team") for i in range(objects)]
    return Inventory(target, "c" * 40).with_entries(entries)


def test_a_large_inventory_is_gzipped_and_the_quarantine_survives_the_switch(kube_env: KubeEnv) -> None:
    """Server-side apply drops the key the inventory no longer sends (plain <-> gzipped)
    and leaves the quarantine, owned by another field manager, alone."""
    from intentc.drift import quarantine
    c = KubeClient.connect(str(kube_env.kubeconfig))
    target = f"big{next(_ids)}"
    c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "intentc-system"}})
    small, big = _big_inventory(target, 10), _big_inventory(target, 6000)
    c.apply(small.configmap(), force=True)
    quarantine.write(c, target, quarantine.Quarantine((quarantine.Entry("d" * 40, "rolled back", "t0"),)))
    for inv, key, gone in ((big, "binaryData", "data"), (small, "data", "binaryData"), (big, "binaryData", "data")):
        c.apply(inv.configmap(), force=True)
        body = c.get(inventory_ref(target))
        assert body is not None
        assert Inventory.from_configmap(body, target).entries == inv.entries
        assert ("inventory.json.gz" in (body.get("binaryData") or {})) == (key == "binaryData")
        assert ("inventory.json" in (body.get("data") or {})) == (key == "data")
        assert "d" * 40 in quarantine.Quarantine.from_configmap(body)
    assert len(json.dumps(big.configmap())) < 1024 * 1024 < len(big.to_json())


def test_apply_progress_goes_to_stderr_only(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    from intentc.cli import progress as cli_progress

    monkeypatch.setattr(cli_progress, "INTERVAL", 0.0)      # every report becomes a line
    res = runner.invoke(app, ["apply", str(ws.dir / "intents"), "-t", str(ws.dir / "clusters" / "small.yaml"),
                              "--kubeconfig", str(ws.env.kubeconfig), "--target", ws.target, "-o", "json",
                              "--no-wait"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["result"] == "succeeded"           # stdout: the JSON document alone
    lines = res.stderr.splitlines()
    assert "intentc: namespaces: applying: 2/2" in "\n".join(lines), lines
    assert any(re.fullmatch(r"intentc: wave-\d+: applying: (\d+)/\1 \(\d+s\)", line) for line in lines), lines
