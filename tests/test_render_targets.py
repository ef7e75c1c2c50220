"""The `dra` and `kueue` render targets (pure rendering; the cluster side is in
tests/test_render_dra_kube.py and tests/test_render_kueue_kube.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from intentc import ir
from intentc.cli import app
from intentc.plan.model import NodeAllocation
from intentc.render import render
from intentc.render.capabilities import KubeVersion
from intentc.render.kueue import split_quota, topology_levels
from intentc.render.model import Rendered
from intentc.render.output import manifest_files
from tests.golden_support import assert_golden
from tests.kube_schema import validate_manifest
from tests.render_cases import SHA_A, sample_plan, sample_program
from tests.topologies import topology, two_nvl72_halves

GOLDEN = Path(__file__).parent / "golden" / "render"
V137 = KubeVersion(1, 37)
FIXTURES = Path(__file__).parent / "fixtures"


def node(name: str, nvlink: str, rack: str = "r1", product: str = "H100-80GB", gpus: int = 8) -> ir.TopologyNode:
    return ir.TopologyNode(name, gpus, product, "80Gi", "192", "2Ti",
                           (("zone", "z1"), ("rack", rack), ("nvlink", nvlink), ("node", name)))


def sample_topology() -> ir.Topology:
    """The sample plan's nodes: gpu-a2/a3 share a multi-node NVLink domain."""
    return ir.Topology("sample", ("zone", "rack", "nvlink", "node"), (
        node("gpu-a1", "gpu-a1"), node("gpu-a2", "nvl-1"), node("gpu-a3", "nvl-1"),
        node("gpu-a4", "gpu-a4"), node("gpu-a5", "gpu-a5"),
        node("gpu-b1", "gpu-b1", "r2", "A100-80GB"), node("gpu-b2", "gpu-b2", "r2", "A100-80GB")))


def rendered(target: str, plan: Any = None) -> Rendered:
    return render(sample_program(), plan or sample_plan(), SHA_A, V137, target, sample_topology())


def bundle(r: Rendered) -> str:
    return "".join(f"# {name}\n{text}" for name, text in manifest_files(r.manifests).items())


def bodies(r: Rendered, kind: str) -> dict[str, dict[str, Any]]:
    return {m.ref.name: dict(m.body) for m in r.manifests if m.ref.kind == kind}


def pod(body: dict[str, Any]) -> dict[str, Any]:
    spec = body["spec"]
    return dict(spec["template"]["spec"]) if "template" in spec else dict(spec["jobTemplate"]["spec"]["template"]["spec"])


# -- dra ---------------------------------------------------------------------

def test_dra_golden_and_deterministic() -> None:
    assert bundle(rendered("dra")) == bundle(rendered("dra"))
    assert_golden(GOLDEN / "sample-dra.yaml", bundle(rendered("dra")))


def test_dra_manifests_match_the_openapi_schema() -> None:
    for m in rendered("dra").manifests:
        assert validate_manifest(m.body) == [], str(m.ref)


