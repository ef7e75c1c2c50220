"""Semantic tags → policy (intentc/policy): the catalogue, repository rules, plan checks, rendered objects."""

from __future__ import annotations

import pytest

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from intentc import ir
from intentc.frontend.dsl import parse
from intentc.frontend.sources import SourceFile
from intentc.plan.planner import make_plan
from intentc.policy import BUILTIN, Requirement
from intentc.policy.load import load_policies
from intentc.render import render
from intentc.render.capabilities import KubeVersion
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix

TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: t}
spec:
  levels: [nvlink, node]
  nodes:
    - {name: a1, gpu: {product: H100-80GB, count: 8, memory: 80Gi}, domains: {nvlink: nvl-a}}
    - {name: a2, gpu: {product: H100-80GB, count: 8, memory: 80Gi}, domains: {nvlink: nvl-a}}
"""

PAYMENTS = """\
tenant payments { tier: gold }
tenant research { tier: bronze  max_sla: P1 }

intent fraud-model {
  trigger: on push
  action: training image "fraud:1"
  context: tenant payments, tags [nightly, pci-dss-compliant]
  constraints: gpus 8, sla P0
}

intent research-job {
  trigger: on push
  action: training image "research:1"
  context: tenant research
  constraints: gpus 8, sla P1
}
"""


def write_repo(tmp_path: Path, intents: str = PAYMENTS, policies: dict[str, str] | None = None) -> Path:
    (tmp_path / ".git").mkdir()            # the repository root: policy lookup stops here
    (tmp_path / "intents").mkdir()
    (tmp_path / "intents" / "all.intent").write_text(intents)
    (tmp_path / "cluster.yaml").write_text(TOPOLOGY)
    if policies:
        (tmp_path / "policies").mkdir()
        for name, text in policies.items():
            (tmp_path / "policies" / name).write_text(text)
    return tmp_path


def intentc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "intentc", *args], cwd=cwd, capture_output=True, text=True,
                          env={"INTENTC_CACHE_DIR": "", "PATH": "/usr/bin:/bin"})


def program_of(text: str) -> ir.Program:
    prog, diags = parse(SourceFile("t.intent", text))
    assert not diags
    return prog


def loaded(*nvlink: str) -> LoadedTopology:
    nodes = tuple(ir.TopologyNode(f"a{i + 1}", 8, "H100-80GB", "80Gi", domains=(("nvlink", d), ("node", f"a{i + 1}")))
                  for i, d in enumerate(nvlink))
    return LoadedTopology(ir.Topology("t", ("nvlink", "node"), nodes),
                          tuple((n.name, default_matrix(8, n.gpu_product)) for n in nodes))


# both open-ended on one NVLink domain: the planner cannot keep them apart in time (issue 37)
SERVING = (PAYMENTS.replace('action: training image "fraud:1"', 'action: serve image "fraud:1"')
           .replace('action: training image "research:1"', 'action: serve image "research:1"'))


def test_pci_dss_sharing_an_nvlink_domain_fails_check_at_the_tag(tmp_path: Path) -> None:
    repo = write_repo(tmp_path, SERVING)
    plain = intentc("check", "intents/", cwd=repo)
    assert plain.returncode == 0, plain.stdout + plain.stderr       # without a plan there is nothing to judge
    done = intentc("check", "intents/", "--topology", "cluster.yaml", "-o", "json", cwd=repo)
    assert done.returncode == 1, done.stdout + done.stderr
    (d,) = [d for d in json.loads(done.stdout) if d["code"] == "E1020"]
    assert "pci-dss-compliant" in d["message"]
    text = intentc("check", "intents/", "--topology", "cluster.yaml", cwd=repo).stdout
    assert "intents/all.intent:7:44: error[E1020]" in text          # the tag, not the tags clause
    assert "NVLink domain nvl-a also holds intent 'research-job' of tenant research" in text
    assert "^^^^^^^^^^^^^^^^^" in text                # the caret under the tag


def test_own_nvlink_domain_passes() -> None:
    plan, diags = make_plan(program_of(PAYMENTS), loaded("nvl-a", "nvl-b"))
    assert not [d for d in diags if d.code == "E1020"]
    assert {p.intent: p.nodes for p in plan.placements} == {"fraud-model": ("a1",), "research-job": ("a2",)}


def test_the_same_tenant_may_share() -> None:
    same = PAYMENTS.replace("context: tenant research", "context: tenant payments")
    _, diags = make_plan(program_of(same), loaded("nvl-a", "nvl-a"))
    assert not [d for d in diags if d.code == "E1020"]


def test_yaml_tags_have_positions_too() -> None:
    from intentc.frontend.yaml import parse as parse_yaml
    text = """\
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata: {name: fraud-model}
spec:
  trigger: push
  action: {kind: training, image: "fraud:1"}
  context:
    tenant: payments
    tags: [nightly, pci-dss-compliant]
  constraints: {gpus: {count: 8}}
