"""`intentc.drift.admission`: Kueue's topology assignment read and compared with the plan."""

from __future__ import annotations

from typing import Any

from intentc.drift.admission import assigned_nodes, compare, decode
from intentc.plan.model import NodeAllocation, Placement

LEVELS = ["topology.kubernetes.io/rack", "kubernetes.io/hostname"]


def workload(slices: list[dict[str, Any]], name: str = "job-train-1", levels: list[str] = LEVELS) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "tn"},
            "status": {"admission": {"clusterQueue": "tn", "podSetAssignments": [
                {"name": "main", "count": 2, "topologyAssignment": {"levels": levels, "slices": slices}}]}}}


def individual(nodes: list[str], counts: list[int] | None = None, prefix: str | None = None) -> dict[str, Any]:
    roots = [n.removeprefix(prefix) for n in nodes] if prefix else nodes
    ind: dict[str, Any] = {"roots": roots}
    if prefix:
        ind["prefix"] = prefix
    return {"domainCount": len(nodes), "valuesPerLevel": [{"universal": "r1"}, {"individual": ind}],
            "podCounts": {"individual": counts} if counts else {"universal": 1}}


PLAN = Placement("train", "tn", (NodeAllocation("tb-h100-2", tuple(range(8))),
                                 NodeAllocation("tb-h100-3", tuple(range(8)))), (("rack", "r1"),), "network")


def test_decode_universal_individual_prefix_and_counts() -> None:
    ta = {"levels": LEVELS, "slices": [individual(["tb-h100-1", "tb-h100-3"], [1, 2], prefix="tb-h100-")]}
    assert decode(ta) == {("r1", "tb-h100-1"): 1, ("r1", "tb-h100-3"): 2}
    assert assigned_nodes(workload(ta["slices"])) == {"tb-h100-1": 1, "tb-h100-3": 2}
    assert assigned_nodes(workload(ta["slices"], levels=["topology.kubernetes.io/rack"] * 2)) == {}, \
        "without hostname as the lowest level there are no nodes to compare"


def test_same_nodes_no_difference() -> None:
    assert compare(PLAN, workload([individual(["tb-h100-3", "tb-h100-2"])])) == []


def test_a_cordoned_planned_node_is_the_reason() -> None:
    nodes = [{"metadata": {"name": "tb-h100-2"}, "spec": {"unschedulable": True}},
             {"metadata": {"name": "tb-h100-1"}, "spec": {}}]
    [d] = compare(PLAN, workload([individual(["tb-h100-1", "tb-h100-3"])]), nodes)
    assert d.kind == "nodes"
    assert "planned but not assigned: tb-h100-2" in d.message and "assigned but not planned: tb-h100-1" in d.message
    assert "tb-h100-2: it is cordoned" in d.message


def test_gpus_held_by_another_workload_is_the_reason() -> None:
    other = workload([individual(["tb-h100-2"])], name="job-other")
    [d] = compare(PLAN, workload([individual(["tb-h100-1", "tb-h100-3"])]), others=[other])
    assert "tb-h100-2: its GPUs were held by tn/job-other at admission" in d.message


def test_no_known_reason_says_both_are_valid() -> None:
    [d] = compare(PLAN, workload([individual(["tb-h100-1", "tb-h100-3"])]))
    assert "Kueue chose on live free capacity" in d.message


def test_packing() -> None:
    diffs = compare(PLAN, workload([individual(["tb-h100-2"], [2])]))
    assert [d.kind for d in diffs] == ["nodes", "packing"]
    assert "2 pods on tb-h100-2" in diffs[1].message


def test_not_admitted() -> None:
    [d] = compare(PLAN, {"metadata": {"name": "w", "namespace": "tn"}, "status": {}})
    assert d.kind == "unassigned"


def test_what_kueue_writes_on_an_admitted_job_is_not_drift() -> None:
    """Kueue unsuspends an admitted Job and injects node selectors, tolerations and
    scheduling gates: those paths are handed over, drift and re-applies leave them."""
    import copy

    from intentc.drift.detect import modifications
    from intentc.reconcile.fields import without_handed_over
    from intentc.render import render
    from intentc.render.capabilities import KubeVersion
    from tests.render_cases import SHA_A, sample_plan, sample_program
    from tests.test_render_targets import sample_topology

    r = render(sample_program(), sample_plan(), SHA_A, KubeVersion(1, 37), "kueue", sample_topology())
    [job] = [dict(m.body) for m in r.manifests if m.ref.kind == "Job" and m.ref.name == "train"]
    live = copy.deepcopy(job)
    live["spec"]["suspend"] = False
    pod = live["spec"]["template"]
    pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] = "gpu-a2"
    pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    pod["spec"]["tolerations"] = []
    pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main"
    assert modifications(job, live) == ()
    live["spec"]["parallelism"] = 5
    assert [c.path for c in modifications(job, live)] == ["spec.parallelism"], "the rest is still judged"
    sent = without_handed_over(job)
    assert "suspend" not in sent["spec"] and "nodeSelector" not in sent["spec"]["template"]["spec"]
    assert job["spec"]["suspend"] is True, "the desired object is not changed"
    for m in r.manifests:
        if m.ref.kind != "Job":
            assert "intentc.dev/handed-over" not in m.body["metadata"].get("annotations", {}), str(m.ref)
