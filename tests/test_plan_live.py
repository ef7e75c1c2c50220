"""Planning on a live cluster: what the cluster's nodes and pods leave free (pure part)."""

from __future__ import annotations

from typing import Any

from intentc import ir
from intentc.plan.live_occupancy import occupancy
from intentc.plan.model import Busy

TOPOLOGY = ir.Topology("t", nodes=tuple(ir.TopologyNode(f"n{i}", gpu_count=8, gpu_product="H100-80GB")
                                        for i in range(1, 7)))


def node(name: str, ready: str = "True", gpus: str = "8", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": ready}], "allocatable": {"nvidia.com/gpu": gpus}}}


def pod(ns: str, name: str, on: str, gpus: int, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": "Running"}}


def test_what_a_live_cluster_leaves_free() -> None:
    nodes = [node("n1"), node("n2", unschedulable=True), node("n3", ready="False"),
             node("n4", taints=[{"key": "maintenance", "value": "disk", "effect": "NoSchedule"}]),
             node("n5", gpus="6"), node("x-not-in-topology")]
    ours = {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": "train"}
    pods = [pod("research", "notebook", "n1", 4),                                  # not ours: by count
            pod("team-b", "other-target", "n5", 2, ours, {"intentc.dev/gpu-indices": "0,1"}),
            pod("team-a", "our-own-train", "n1", 4, ours),                          # this target's: replaced
            pod("kube-system", "no-gpu", "n1", 0)]
    occ, notes = occupancy(TOPOLOGY, nodes, pods, own_namespaces=["team-a"])
    assert occ.unavailable == frozenset({"n2", "n3", "n4", "n6"})
    assert occ.busy == (Busy("n1", (4, 5, 6, 7)), Busy("n5", (0, 1, 6, 7)))
    text = "\n".join(notes)
    for fragment in ("n2: unavailable (cordoned)", "n3: unavailable (NotReady)",
                     "n4: unavailable (tainted maintenance=disk:NoSchedule)", "n6: unavailable (not in the cluster)",
                     "pod research/notebook", "as its intentc target planned", "6 allocatable of 8"):
        assert fragment in text, text
    assert "our-own-train" not in text


def test_the_gpu_taint_intentc_tolerates_does_not_make_a_node_unavailable() -> None:
    nodes = [node(f"n{i}", taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]) for i in range(1, 7)]
    occ, notes = occupancy(TOPOLOGY, nodes, [])
    assert occ.unavailable == frozenset() and occ.busy == () and notes == ()


def test_gpu_nodes_the_topology_file_does_not_list_are_named_not_used() -> None:
    gfd = {"nvidia.com/gpu.product": "H100-80GB", "nvidia.com/gpu.count": "8"}
    nodes = [node(f"n{i}") for i in range(1, 7)] + [
        {**node(f"extra-{i}"), "metadata": {"name": f"extra-{i}", "labels": gfd}} for i in range(7)] + [
        {"metadata": {"name": "cpu-only"}, "spec": {}, "status": {"capacity": {"cpu": "64"}}}]
    occ, notes = occupancy(TOPOLOGY, nodes, [])
    assert occ.unavailable == frozenset() and occ.busy == ()
    assert notes == ("7 GPU node(s) of the cluster are not in the topology file and are not planned onto: "
                     "extra-0, extra-1, extra-2, extra-3, extra-4, … (+2 more) (`intentc topology import` adds them)",)


def test_gpu_nodes_the_file_does_not_list_are_added_from_their_labels() -> None:
    """A live plan uses the cluster's GPU nodes the topology file does not list, described
    from GPU feature discovery's labels on the file's levels; cpu-only nodes are not GPU
    nodes, and a listed node keeps the file's description (the disagreement is noted)."""
    from intentc.plan.cluster_nodes import with_cluster_nodes
    from intentc.topology.load import LoadedTopology
    from intentc.topology.nvsmi import default_matrix

    levels = ("zone", "rack", "nvlink", "node")
    listed = tuple(ir.TopologyNode(f"n{i}", gpu_count=8, gpu_product="H100-80GB",
                                   domains=(("zone", "z1"), ("rack", "r1"), ("nvlink", f"n{i}")))
                   for i in (1, 2))
    loaded = LoadedTopology(ir.Topology("t", levels, listed),
                            tuple((n.name, default_matrix(8, "H100-80GB")) for n in listed))
    gb200 = {"nvidia.com/gpu.product": "GB200", "nvidia.com/gpu.count": "4", "nvidia.com/gpu.memory": "189471",
             "nvidia.com/gpu.clique": "cl-7", "topology.kubernetes.io/zone": "z2"}
    nodes = [{"metadata": {"name": "n1", "labels": {"nvidia.com/gpu.product": "H100-80GB", "nvidia.com/gpu.count": "4"}}},
             {"metadata": {"name": "tray-2", "labels": gb200}, "status": {"capacity": {"cpu": "72"}}},
             {"metadata": {"name": "tray-1", "labels": gb200},
              "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}},
             {"metadata": {"name": "pcie"}, "status": {"capacity": {"nvidia.com/gpu": "2"}}},
             {"metadata": {"name": "cpu-only"}, "status": {"capacity": {"cpu": "64"}}}]
    merged, notes = with_cluster_nodes(loaded, nodes)
    assert [n.name for n in merged.topology.nodes] == ["n1", "n2", "pcie", "tray-1", "tray-2"]
    tray = merged.topology.nodes[3]
    assert (tray.gpu_count, tray.gpu_product, tray.gpu_memory) == (4, "GB200", "189471Mi")
    assert tray.domains == (("zone", "z2"), ("rack", "tray-1"), ("nvlink", "cl-7"))
    assert tray.taints == (("nvidia.com/gpu", "", "NoSchedule"),)
    assert merged.topology.nodes[2].gpu_count == 2 and merged.topology.nodes[2].gpu_product is None
    assert len(merged.matrix("tray-2").gpus) == 4 and len(merged.matrix("pcie").gpus) == 2
    text = "\n".join(notes)
    assert "n1: the cluster reports 4 GPUs, the topology file 8; planned with the file's" in text, text
    assert "tray-1: added from the cluster's labels (4 × GB200, zone z2, rack tray-1, nvlink cl-7; " \
           "no nvidia-smi matrix: NVSwitch assumed)" in text, text
    assert "pcie: added from the cluster's labels (2 × GPU" in text and "PCIe assumed" in text, text
    assert "cpu-only" not in text
    # the merged topology's nodes are then judged like the file's
    occ, _ = occupancy(merged.topology, [node(n.name) for n in merged.topology.nodes], [])
    assert occ.unavailable == frozenset()
    # nothing to add: the same object back
    assert with_cluster_nodes(loaded, [])[0] is loaded
