"""Tenant isolation and quota, tried as a hostile tenant would (issue 16, SECURITY.md).

`CLAIMS` is the table of tenant-side attacks on the repository: each row is
a repository a tenant could push and the positioned error that must stop
it.  The other tests check what holds *after* checking passes: the rendered
GPUs equal the planned GPUs and stay within quota, every namespace gets a
ResourceQuota, and one tenant's errors hold back only that tenant.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from intentc.cli import app
from intentc.pipeline import compile_paths

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"     # 3 nodes x 8 H100
SHA = "0123456789abcdef0123456789abcdef01234567"
runner = CliRunner()


def tenant(name: str, *clauses: str) -> str:
    return f"tenant {name} {{\n" + "".join(f"  {c}\n" for c in clauses) + "}\n"


def intent(name: str, tenant_name: str, constraints: str = "cpu 1", action: str = 'batch image "r/a:1"',
           trigger: str = "on push") -> str:
    return (f"intent {name} {{\n  trigger: {trigger}\n  action: {action}\n"
            f"  context: tenant {tenant_name}\n  constraints: {constraints}\n}}\n")


def yaml_tenant(name: str, spec: dict[str, Any]) -> str:
    return yaml.safe_dump({"apiVersion": "intentc.dev/v1alpha1", "kind": "Tenant",
                           "metadata": {"name": name}, "spec": spec}, sort_keys=False)


# (case id, {file: text}, code, "line:col" of the error in the first file)
CLAIMS: list[tuple[str, dict[str, str], str, str]] = [
    *[(f"reserved-namespace-{ns}", {"t.intent": tenant(ns, "tier: gold")}, "E0901", "1:8")
      for ns in ("kube-system", "kube-public", "kube-node-lease", "default", "intentc-system",
                 "kube-anything", "intentc-daemon", "openshift-monitoring")],
    ("reserved-namespace-yaml", {"t.yaml": yaml_tenant("kube-system", {"tier": "gold"})}, "E0901", "4:9"),
    *[(f"system-group-{g.replace(':', '-')}", {"t.intent": tenant("team-a", f'group: "{g}"')}, "E0902", "2:10")
      for g in ("system:authenticated", "system:masters", "system:nodes", "system:serviceaccounts",
                "System:Masters", " system:masters")],
    ("system-group-yaml", {"t.yaml": yaml_tenant("team-a", {"group": "system:masters"})}, "E0902", "6:10"),
    ("serve-64-replicas-of-1-gpu",
     {"t.intent": intent("chat", "team-a", "gpus 1", 'serve image "r/s:1" replicas 64 port 8080')
      + tenant("team-a", "quota: gpus 1")}, "E0903", "5:21"),
    ("serve-replicas-do-not-divide",
     {"t.intent": intent("chat", "team-a", "gpus 8", 'serve image "r/s:1" replicas 3 port 8080')
      + tenant("team-a")}, "E0903", "5:21"),
    ("bronze-marks-p0", {"t.intent": intent("hog", "team-b", "gpus 8, sla P0") + tenant("team-b", "tier: bronze")},
     "E0904", "5:28"),
    ("bronze-marks-p1", {"t.intent": intent("hog", "team-b", "gpus 8, sla P1") + tenant("team-b", "tier: bronze")},
     "E0904", "5:28"),
    ("silver-marks-p0", {"t.intent": intent("hog", "team-b", "sla P0") + tenant("team-b", "tier: silver")},
     "E0904", "5:20"),
    ("no-tier-marks-p0", {"t.intent": intent("hog", "team-b", "sla P0") + tenant("team-b")}, "E0904", "5:20"),
    ("max-sla-lowers-gold", {"t.intent": intent("hog", "team-g", "sla P0")
                             + tenant("team-g", "tier: gold", "max_sla: P2")}, "E0904", "5:20"),
    ("max-sla-unknown", {"t.intent": tenant("team-g", "max_sla: P00")}, "E0407", "2:12"),
]


@pytest.mark.parametrize("files,code,where", [c[1:] for c in CLAIMS], ids=[c[0] for c in CLAIMS])
def test_tenant_claims_are_refused_with_a_position(tmp_path: Path, files: dict[str, str], code: str,
                                                   where: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    res = runner.invoke(app, ["check", str(tmp_path)])
    first = next(iter(files))
    assert res.exit_code == 1, res.output
    assert f"{first}:{where}: error[{code}]" in res.output, res.output
    assert "Traceback" not in res.output


def test_granted_and_within_ceiling_pass(tmp_path: Path) -> None:
    """The ceilings refuse only what they must: gold P0, bronze granted P0, bronze P2, even replicas."""
    (tmp_path / "t.intent").write_text(
        tenant("team-g", "tier: gold") + tenant("team-b", "tier: bronze", "max_sla: P0")
        + tenant("team-c", "tier: bronze") + tenant("team-s", 'group: "team-s-devs"')
        + intent("a", "team-g", "gpus 1, sla P0") + intent("b", "team-b", "gpus 1, sla P0")
        + intent("c", "team-c", "gpus 1, sla P2")
        + intent("d", "team-s", "gpus 8", 'serve image "r/s:1" replicas 4 port 8080'))
    res = runner.invoke(app, ["check", str(tmp_path)])
    assert res.exit_code == 0, res.output


def _compile(tmp_path: Path, text: str, **kw: Any) -> Any:
    (tmp_path / "repo.intent").write_text(text)
    return compile_paths([str(tmp_path / "repo.intent")], str(SMALL), SHA, **kw)


def _objects(result: Any, kind: str) -> list[dict[str, Any]]:
    return [dict(m.body) for m in result.rendered.manifests if m.ref.kind == kind]


def _gpus(pod_spec: dict[str, Any]) -> int:
    return sum(int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", 0))
               for c in pod_spec["containers"])


@pytest.mark.parametrize("gpus,replicas", [(1, 1), (8, 8), (8, 2), (16, 4), (16, 16), (24, 3), (6, 6)])
def test_serve_renders_exactly_the_planned_gpus_within_quota(tmp_path: Path, gpus: int, replicas: int) -> None:
    result = _compile(tmp_path, tenant("team-a", f"quota: gpus {gpus}")
                      + intent("chat", "team-a", f"gpus {gpus}", f'serve image "r/s:1" replicas {replicas} port 80'))
    assert result.ok, result.diagnostics
    (dep,) = _objects(result, "Deployment")
    rendered = dep["spec"]["replicas"] * _gpus(dep["spec"]["template"]["spec"])
    planned = sum(len(a.gpus) for p in result.plan.placements for a in p.allocations)
    (quota,) = _objects(result, "ResourceQuota")
    assert rendered == planned == gpus <= int(quota["spec"]["hard"]["requests.nvidia.com/gpu"])


def test_every_tenant_namespace_gets_a_resource_quota(tmp_path: Path) -> None:
    """A tenant without a declared GPU quota is bounded by what the plan gave it
    (0 when it runs no GPU work): its group's `edit` cannot take other GPUs."""
    result = _compile(tmp_path, tenant("team-a", 'group: "a-devs"') + tenant("team-idle")
                      + tenant("team-q", "quota: gpus 4")
                      + intent("train", "team-a", "gpus 8") + intent("two", "team-a", "gpus 2")
                      + intent("q", "team-q", "gpus 2"))
    assert result.ok, result.diagnostics
    hard = {q["metadata"]["namespace"]: q["spec"]["hard"] for q in _objects(result, "ResourceQuota")}
    namespaces = {n["metadata"]["name"] for n in _objects(result, "Namespace")}
    assert set(hard) == namespaces == {"team-a", "team-idle", "team-q"}
    assert hard["team-a"] == {"requests.nvidia.com/gpu": "10"}
    assert hard["team-idle"] == {"requests.nvidia.com/gpu": "0"}
    assert hard["team-q"] == {"requests.nvidia.com/gpu": "4"}, "a declared quota stands"


