"""Renderer: golden manifests, schema validity, version-dependent choices, stamps."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from intentc import ir
from tests.kube_schema import validate_manifest
from intentc.plan.model import NodeAllocation, Placement
from intentc.render import render
from intentc.render.capabilities import KubeVersion
from intentc.render.model import COMMIT_ANNOTATION, SPEC_HASH_ANNOTATION, Manifest, Rendered
from intentc.objectmeta import INTENT_LABEL, MANAGED_BY_LABEL, TENANT_LABEL
from intentc.render.nccl import nccl_env, weakest_link
from intentc.render.output import manifest_files
from intentc.render.stamp import spec_hash
from tests.golden_support import assert_golden
from tests.render_cases import SHA_A, SHA_B, sample_plan, sample_program

GOLDEN = Path(__file__).parent / "golden" / "render"
V133, V137 = KubeVersion(1, 33), KubeVersion(1, 37)


def rendered(version: KubeVersion = V133, commit: str = SHA_A) -> Rendered:
    return render(sample_program(), sample_plan(), commit, version)


def bundle(r: Rendered) -> str:
    """All files of a render as one text: `# file` headers, then the YAML."""
    return "".join(f"# {name}\n{text}" for name, text in manifest_files(r.manifests).items())


def find(r: Rendered, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    for m in r.manifests:
        if m.ref.kind == kind and m.ref.name == name and namespace in (None, m.ref.namespace):
            return dict(m.body)
    raise AssertionError(f"no {kind} {name} in {[str(m.ref) for m in r.manifests]}")


def pod_spec(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["template"]["spec"]


def env_of(job: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in pod_spec(job)["containers"][0].get("env", [])}


def test_golden() -> None:
    assert_golden(GOLDEN / "sample.yaml", bundle(rendered()))


def test_render_is_deterministic() -> None:
    assert bundle(rendered()) == bundle(rendered())
    names = list(manifest_files(rendered().manifests))
    assert len(names) == len(set(names)) == len(rendered().manifests)
    steps = [n.split("-", 1)[0] for n in names]
    assert steps == sorted(steps), "file names sort by apply step"


@pytest.mark.parametrize("version", [V133, V137], ids=["k8s-1.33", "k8s-1.37"])
def test_every_manifest_matches_the_openapi_schema(version: KubeVersion) -> None:
    for m in rendered(version).manifests:
        assert validate_manifest(m.body) == [], str(m.ref)


def test_schema_check_rejects_what_a_server_would() -> None:
    job = find(rendered(), "Job", "embed")
    container = lambda b: pod_spec(b)["containers"][0]  # noqa: E731
    numeric = copy.deepcopy(job)
    container(numeric)["resources"]["limits"]["nvidia.com/gpu"] = 8
    unknown = copy.deepcopy(job)
    unknown["spec"]["completionMod"] = "Indexed"
    snake = copy.deepcopy(job)
    snake["spec"]["backoff_limit"] = snake["spec"].pop("backoffLimit")
    missing = copy.deepcopy(job)
    del pod_spec(missing)["containers"]
    wrong_type = copy.deepcopy(job)
    wrong_type["spec"]["parallelism"] = "2"
    assert any("nvidia.com/gpu" in e for e in validate_manifest(numeric))
    assert any("completionMod" in e and "unknown field" in e for e in validate_manifest(unknown))
    assert any("backoff_limit" in e for e in validate_manifest(snake))
    assert any("containers" in e and "required" in e for e in validate_manifest(missing))
    assert any("parallelism" in e for e in validate_manifest(wrong_type))
    assert validate_manifest({"apiVersion": "example.com/v1", "kind": "Widget"}) == ["no schema for example.com/v1 Widget"]


def test_labels_annotations_and_apply_steps() -> None:
    r = rendered()
    for m in r.manifests:
        meta = m.body["metadata"]
        assert meta["labels"][MANAGED_BY_LABEL] == "intentc"
        assert meta["annotations"][COMMIT_ANNOTATION] == SHA_A
        assert meta["annotations"][SPEC_HASH_ANNOTATION] == m.spec_hash == spec_hash(m.body)
        if m.intent:
            assert meta["labels"][INTENT_LABEL] == m.intent
            assert meta["labels"][TENANT_LABEL] == meta["namespace"] == m.tenant
    kinds = [m.ref.kind for m in r.manifests]
    assert kinds[:10] == ["CustomResourceDefinition", "Namespace", "Namespace", "RoleBinding", "ResourceQuota",
                          "ResourceQuota"] + ["PriorityClass"] * 4
    assert [m.step for m in r.manifests] == sorted(m.step for m in r.manifests)


def test_tenant_objects() -> None:
    r = rendered()
    ns = find(r, "Namespace", "team-a")
    assert ns["metadata"]["labels"][TENANT_LABEL] == "team-a"
    rb = find(r, "RoleBinding", "intentc-tenant-edit")
    assert rb["metadata"]["namespace"] == "team-a"
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
    assert rb["subjects"][0]["name"] == "team-a-devs"
    quota = find(r, "ResourceQuota", "intentc-tenant-quota")
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "32", "requests.cpu": "256", "requests.memory": "2Ti"}
    # team-b has neither group nor quota: no RoleBinding, no ResourceQuota
    # every tenant is bounded: team-b declares no quota and gets the GPUs the plan gave it
    assert [m.ref.namespace for m in r.manifests if m.ref.kind in ("RoleBinding", "ResourceQuota")] == \
        ["team-a", "team-a", "team-b"]
    planned_b = next(s.allocated_gpus for s in sample_plan().tenants if s.tenant == "team-b")
    assert find(r, "ResourceQuota", "intentc-tenant-quota", "team-b")["spec"]["hard"] == \
        {"requests.nvidia.com/gpu": str(planned_b)}
    values = [find(r, "PriorityClass", f"intentc-p{i}")["value"] for i in range(4)]
    assert values == sorted(values, reverse=True) and len(set(values)) == 4


def test_gpu_binding_on_one_nvlink_node() -> None:
    job = find(rendered(), "Job", "embed")
    spec = pod_spec(job)
    res = spec["containers"][0]["resources"]
    assert res["limits"]["nvidia.com/gpu"] == res["requests"]["nvidia.com/gpu"] == "8"
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a1"}
    assert spec["priorityClassName"] == "intentc-p1"
    ann = job["metadata"]["annotations"]
    assert ann["intentc.dev/gpu-indices"] == "0,1,2,3,4,5,6,7"
    assert ann["intentc.dev/numa-nodes"] == "0,1"
    assert ann["intentc.dev/interconnect"] == "nvlink"
    env = env_of(job)
    assert env["NCCL_P2P_LEVEL"] == "NVL"
    assert env["INTENTC_BATCH"] == "256" and env["INTENTC_KV_CACHE"] == "retain"   # the plan's sizing
    assert "NCCL_IB_HCA" not in env


def test_pcie_links_decide_p2p() -> None:
    env = env_of(find(rendered(), "Job", "pcie-job"))
    assert env["NCCL_P2P_DISABLE"] == "1" and "NCCL_P2P_LEVEL" not in env      # SYS link
    serve = find(rendered(), "Deployment", "chat")
    assert env_of(serve)["NCCL_P2P_LEVEL"] == "PIX"
    p = Placement("x", "t", (NodeAllocation("n", (0, 1), (0,), (), "NODE"),), ())
    assert nccl_env(p, p.allocations) == {"NCCL_P2P_LEVEL": "PHB"}
    assert weakest_link([NodeAllocation("a", (0, 1), link="NV4"), NodeAllocation("b", (0, 1), link="PXB")]) == "PXB"
    assert weakest_link([NodeAllocation("a", (0, 1), link="unknown")]) == "unknown"


def test_cpu_only_intent_has_no_gpu_binding() -> None:
    job = find(rendered(), "Job", "tokenize")
    spec = pod_spec(job)
    assert "nodeSelector" not in spec and "affinity" not in spec and "tolerations" not in spec
    assert "nvidia.com/gpu" not in spec["containers"][0]["resources"]["requests"]
    assert env_of(job)["INTENTC_CONSUMES"] == "corpus-raw=s3://acme/corpus/raw"
    assert spec["containers"][0]["command"] == ["tok", "--in", "/data"]


def test_multi_node_gang_is_an_indexed_job() -> None:
    r = rendered()
    job = find(r, "Job", "train")
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == 2
    assert env_of(job)["INTENTC_RANK"] == {"fieldRef": {"fieldPath":
                                                       "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    assert [c.decision for c in r.choices if c.intent == "train"] == ["indexed"]
    spec = pod_spec(find(r, "Job", "train"))
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["gpu-a2", "gpu-a3"]
    anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"][INTENT_LABEL] == "train"
    env = env_of(find(r, "Job", "train"))
    assert env["NCCL_IB_HCA"] == "mlx5_0,mlx5_1" and env["INTENTC_WORLD_SIZE"] == "2"


def test_uneven_gang_gets_one_job_per_node() -> None:
    for version in (V133, V137):
        r = rendered(version)
        chain = [m.ref.name for m in r.manifests if m.intent == "train-uneven"]
        jobs = [m for m in r.manifests if m.intent == "train-uneven" and "fallback" not in m.ref.name]
        assert [m.ref.name for m in jobs] == ["train-uneven-0", "train-uneven-1"]
        # each Job of the gang has its own chain of suspended steps
        assert chain == [f"train-uneven-{i}{s}" for i in (0, 1) for s in ("", "-fallback-chunk", "-fallback-power")]
        gpus = [pod_spec(dict(m.body))["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] for m in jobs]
        assert gpus == ["8", "4"]
        assert [env_of(dict(m.body))["INTENTC_RANK"] for m in jobs] == ["0", "1"]
        assert [pod_spec(dict(m.body))["nodeSelector"]["kubernetes.io/hostname"] for m in jobs] == ["gpu-a4", "gpu-a5"]


def test_serving_is_a_deployment_and_a_service() -> None:
    r = rendered()
    dep, svc = find(r, "Deployment", "chat"), find(r, "Service", "chat")
    assert dep["spec"]["selector"]["matchLabels"] == svc["spec"]["selector"]
    assert svc["spec"]["ports"][0]["port"] == svc["spec"]["ports"][0]["targetPort"] == 8080
    assert pod_spec(dep)["restartPolicy"] == "Always"
    assert pod_spec(dep)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"


def test_serving_replicas_share_the_planned_gpus() -> None:
    prog = sample_program()
    chat = prog.intent("chat")
    assert chat is not None
    three = replace(chat, action=replace(chat.action, replicas=3))
    r = render(replace(prog, intents=tuple(three if i.name == "chat" else i for i in prog.intents)),
               sample_plan(), SHA_A)
    dep = find(r, "Deployment", "chat")
    # 2 planned GPUs never become 3 × 1: replicas are cut to what the plan holds (E0903 refuses
    # such an intent at check time; this is the renderer's own guard).
    per_replica = int(pod_spec(dep)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    assert dep["spec"]["replicas"] * per_replica == 2
    assert (dep["spec"]["replicas"], per_replica) == (2, 1)
    assert [c.decision for c in r.choices if c.intent == "chat"] == ["replicas-cut"]


def _hashes(r: Rendered) -> dict[str, str]:
    return {str(m.ref): m.spec_hash for m in r.manifests}


def test_spec_hash_ignores_the_commit_and_tracks_content() -> None:
    a, b = rendered(commit=SHA_A), rendered(commit=SHA_B)
    assert _hashes(a) == _hashes(b)
    assert all(m.commit == SHA_B for m in b.manifests)
    prog = sample_program()
    changed = tuple(replace(i, action=replace(i.action, image="ghcr.io/acme/job:2.0")) if i.name == "pcie-job" else i
                    for i in prog.intents)
    c = render(replace(prog, intents=changed), sample_plan(), SHA_B)
    differ = {k for k in _hashes(a) if _hashes(a)[k] != _hashes(c)[k]}
    assert differ == {"Job team-b/pcie-job", "Job team-b/pcie-job-fallback-power"}     # and its chain


def test_unscheduled_intents_are_not_rendered_and_targets_are_checked() -> None:
    plan = sample_plan()
    plan = replace(plan, waves=tuple(tuple(n for n in w if n != "pcie-job") for w in plan.waves))
    r = render(sample_program(), plan, SHA_A)
    assert not [m for m in r.manifests if m.intent == "pcie-job"]
    assert "intentc-p3" not in {m.ref.name for m in r.manifests}, "no PriorityClass nobody uses"
    with pytest.raises(ValueError, match="available: device-plugin, dra, kueue"):
        render(sample_program(), sample_plan(), SHA_A, target="slurm")
    with pytest.raises(ValueError, match="'dra' needs Kubernetes 1.34"):
        render(sample_program(), sample_plan(), SHA_A, target="dra")


def test_kube_version_parsing() -> None:
    assert KubeVersion.parse("v1.33.2") == V133
    assert KubeVersion.parse("1.37.3-gke.100") == V137
    assert not KubeVersion(1, 32).supported and V133.supported and V137.dra_v1 and not V133.dra_v1
    for bad in ("", "1", "one.two", "1.x"):
        with pytest.raises(ValueError):
            KubeVersion.parse(bad)


def test_manifest_sort_key_is_total() -> None:
    ms: list[Manifest] = list(rendered().manifests)
    assert len({m.sort_key for m in ms}) == len(ms)
    body = ir.Tenant("x")   # the IR is untouched by rendering
    assert body == ir.Tenant("x")


# --- scheduled and manual intents: CronJobs, not Jobs that run at apply time ----

def _with_trigger(trigger: ir.Trigger) -> tuple[ir.Program, str]:
    """The sample program with its first run-to-completion intent re-triggered."""
    program = sample_program()
    first = next(i for i in program.intents if i.action.kind != "serve")
    intents = tuple(replace(i, trigger=trigger) if i is first else i for i in program.intents)
    return replace(program, intents=intents), first.name


@pytest.mark.parametrize("version", [V133, V137], ids=["1.33", "1.37"])
def test_scheduled_intent_renders_a_cronjob(version: KubeVersion) -> None:
    api = "batch/v1"
    program, name = _with_trigger(ir.Trigger("schedule", schedule="30 3 * * *"))
    r = render(program, sample_plan(), SHA_A, version)
    assert not [m for m in r.manifests if m.ref.kind == "Job" and m.ref.name.startswith(name)]
    cron = next(dict(m.body) for m in r.manifests if m.ref.kind == "CronJob" and m.ref.name.startswith(name))
    assert cron["apiVersion"] == api
    assert cron["spec"]["schedule"] == "30 3 * * *" and cron["spec"]["suspend"] is False
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    # the spawned Jobs belong to the CronJob controller: not labelled as intentc's own objects
    template_labels = cron["spec"]["jobTemplate"]["metadata"]["labels"]
    assert MANAGED_BY_LABEL not in template_labels and template_labels[INTENT_LABEL] == name
    assert cron["metadata"]["labels"][MANAGED_BY_LABEL] == "intentc"
    assert validate_manifest(cron) == []


def test_manual_intent_renders_a_suspended_cronjob() -> None:
    program, name = _with_trigger(ir.Trigger("manual"))
    r = render(program, sample_plan(), SHA_A, V137)
    cron = next(dict(m.body) for m in r.manifests if m.ref.kind == "CronJob" and m.ref.name.startswith(name))
    assert cron["spec"]["suspend"] is True
    assert validate_manifest(cron) == []
