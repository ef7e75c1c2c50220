"""A Kubernetes node as the topology describes it: one reading of GPU feature discovery labels.

Two callers need the same answer to "what is this node, topologically":
`intentc topology import` prints it as a Topology YAML file for review, and
live planning (`plan/cluster_nodes.py`) adds the cluster's GPU nodes the
file does not list straight into the IR.  Reading the labels twice let the
two drift apart (a node the importer wrote with 8 GPUs could be planned
with another count), so both go through `topology_node`:

* GPU count from `nvidia.com/gpu.count`, else the `nvidia.com/gpu` capacity
  the device plugin reports (GFD absent); product from `nvidia.com/gpu.product`,
  per-GPU memory from `nvidia.com/gpu.memory` (MiB);
* `cpu` / `memory` from the node's capacity, as the API reports them;
* domains: `zone` and `rack` from their labels, `nvlink` from
  `nvidia.com/gpu.clique` (a multi-node NVLink domain) or the node itself.
  Given the topology's `levels`, every level gets a domain and a level the
  node carries no label for makes the node its own domain there;
* the labels whose keys start with one of `keep_labels`, and the taints
  (key, value, effect), sorted.

Pure: a node is the JSON the API server returns (`kubectl get nodes -o json`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from intentc import ir
from intentc.topology.labels import GPU_RESOURCE
from intentc.topology.labels import GPU_CLIQUE, GPU_COUNT, GPU_MEMORY, GPU_PRODUCT, RACK_LABEL, ZONE_LABEL


def _str_map(obj: Mapping[str, Any], *keys: str) -> dict[str, str]:
    for key in keys:
        obj = obj.get(key) or {}
        if not isinstance(obj, Mapping):
            return {}
    return {str(k): str(v) for k, v in obj.items()}


def node_name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name"))


def _whole(raw: str | None) -> int | None:
    return int(raw) if raw is not None and raw.isdigit() else None


def unreadable_labels(node: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The count and memory labels that are set but not whole numbers (ignored), as (key, value)."""
    labels = _str_map(node, "metadata", "labels")
    return tuple((key, labels[key]) for key in (GPU_COUNT, GPU_MEMORY)
                 if key in labels and _whole(labels[key]) is None)


def gpu_count(node: Mapping[str, Any]) -> int:
    """GFD's count, else what the device plugin reports as capacity (0: not a GPU node)."""
    counted = _whole(_str_map(node, "metadata", "labels").get(GPU_COUNT))
    if counted is not None:
        return counted
    return _whole(_str_map(node, "status", "capacity").get(GPU_RESOURCE)) or 0


def _taints(node: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    raw = (node.get("spec") or {}).get("taints") or []
    return tuple(sorted((t["key"], t["value"] if isinstance(t.get("value"), str) else "", t["effect"])
                        for t in (raw if isinstance(raw, list) else [])
                        if isinstance(t, Mapping) and isinstance(t.get("key"), str)
                        and isinstance(t.get("effect"), str)))


def topology_node(node: Mapping[str, Any], levels: Iterable[str] | None = None, *,
                  rack_label: str = RACK_LABEL, zone_label: str = ZONE_LABEL,
                  keep_labels: Sequence[str] = ()) -> ir.TopologyNode:
    """The node as a topology file would describe it.

    Without `levels` the domains are the ones the node's labels give (what the
    importer writes); with them, one per level but `node`, the node itself where
    it carries no label for that level (what a planner on those levels needs)."""
    name = node_name(node)
    labels = _str_map(node, "metadata", "labels")
    capacity = _str_map(node, "status", "capacity")
    memory_mib = _whole(labels.get(GPU_MEMORY))
    labelled = [(lvl, labels[key]) for lvl, key in (("zone", zone_label), ("rack", rack_label)) if key in labels]
    labelled.append(("nvlink", labels.get(GPU_CLIQUE, name)))
    if levels is None:
        domains = tuple(labelled)
    else:
        by_level = dict(labelled)
        domains = tuple((lvl, by_level.get(lvl) or name) for lvl in levels if lvl != "node")
    return ir.TopologyNode(
        name=name, gpu_count=gpu_count(node), gpu_product=labels.get(GPU_PRODUCT),
        gpu_memory=f"{memory_mib}Mi" if memory_mib else None,
        cpu=capacity.get("cpu"), memory=capacity.get("memory"), domains=domains,
        labels=tuple(sorted((k, v) for k, v in labels.items() if k.startswith(tuple(keep_labels)))),
        taints=_taints(node))