GOOD = tenant("team-good", "tier: gold") + intent("good-job", "team-good", "gpus 2")


@pytest.mark.parametrize("bad", [
    pytest.param(tenant("team-bad", "quota: gpus 4") + intent("greedy", "team-bad", "gpus 16"), id="over-quota"),
    pytest.param(tenant("team-bad", "tier: bronze") + intent("hog", "team-bad", "gpus 1, sla P0"), id="sla-ceiling"),
    pytest.param(tenant("team-bad") + intent("typo", "team-bad", 'cpu "lots"'), id="invalid-value"),
    pytest.param(tenant("kube-system") + intent("takeover", "kube-system"), id="reserved-name"),
    pytest.param(intent("orphan", "team-undeclared"), id="unknown-tenant"),
])
def test_one_tenants_errors_hold_back_only_that_tenant(tmp_path: Path, bad: str) -> None:
    (tmp_path / "good.intent").write_text(GOOD)
    (tmp_path / "bad.intent").write_text(bad)
    out = tmp_path / "out"
    res = runner.invoke(app, ["compile", str(tmp_path / "good.intent"), str(tmp_path / "bad.intent"),
                              "-t", str(SMALL), "-d", str(out), "--commit", SHA])
    assert res.exit_code == 1, res.output
    assert re.search(r"bad\.intent:\d+:\d+: error\[E0\d\d\d\]", res.output), res.output
    assert "warning[W0901]" in res.output and "held back" in res.output
    written = "".join(p.read_text() for p in sorted((out / "manifests").iterdir()))
    assert "good-job" in written and "namespace: team-good" in written
    bad_names = re.findall(r"^intent (\S+)", bad, re.M) + re.findall(r"^tenant (\S+)", bad, re.M) + ["team-undeclared"]
    for name in bad_names:
        assert name not in written, f"{name} of the held-back tenant was rendered"


