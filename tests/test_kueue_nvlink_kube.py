"""`within nvlink` under `--render-target kueue`: Kueue's TAS admits a multi-node NVLink gang
whole inside one NVLink domain, and never splits it across two.

The fake cluster mixes GB200 trays (4 GPUs each, two multi-node NVLink domains of two
trays, labelled `nvidia.com/gpu.clique` the way GPU feature discovery labels them) with
HGX H100 nodes whose NVLink domain is the node (no clique label).  Rendered for Kueue, the
GB200 flavor's Topology carries the clique level and an 8-GPU GB200 gang `within nvlink`
asks for it; before, the whole cluster's nodes decided the level, the HGX nodes made it
the hostname, and no 4-GPU tray could ever hold the gang.  What happened is read from the
API server: the Workload's admission and the pods' nodes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intentc.pipeline import compile_paths
from intentc.render.capabilities import KubeVersion
from intentc.topology.labels import GPU_CLIQUE
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import wait_for
from tests.topologies import topology, two_nvl72_halves

pytestmark = pytest.mark.kube

SHA = "d" * 40
TENANT = "nv-gold"
BUSY = "intentc.test/busy"
TOPOLOGY = topology("nvl", ["nv-h1", "nv-h2"], two_nvl72_halves("nv-"))


def gang(name: str) -> str:
    return (f'intent {name} {{\n  trigger: on push\n  action: training image "busybox:1.36"\n'
            f'  context: tenant {TENANT}\n  constraints: cpu 1, memory 1Gi, gpus 8 x "GB200" within nvlink\n}}\n')


def compiled(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    d = tmp_path / name
    d.mkdir()
    (d / "main.intent").write_text(f"tenant {TENANT} {{ tier: gold }}\n\n" + gang(name))
    result = compile_paths([str(d)], str(tmp_path / "cluster.yaml"), SHA, KubeVersion(1, 37), "kueue")
    assert result.ok and result.rendered is not None, [d.message for d in result.diagnostics]
    return [dict(m.body) for m in result.rendered.manifests]


def kubectl_apply(env: KubeEnv, bodies: list[dict[str, Any]]) -> None:
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=intentc-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}))


def workload_of(env: KubeEnv, job: str) -> dict[str, Any] | None:
    items = env.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", TENANT)["items"]
    return next((w for w in items if any(o["kind"] == "Job" and o["name"] == job
                                         for o in w["metadata"].get("ownerReferences", []))), None)


def condition(w: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    return next((c for c in ((w or {}).get("status") or {}).get("conditions", []) if c["type"] == kind), None)


def admitted(env: KubeEnv, job: str) -> dict[str, Any] | None:
    w = workload_of(env, job)
    c = condition(w, "Admitted")
    return w if c is not None and c["status"] == "True" else None


def pod_nodes(env: KubeEnv, job: str) -> list[str]:
    pods = env.kubectl_json("get", "pods", "-n", TENANT, "-l", f"job-name={job}")["items"]
    return sorted(p["spec"].get("nodeName") or "" for p in pods)


def cliques(env: KubeEnv) -> dict[str, str]:
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(GPU_CLIQUE, "")
            for n in env.kubectl_json("get", "nodes")["items"]}


@pytest.fixture(scope="module")
def cluster(kueue_cluster: KubeEnv, tmp_path_factory: pytest.TempPathFactory) -> tuple[KubeEnv, Path]:
    work = tmp_path_factory.mktemp("nvl")
    (work / "cluster.yaml").write_text(TOPOLOGY)
    add_topology(kueue_cluster, str(work / "cluster.yaml"))
    return kueue_cluster, work


def test_a_two_tray_nvlink_gang_is_admitted_whole_inside_one_domain(cluster: tuple[KubeEnv, Path]) -> None:
    env, work = cluster
    bodies = compiled(work, "gang-one")
    [job] = [b for b in bodies if b["kind"] == "Job"]
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/podset-required-topology"] == GPU_CLIQUE
    kubectl_apply(env, bodies)
    w = wait_for(lambda: admitted(env, "gang-one"), 120, "Kueue to admit the GB200 gang")
    [psa] = w["status"]["admission"]["podSetAssignments"]
    assert psa["count"] == 2 and psa["flavors"]["nvidia.com/gpu"] == "gb200", psa
    nodes = wait_for(lambda: (n := pod_nodes(env, "gang-one")) and len(n) == 2 and all(n) and n,
                     120, "both pods of the gang to be bound to nodes")
    domains = cliques(env)
    assert len(set(nodes)) == 2 and len({domains[n] for n in nodes}) == 1, (nodes, domains)
    assert domains[nodes[0]] in ("nvl-a", "nvl-b")


def test_a_gang_no_domain_can_hold_stays_pending_and_is_not_split(cluster: tuple[KubeEnv, Path]) -> None:
    """One tray of each domain is tainted: 8 GB200 GPUs are free, 4 in each domain.  The gang
    is considered and left pending — not admitted across the two domains — and once the
    taints go, it is admitted inside one domain."""
    env, work = cluster
    wait_for(lambda: condition(workload_of(env, "gang-one"), "Finished"), 120, "the earlier gang to finish")
    busy = ["nv-gb2", "nv-gb4"]
    for n in busy:
        env.kubectl_run("taint", "node", n, f"{BUSY}=true:NoSchedule")
    try:
        kubectl_apply(env, compiled(work, "gang-two"))

        def considered() -> dict[str, Any] | None:
            c = condition(workload_of(env, "gang-two"), "QuotaReserved")
            return c if c is not None and c["status"] == "False" and c.get("message") else None
        pending = wait_for(considered, 120, "Kueue to consider the gang and leave it pending")
        assert admitted(env, "gang-two") is None, pending
        job = env.kubectl_json("get", "job", "gang-two", "-n", TENANT)
        assert job["spec"]["suspend"] is True and pod_nodes(env, "gang-two") == [], "no pod of a pending gang"
    finally:
        for n in busy:
            env.kubectl_run("taint", "node", n, f"{BUSY}=true:NoSchedule-")
    wait_for(lambda: admitted(env, "gang-two"), 120, "Kueue to admit the gang once a domain is free")
    nodes = wait_for(lambda: (n := pod_nodes(env, "gang-two")) and len(n) == 2 and all(n) and n,
                     120, "both pods of the gang to be bound to nodes")
    domains = cliques(env)
    assert len(set(nodes)) == 2 and len({domains[n] for n in nodes}) == 1, (nodes, domains)