"""
    prog, diags = parse_yaml(SourceFile("f.yaml", text))
    assert not diags
    span = prog.intents[0].context.tag_span(1)
    assert (span.line, span.column) == (9, 21)


def policy_doc(name: str, requires: str, reason: str = "") -> str:
    return (f"apiVersion: intentc.dev/v1alpha1\nkind: Policy\nmetadata: {{name: {name}}}\nspec:\n"
            f"  tag: {name}\n  requires: [{requires}]\n" + (f"  reason: {reason}\n" if reason else ""))


def test_repository_rules_are_added_without_code(tmp_path: Path) -> None:
    hipaa = policy_doc("hipaa", "exclusive-domain", "HIPAA 164.312")
    repo = write_repo(tmp_path, SERVING.replace("pci-dss-compliant", "hipaa"), {"hipaa.yaml": hipaa})
    policies, diags, texts = load_policies([str(repo / "intents")])
    assert not diags and list(texts) and policies.rule("hipaa") is not None
    assert policies.rule("pci-dss-compliant") == BUILTIN.rule("pci-dss-compliant")
    out = intentc("check", "intents/", "--topology", "cluster.yaml", cwd=repo)
    assert out.returncode == 1 and "tagged hipaa, which requires" in out.stdout and "HIPAA 164.312" in out.stdout


def test_a_bad_policy_file_is_a_positioned_schema_error(tmp_path: Path) -> None:
    bad = policy_doc("oops", "exclusive-domian")
    repo = write_repo(tmp_path, policies={"oops.yaml": bad})
    out = intentc("check", "intents/", cwd=repo)
    assert out.returncode == 1
    assert "policies/oops.yaml:6:14: error[E0213]" in out.stdout, out.stdout
    assert "Traceback" not in out.stderr


def test_policy_diagnostics_name_the_file_as_the_intents_are_named(tmp_path: Path) -> None:
    """The search for policies/ resolves the input path; the files it finds are still shown
    relative to the working directory in every format (they were absolute, which a GitHub
    annotation or a SARIF viewer cannot tie to the repository's file)."""
    repo = write_repo(tmp_path, PAYMENTS, {"oops.yaml": policy_doc("oops", "exclusive-domian")})
    shown = {"text": "policies/oops.yaml:6:14: error[E0213]", "json": '"file": "policies/oops.yaml"',
             "github": "::error file=policies/oops.yaml,line=6", "sarif": '"uri": "policies/oops.yaml"',
             "junit": 'file="policies/oops.yaml"'}
    for fmt, expected in shown.items():
        out = intentc("check", "intents/", "-o", fmt, cwd=repo)
        assert out.returncode == 1, out.stderr
        assert expected in out.stdout and str(repo) not in out.stdout, (fmt, out.stdout)
    inside = intentc("check", ".", cwd=repo / "intents")
    assert "../policies/oops.yaml:6:14: error[E0213]" in inside.stdout and str(repo) not in inside.stdout
    absolute = intentc("check", str(repo / "intents"), cwd=tmp_path.parent)     # absolute inputs, absolute paths
    assert f"{repo.resolve()}/policies/oops.yaml:6:14: error[E0213]" in absolute.stdout, absolute.stdout


def test_a_policy_outside_policies_is_a_warning(tmp_path: Path) -> None:
    doc = policy_doc("x", "no-repack")
    repo = write_repo(tmp_path)
    (repo / "intents" / "policy.yaml").write_text(doc)
    out = intentc("check", "intents/", cwd=repo)
    assert "intents/policy.yaml:2:7: warning[W1003]" in out.stdout, out.stdout


# -- rendered objects ----------------------------------------------------------

STATEFUL = """\
tenant payments { tier: gold }
intent ledger {
  trigger: on push
  action: training image "ledger:1"
  context: tenant payments, tags [stateful, pci-dss-compliant]
  constraints: gpus 8
}
"""


def objects(text: str, version: KubeVersion = KubeVersion(1, 33)) -> dict[tuple[str, str], dict[str, Any]]:
    prog = program_of(text)
    plan, _ = make_plan(prog, loaded("nvl-a"))
    return {(m.ref.kind, m.ref.name): dict(m.body) for m in render(prog, plan, "a" * 40, version).manifests}


def test_stateful_gets_a_claim_a_budget_and_the_mount() -> None:
    objs = objects(STATEFUL)
    claim = objs[("PersistentVolumeClaim", "ledger-state")]
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}
    pdb = objs[("PodDisruptionBudget", "ledger")]
    assert pdb["apiVersion"] == "policy/v1" and pdb["spec"]["maxUnavailable"] == 0
    jobs = [name for kind, name in objs if kind == "Job"]
    assert "ledger" in jobs and "ledger-fallback-power" in jobs         # every step of the chain mounts it
    for name in jobs:
        pod = objs[("Job", name)]["spec"]["template"]["spec"]
        assert pod["volumes"] == [{"name": "intentc-state", "persistentVolumeClaim": {"claimName": "ledger-state"}}]
        assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/var/lib/intentc/state"