def test_a_tenant_depending_on_a_held_tenant_is_held_too(tmp_path: Path) -> None:
    text = (GOOD + tenant("team-bad", "quota: gpus 1") + intent("produce", "team-bad", "gpus 4")
            + tenant("team-next") + intent("consume", "team-next", "cpu 1", trigger="after produce"))
    result = _compile(tmp_path, text)
    assert not result.ok and result.held_tenants == ("team-bad", "team-next")
    names = {m.ref.name for m in result.rendered.manifests}
    assert "good-job" in names and not {"produce", "consume", "team-bad", "team-next"} & names


def test_errors_no_tenant_owns_still_stop_everything(tmp_path: Path) -> None:
    result = _compile(tmp_path, GOOD + tenant("team-bad") + "intent broken {\n  trigger: on push\n  action: ???\n}\n")
    assert result.rendered is None and not result.held_tenants


def test_the_daemon_rolls_out_the_other_tenants_and_keeps_the_held_one(tmp_path: Path) -> None:
    """The daemon's git source takes a partial compile as `apply` does: the held
    tenant is passed to the reconciler, which neither applies nor prunes it."""
    from intentc.daemon.rollouts import run_rollout
    from intentc.daemon.source import from_compile
    from intentc.kube.client import KubeClient
    from intentc.reconcile.inventory import Inventory, inventory_ref
    from intentc.reconcile.sync import ApplyOptions
    from intentc.render.capabilities import KubeVersion
    from tests.adversarial.fake_api import FakeApi

    api = FakeApi().start()
    try:
        client = KubeClient.connect(str(api.kubeconfig(tmp_path)))
        bad = tenant("team-bad", "quota: gpus 1") + intent("greedy", "team-bad", "gpus 4")
        desired = from_compile(_compile(tmp_path, GOOD + bad), "git")
        assert desired is not None and desired.held == ("team-bad",)
        done = run_rollout(client, desired, ApplyOptions(wait=False), KubeVersion(1, 33), "device-plugin",
                           lambda s: None)
        assert done.result is not None and done.result.result == "failed"
        assert "held back" in done.result.message
        jobs = {p.rsplit("/", 1)[1] for p in api.objects if "/jobs/" in p}
        assert {j.partition("-fallback-")[0] for j in jobs} == {"good-job"}, jobs   # with its fallback steps
        ref = inventory_ref("default")
        inv = Inventory.from_configmap(api.objects[f"/api/v1/namespaces/{ref.namespace}/configmaps/{ref.name}"],
                                       "default")
        assert inv.last_known_good is None, "a partial rollout is not a known-good commit"
        assert from_compile(_compile(tmp_path, GOOD + "intent broken {\n action: ???\n}\n"), "git") is None
    finally:
        api.stop()
