"""One reading of a Kubernetes node as the topology describes it (`topology/cluster_node.py`).

Three places turn a node's labels into topology: `intentc topology import` writes a
Topology file, live planning adds the cluster's GPU nodes the file does not list
(`plan/cluster_nodes.with_cluster_nodes`), and live occupancy names the GPU nodes it
leaves out (`plan/live_occupancy.occupancy`).  Each label spelling below goes through all three,
and they must describe the same nodes: the file loaded back equals what live planning
adds, and the count live occupancy goes by is the file's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentc import ir
from intentc.ir.quantity import parse_quantity
from intentc.plan.cluster_nodes import with_cluster_nodes
from intentc.plan.live_occupancy import occupancy
from intentc.topology.cluster_node import gpu_count, node_name, topology_node
from intentc.topology.labels import (GPU_CLIQUE, GPU_COUNT, GPU_MEMORY, GPU_PRODUCT, GPU_RESOURCE, RACK_LABEL,
                                     ZONE_LABEL)
from intentc.topology.load import LoadedTopology, load_topology
from intentc.topology.nodes_import import import_nodes


def node(name: str, labels: dict[str, str], gpus: int | None = None, taints: tuple[dict[str, str], ...] = ()
         ) -> dict[str, Any]:
    """A node as `kubectl get nodes -o json` lists it; `gpus` is the device plugin's capacity."""
    capacity = {"cpu": "96", "memory": "2063937816Ki"}
    if gpus is not None:
        capacity[GPU_RESOURCE] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": list(taints)}, "status": {"capacity": capacity, "allocatable": dict(capacity)}}


def gfd(product: str, count: str = "8", memory: str | None = "81559", **more: str) -> dict[str, str]:
    """The labels GPU feature discovery sets (`memory` in MiB; None leaves the label out)."""
    labels = {GPU_PRODUCT: product, GPU_COUNT: count, **more}
    if memory is not None:
        labels[GPU_MEMORY] = memory
    return labels


CLIQUE = "5b3e0a7c-1f3d-4c2e-9a51-7c1d2f3e4a5b.1"    # GFD's `<cluster UUID>.<clique id>`