def test_pci_dss_gets_a_default_deny_network_policy_in_the_namespace() -> None:
    np = objects(STATEFUL)[("NetworkPolicy", "intentc-default-deny")]
    assert np["metadata"]["namespace"] == "payments"
    assert np["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    untagged = STATEFUL.replace("tags [stateful, pci-dss-compliant]", "tags [nightly]")
    assert not [k for k in objects(untagged) if k[0] in ("NetworkPolicy", "PersistentVolumeClaim",
                                                           "PodDisruptionBudget")]


def test_rendered_policy_objects_validate() -> None:
    from tests.kube_schema import validate_manifest
    for (kind, name), body in objects(STATEFUL).items():
        assert validate_manifest(body) == [], (kind, name)


# -- no-repack -----------------------------------------------------------------

def test_stateful_intents_are_never_repacked(monkeypatch: pytest.MonkeyPatch) -> None:
    """On two 8-GPU nodes, P0 j3 (3 GPUs) is moved so that P0 j4 (5 GPUs) fits at the same
    instant.  Tagged stateful (no-repack), j3 is never offered to the repacker."""
    from intentc.plan import schedule

    offered: list[set[str]] = []
    real = schedule.make_room

    def spy(placer: Any, req: Any, view: Any, limit: Any, seats: Any) -> Any:
        offered.append(set(seats))
        return real(placer, req, view, limit, seats)

    monkeypatch.setattr(schedule, "make_room", spy)
    nodes = tuple(ir.TopologyNode(n, 8, "H100-80GB", "80Gi", domains=(("zone", "z"), ("rack", "r1")))
                  for n in ("n1", "n2"))
    topo = LoadedTopology(ir.Topology("t", ("zone", "rack", "nvlink", "node"), nodes),
                          tuple((n.name, default_matrix(n.gpu_count, n.gpu_product)) for n in nodes))

    def plan_with(tags: tuple[str, ...]) -> Any:
        def job(name: str, gpus: int, sla: str, tagged: tuple[str, ...] = ()) -> ir.Intent:
            return ir.Intent(name, ir.Trigger("push"), ir.Action("batch", "img"), ir.Context(ir.Ref("team-a"), tagged),
                             ir.Constraints(gpus=ir.GpuRequest(gpus, within="node"), sla=sla, duration="1h"))
        intents = (job("j0", 6, "P1"), job("j1", 1, "P0"), job("j2", 3, "P2"), job("j3", 3, "P0", tags),
                   job("j4", 5, "P0"))
        offered.clear()
        return make_plan(ir.Program(intents=intents), topo)[0]

    plan_with(())
    assert any("j3" in seats for seats in offered), "the scenario repacks j3 when it is not pinned"
    plan = plan_with(("stateful",))
    assert offered and not any("j3" in seats for seats in offered)
    assert not plan.unplaced


def test_requirements_vocabulary_matches_the_schema() -> None:
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "policy.schema.json").read_text())
    enum = schema["properties"]["spec"]["properties"]["requires"]["items"]["enum"]
    assert enum == [r.value for r in Requirement]