def test_dra_claims_name_exactly_the_planned_devices() -> None:
    r = rendered("dra")
    templates = bodies(r, "ResourceClaimTemplate")
    workloads = {**bodies(r, "Job"), **bodies(r, "Deployment")}
    assert "nvidia.com/gpu:" not in bundle(r).replace("key: nvidia.com/gpu", ""), "no device-plugin requests"
    embed = pod(workloads["embed"])
    assert embed["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "embed-gpus"}]
    assert embed["containers"][0]["resources"]["claims"] == [{"name": "gpus"}]
    req = templates["embed-gpus"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert req["count"] == 8 and req["deviceClassName"] == "gpu.nvidia.com"
    exprs = [s["cel"]["expression"] for s in req["selectors"]]
    assert exprs == ['device.attributes["gpu.nvidia.com"].index in [0, 1, 2, 3, 4, 5, 6, 7]',
                     'device.attributes["gpu.nvidia.com"].productName == "H100-80GB"']
    pcie = templates["pcie-job-gpus"]["spec"]["spec"]["devices"]
    assert 'index in [0, 1, 4, 5]' in pcie["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
    assert '"A100-80GB"' in pcie["requests"][0]["exactly"]["selectors"][1]["cel"]["expression"]
    assert "constraints" not in pcie, "a node-sized NVLink domain has no clique to match"
    # gpu-a2/a3 are one multi-node clique: the claim keeps its devices on one clique
    assert templates["train-gpus"]["spec"]["spec"]["devices"]["constraints"] == [
        {"requests": ["gpus"], "matchAttribute": "gpu.nvidia.com/cliqueID"}]
    assert templates["train-gpus"]["spec"]["metadata"]["labels"]["intentc.dev/intent"] == "train"
    # pods still go to their planned nodes
    assert embed["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a1"}
    for m in r.manifests:
        if m.ref.kind == "ResourceClaimTemplate":
            assert m.step == 2 and m.intent is not None, "claim templates exist before any workload"


def test_dra_splits_a_gang_whose_nodes_have_different_index_sets() -> None:
    plan = sample_plan()
    train = plan.placement("train")
    assert train is not None
    moved = replace(train, allocations=(train.allocations[0],
                                        replace(train.allocations[1], gpus=(0, 1, 2, 3, 8, 9, 10, 11))))
    plan = replace(plan, placements=tuple(moved if p.intent == "train" else p for p in plan.placements))
    r = render(sample_program(), plan, SHA_A, V137, "dra", sample_topology())
    templates = bodies(r, "ResourceClaimTemplate")
    assert {"train-0-gpus", "train-1-gpus"} <= set(templates) and "train" not in bodies(r, "Job")
    exprs = [templates[t]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
             for t in ("train-0-gpus", "train-1-gpus")]
    assert exprs[0].endswith("in [0, 1, 2, 3, 4, 5, 6, 7]") and exprs[1].endswith("in [0, 1, 2, 3, 8, 9, 10, 11]")
    [choice] = [c for c in r.choices if c.intent == "train"]
    assert choice.decision == "per-node" and "indices differ" in choice.reason
    # device-plugin keeps one indexed Job: its indices are advisory anyway
    dp = render(sample_program(), plan, SHA_A, V137, "device-plugin", sample_topology())
    assert "train" in bodies(dp, "Job")


def test_serving_replicas_on_nodes_with_different_sets_select_from_the_union() -> None:
    plan = sample_plan()
    chat = plan.placement("chat")
    assert chat is not None
    two = replace(chat, allocations=(NodeAllocation("gpu-b1", (0, 1)), NodeAllocation("gpu-b2", (2, 3))))
    plan = replace(plan, placements=tuple(two if p.intent == "chat" else p for p in plan.placements))
    r = render(sample_program(), plan, SHA_A, V137, "dra", sample_topology())
    [choice] = [c for c in r.choices if c.intent == "chat"]
    assert choice.decision == "union" and "0,1,2,3" in choice.reason


def test_dra_needs_kubernetes_1_34(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["compile", str(FIXTURES / "dra" / "intents"), "-t",
                                   str(FIXTURES / "dra" / "cluster.yaml"), "--out-dir", str(tmp_path / "o"),
                                   "--commit", SHA_A, "--kube-version", "1.33", "--render-target", "dra"])
    assert res.exit_code == 2, res.output
    assert "render target 'dra' needs Kubernetes 1.34 or later" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


# -- kueue -------------------------------------------------------------------

def test_kueue_golden_and_deterministic() -> None:
    assert bundle(rendered("kueue")) == bundle(rendered("kueue"))
    assert_golden(GOLDEN / "sample-kueue.yaml", bundle(rendered("kueue")))


def test_kueue_cluster_objects() -> None:
    r = rendered("kueue")
    flavors = bodies(r, "ResourceFlavor")
    assert {n: f["spec"]["nodeLabels"] for n, f in flavors.items()} == {
        "a100-80gb": {"nvidia.com/gpu.product": "A100-80GB"}, "h100-80gb": {"nvidia.com/gpu.product": "H100-80GB"}}
    assert all(f["spec"]["topologyName"] == "sample" for f in flavors.values())
    levels = [lvl["nodeLabel"] for lvl in bodies(r, "Topology")["sample"]["spec"]["levels"]]
    # nvlink domains are node-sized on most nodes: no clique level, the node is the domain
    assert levels == ["topology.kubernetes.io/zone", "topology.kubernetes.io/rack", "kubernetes.io/hostname"]
    queues = bodies(r, "ClusterQueue")
    assert {n: q["spec"]["fairSharing"]["weight"] for n, q in queues.items()} == {"team-a": "4", "team-b": "1"}
    assert {q["spec"]["cohortName"] for q in queues.values()} == {"intentc"}

    def gpu_quota(spec: dict[str, Any]) -> dict[str, str]:
        return {f["name"]: r2["nominalQuota"] for f in spec["resourceGroups"][0]["flavors"]
                for r2 in f["resources"] if r2["name"] == "nvidia.com/gpu"}
    # team-a's 32 GPUs over 40 H100 and 16 A100, in proportion; the cohort holds the rest
    assert gpu_quota(queues["team-a"]["spec"]) == {"a100-80gb": "9", "h100-80gb": "23"}
    assert gpu_quota(queues["team-b"]["spec"]) == {"a100-80gb": "0", "h100-80gb": "0"}
    assert gpu_quota(bodies(r, "Cohort")["intentc"]["spec"]) == {"a100-80gb": "7", "h100-80gb": "17"}
    local = [m for m in r.manifests if m.ref.kind == "LocalQueue"]
    assert {(m.ref.namespace, m.ref.name, m.body["spec"]["clusterQueue"]) for m in local} == {
        ("team-a", "intentc", "team-a"), ("team-b", "intentc", "team-b")}
    assert {n: w["value"] for n, w in bodies(r, "WorkloadPriorityClass").items()} == {
        "intentc-p0": 4000, "intentc-p1": 3000, "intentc-p2": 2000, "intentc-p3": 1000}


def test_kueue_tenant_namespaces_allow_what_kueue_may_admit() -> None:
    """A ResourceQuota at the tenant's quota (or its planned GPUs) would forbid the pods of
    Jobs Kueue admitted on GPUs the cohort lent: under kueue it allows every GPU (56)."""
    hard = {n: q["spec"]["hard"] for n, q in
            ((m.ref.namespace, dict(m.body)) for m in rendered("kueue").manifests if m.ref.kind == "ResourceQuota")}
    assert {n: h["requests.nvidia.com/gpu"] for n, h in hard.items()} == {"team-a": "56", "team-b": "56"}
    plugin = {m.ref.namespace: dict(m.body)["spec"]["hard"]["requests.nvidia.com/gpu"]
              for m in rendered("device-plugin").manifests if m.ref.kind == "ResourceQuota"}
    assert plugin["team-a"] == "32", "other targets keep the tenant's own bound"


def test_kueue_workloads_are_suspended_queued_and_not_pinned() -> None:
    r = rendered("kueue")
    jobs = bodies(r, "Job")
    for name, job in jobs.items():
        assert job["spec"]["suspend"] is True, name
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "intentc"
        spec = pod(job)
        assert "kubernetes.io/hostname" not in spec.get("nodeSelector", {}) and "affinity" not in spec, name
    assert jobs["train"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "intentc-p0"
    assert "kueue.x-k8s.io/priority-class" not in jobs["tokenize"]["metadata"]["labels"], "no SLA, no class"
    assert pod(jobs["train"])["nodeSelector"] == {"nvidia.com/gpu.product": "H100-80GB"}
    assert pod(jobs["train"])["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert jobs["train"]["metadata"]["annotations"]["intentc.dev/nodes"] == "gpu-a2,gpu-a3", "the plan, for comparison"
    [uneven] = [c for c in r.choices if c.intent == "train-uneven"]
    assert uneven.decision == "per-node" and "admits each of those Jobs on its own" in uneven.reason


@pytest.mark.parametrize(("within", "prefer", "expected"), [
    ("rack", None, {"kueue.x-k8s.io/podset-required-topology": "topology.kubernetes.io/rack"}),
    (None, "zone", {"kueue.x-k8s.io/podset-preferred-topology": "topology.kubernetes.io/zone"}),
    ("node", "rack", {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}),
    ("nvlink", None, {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}),
    (None, None, {}),
])
def test_within_and_prefer_become_podset_topology_annotations(within: str | None, prefer: str | None,
                                                              expected: dict[str, str]) -> None:
    program = sample_program()
    intents = tuple(replace(i, constraints=replace(i.constraints, gpus=replace(i.constraints.gpus, within=within,
                                                                                 prefer=prefer)))
                    if i.name == "train" and i.constraints.gpus else i for i in program.intents)
    r = render(replace(program, intents=intents), sample_plan(), SHA_A, V137, "kueue", sample_topology())
    ann = pod(bodies(r, "Job")["train"]).get("metadata", {})
    got = {k: v for k, v in bodies(r, "Job")["train"]["spec"]["template"]["metadata"]["annotations"].items()
           if k.startswith("kueue.x-k8s.io/")}
    assert got == expected, ann


def test_multi_node_cliques_become_a_topology_level() -> None:
    topo = ir.Topology("gb", ("zone", "rack", "nvlink", "node"),
                       tuple(node(f"gb-{i}", "nvl-a" if i < 2 else "nvl-b") for i in range(4)))
    assert topology_levels(topo) == ["topology.kubernetes.io/zone", "topology.kubernetes.io/rack",
                                     "nvidia.com/gpu.clique", "kubernetes.io/hostname"]
    no_zone = replace(topo, nodes=(replace(topo.nodes[0], domains=topo.nodes[0].domains[1:]),) + topo.nodes[1:])
    assert "topology.kubernetes.io/zone" not in topology_levels(no_zone), "a level only some nodes have"


def test_split_quota() -> None:
    assert split_quota(32, {"a": 16, "h": 40}) == {"a": 9, "h": 23}
    assert split_quota(100, {"a": 16, "h": 40}) == {"a": 16, "h": 40}
    assert split_quota(1, {"a": 8, "h": 8}) == {"a": 1, "h": 0}
    assert split_quota(5, {}) == {}


MIXED_TOPOLOGY = topology("mixed", ["h1", "h2"], two_nvl72_halves())


def _gang(name: str, gpus: int, product: str, scope: str) -> str:
    return (f'intent {name} {{\n  trigger: on push\n  action: batch image "registry.example/{name}:1"\n'
            f'  context: tenant team-x\n  constraints: cpu 1, memory 1Gi, gpus {gpus} x "{product}" within {scope}, '
            f'duration 1h\n}}\n')


def test_within_maps_to_the_level_of_the_jobs_own_product_topology(tmp_path: Path) -> None:
    """GB200 trays in multi-node NVLink domains beside HGX nodes (each its own domain): Kueue's
    TAS skips a node without every level's label, so each product gets its own Topology, and a
    2-tray `within nvlink` gang asks for the clique, not the hostname it could never fit in."""
    from intentc.pipeline import compile_paths

    (tmp_path / "cluster.yaml").write_text(MIXED_TOPOLOGY)
    (tmp_path / "main.intent").write_text(
        "tenant team-x { tier: gold }\n\n" + _gang("nvl", 8, "GB200", "nvlink") + _gang("rack", 16, "H100-80GB", "rack")
        + _gang("node", 8, "H100-80GB", "node") + _gang("tray", 4, "GB200", "node"))
    result = compile_paths([str(tmp_path / "main.intent")], str(tmp_path / "cluster.yaml"), SHA_A, V137, "kueue")
    assert result.ok and result.rendered is not None, [d.message for d in result.diagnostics]
    r = result.rendered
    topologies = {n: [lvl["nodeLabel"] for lvl in t["spec"]["levels"]] for n, t in bodies(r, "Topology").items()}
    assert topologies == {
        "mixed-gb200": ["topology.kubernetes.io/zone", "topology.kubernetes.io/rack", "nvidia.com/gpu.clique",
                        "kubernetes.io/hostname"],
        "mixed-h100-80gb": ["topology.kubernetes.io/zone", "topology.kubernetes.io/rack", "kubernetes.io/hostname"]}
    assert {n: f["spec"]["topologyName"] for n, f in bodies(r, "ResourceFlavor").items()} == {
        "gb200": "mixed-gb200", "h100-80gb": "mixed-h100-80gb"}
    jobs = bodies(r, "Job")
    required = {n: j["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"]
                for n, j in jobs.items()}
    assert required == {"nvl": "nvidia.com/gpu.clique", "rack": "topology.kubernetes.io/rack",
                        "node": "kubernetes.io/hostname", "tray": "kubernetes.io/hostname"}
    assert jobs["nvl"]["spec"]["parallelism"] == 2, "one gang of two trays"