SPELLINGS: dict[str, list[dict[str, Any]]] = {
    "gfd-long-product-name": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3"), gpus=8)],
    "product-name-with-spaces": [node("h100-1", gfd("NVIDIA H100 80GB HBM3"), gpus=8)],
    "short-product-name": [node("h100-1", gfd("H100-80GB"))],
    "mig-product-name": [node("a100-1", gfd("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", count="56", memory="4864"))],
    "nvlink-clique": [node(f"gb200-t{i}", gfd("NVIDIA-GB200", count="4", memory="189471", **{GPU_CLIQUE: CLIQUE}))
                      for i in range(1, 4)],
    "two-cliques": [node("gb200-a", gfd("NVIDIA-GB200", count="4", **{GPU_CLIQUE: CLIQUE})),
                    node("gb200-b", gfd("NVIDIA-GB200", count="4", **{GPU_CLIQUE: CLIQUE[:-1] + "2"}))],
    "zone-and-rack": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", **{ZONE_LABEL: "eu-west-1a", RACK_LABEL: "r07"})),
                      node("h100-2", gfd("NVIDIA-H100-80GB-HBM3", **{ZONE_LABEL: "eu-west-1b", RACK_LABEL: "r08"}))],
    "rack-only": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", **{RACK_LABEL: "r07"}))],
    "zone-on-one-node-only": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", **{ZONE_LABEL: "eu-west-1a"})),
                              node("h100-2", gfd("NVIDIA-H100-80GB-HBM3"))],
    "numeric-looking-zone": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", **{ZONE_LABEL: "1e3", RACK_LABEL: "007"}))],
    "no-count-label": [node("l40s-1", {GPU_PRODUCT: "NVIDIA-L40S"}, gpus=4)],
    "unreadable-count-label": [node("l40s-1", gfd("NVIDIA-L40S", count="eight", memory="46068"), gpus=4)],
    "unreadable-memory-label": [node("l40s-1", gfd("NVIDIA-L40S", count="4", memory="45GiB"))],
    "no-memory-label": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", memory=None))],
    "no-product-label": [node("gpu-1", {GPU_COUNT: "2"})],
    "no-gfd-labels-device-plugin-only": [node("gpu-1", {}, gpus=2)],
    "tainted": [node("h100-1", gfd("NVIDIA-H100-80GB-HBM3"),
                     taints=({"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                             {"key": "dedicated", "value": "training", "effect": "NoExecute"}))],
    "gpu-and-cpu-nodes": [node("cpu-1", {ZONE_LABEL: "eu-west-1a"}),
                          node("h100-1", gfd("NVIDIA-H100-80GB-HBM3", **{ZONE_LABEL: "eu-west-1a"}))],
}


def _described(n: ir.TopologyNode, levels: tuple[str, ...]) -> tuple[Any, ...]:
    """What the planner reads of a node (a level without a domain is the node's own, as the
    importer's W0701 says; memory by value: the importer writes it in the largest unit)."""
    domains = tuple((lvl, n.domain(lvl) or n.name) for lvl in levels if lvl != "node")
    return (n.name, n.gpu_count, n.gpu_product, n.gpu_memory, n.cpu, domains, n.taints,
            parse_quantity(n.memory) if n.memory else None)


@pytest.mark.parametrize("nodes", list(SPELLINGS.values()), ids=list(SPELLINGS))
def test_the_importer_and_live_planning_read_every_label_spelling_alike(tmp_path: Path,
                                                                       nodes: list[dict[str, Any]]) -> None:
    text, diags = import_nodes({"apiVersion": "v1", "kind": "List", "items": nodes}, "lab")
    assert not [d for d in diags if d.is_error], diags
    (tmp_path / "lab.yaml").write_text(text)
    imported, load_diags = load_topology(str(tmp_path / "lab.yaml"))
    assert imported is not None, load_diags
    levels = imported.topology.levels
    from_file = [_described(n, levels) for n in imported.topology.nodes if n.gpu_count]
    assert from_file, "every spelling has a GPU node"

    empty = LoadedTopology(ir.Topology("lab", levels, ()), ())
    live, notes = with_cluster_nodes(empty, nodes)
    assert [_described(n, levels) for n in live.topology.nodes] == from_file
    assert len(notes) == len(from_file)                 # one note per node added

    # the count live occupancy names unlisted GPU nodes by is the file's
    assert {node_name(n): gpu_count(n) for n in nodes} == {n.name: n.gpu_count for n in imported.topology.nodes}
    _, outside = occupancy(ir.Topology("lab", levels, ()), nodes, [])
    assert outside[-1].startswith(f"{len(from_file)} GPU node(s) of the cluster are not in the topology file")


@pytest.mark.parametrize("nodes", list(SPELLINGS.values()), ids=list(SPELLINGS))
def test_the_importer_writes_the_nodes_the_shared_reader_gives(tmp_path: Path, nodes: list[dict[str, Any]]) -> None:
    """Loaded back, the imported file holds exactly `topology_node` of each node (domains as
    the labels give them), memory apart, which the file writes in its largest exact unit."""
    text, _ = import_nodes({"apiVersion": "v1", "kind": "List", "items": nodes}, "lab", keep_labels=())
    (tmp_path / "lab.yaml").write_text(text)
    imported, diags = load_topology(str(tmp_path / "lab.yaml"))
    assert imported is not None, diags

    def fields(n: ir.TopologyNode) -> tuple[Any, ...]:
        return (n.name, n.gpu_count, n.gpu_product, n.gpu_memory, n.cpu, n.domains, n.taints,
                parse_quantity(n.memory) if n.memory else None)
    read = sorted((topology_node(item) for item in nodes), key=lambda n: n.name)
    assert [fields(n) for n in imported.topology.nodes] == [fields(n) for n in read]