def _workloads() -> list[dict[str, Any]]:
    """A Job, a CronJob and a Deployment whose pods already have env, volumes and mounts."""
    def pod() -> dict[str, Any]:
        return {"containers": [{"name": "main", "image": "i", "env": [{"name": "Z", "value": "1"}],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                               {"name": "side", "image": "s"}],
                "volumes": [{"name": "data", "emptyDir": {}}]}
    meta = {"name": "w", "namespace": "t", "labels": {"a": "b"}}
    return [{"apiVersion": "batch/v1", "kind": "Job", "metadata": dict(meta),
             "spec": {"parallelism": 2, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod()}}},
            {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": dict(meta),
             "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": pod()}}}}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(meta),
             "spec": {"replicas": 1, "template": {"spec": pod()}}}]


def _deep_with_state_volume(body: dict[str, Any], claim: str) -> dict[str, Any]:
    """The change written plainly on a deep copy: what the renderer must produce."""
    import copy
    out = copy.deepcopy(body)
    spec = out["spec"]["jobTemplate"]["spec"] if out["kind"] == "CronJob" else out["spec"]
    pod = spec["template"]["spec"]
    for c in pod["containers"]:
        c.setdefault("env", []).append({"name": "INTENTC_STATE_DIR", "value": "/var/lib/intentc/state"})
        c["env"].sort(key=lambda e: e["name"])
        c.setdefault("volumeMounts", []).append({"name": "intentc-state", "mountPath": "/var/lib/intentc/state"})
    pod.setdefault("volumes", []).append({"name": "intentc-state", "persistentVolumeClaim": {"claimName": claim}})
    return out


def test_the_state_volume_and_env_leave_the_rendered_body_as_it_was() -> None:
    # The workload copies are new only down to the containers and share the rest with the
    # body they were made from; appending to a shared list would change that body too.
    from intentc.render.policy_objects import with_state_volume
    intent = ir.Intent("w", ir.Trigger("push"), ir.Action("batch", "i"), ir.Context(ir.Ref("t")))
    for body in _workloads():
        before = json.dumps(body, sort_keys=False)
        out = with_state_volume(body, intent)
        assert json.dumps(body, sort_keys=False) == before
        assert json.dumps(out, sort_keys=False) == json.dumps(_deep_with_state_volume(body, "w-state"),
                                                              sort_keys=False)


def test_a_revision_is_searched_for_rules_where_the_working_tree_is() -> None:
    from intentc.policy.load import policy_folders
    assert policy_folders("intents/nlp") == ("intents/nlp/policies", "intents/policies", "policies")
    assert policy_folders("") == ("policies",)
    assert policy_folders("./intents/") == ("intents/policies", "policies")
