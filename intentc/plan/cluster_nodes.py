"""The topology a live plan is made on: the file's nodes plus the cluster's GPU nodes (pure).

The topology file is the reviewed inventory and the only source of the
`nvidia-smi topo -m` matrices, but a cluster grows between two reviews:
GPU nodes that GPU feature discovery labels (or that the device plugin
reports) and that the file does not list would otherwise sit idle under a
live plan.  `with_cluster_nodes` adds them, as `intentc topology import`
would write them:

* GPU count from `nvidia.com/gpu.count` (else the node's `nvidia.com/gpu`
  capacity), product and per-GPU memory from GFD's labels;
* domains on the file's own levels: `zone` and `rack` from the well-known
  labels, `nvlink` from `nvidia.com/gpu.clique` (a multi-node NVLink
  domain) or the node itself; a level the node carries no label for makes
  the node its own domain there;
* the matrix a node without `nvidia-smi topo -m` gets from the file
  (`topology.nvsmi.default_matrix`: NVSwitch for SXM-class products,
  pessimistic PCIe otherwise).

Nodes the file lists keep the file's description; where GFD disagrees on
the count or the product a note says so (the file's matrix was measured).
Every added node is one note, so `plan.json`'s basis says where it came from.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from intentc import ir
from intentc.render.model import GPU_RESOURCE
from intentc.topology.labels import GPU_CLIQUE, GPU_COUNT, GPU_MEMORY, GPU_PRODUCT, RACK_LABEL, ZONE_LABEL
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuMatrix, Link
from intentc.topology.nvsmi import default_matrix



def _whole(raw: object) -> int | None:
    text = str(raw) if raw is not None else ""
    return int(text) if text.isdigit() else None


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    raw = (node.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def gpu_count(node: Mapping[str, Any]) -> int:
    """GFD's count, else what the device plugin reports as capacity (0: not a GPU node)."""
    counted = _whole(_labels(node).get(GPU_COUNT))
    if counted is not None:
        return counted
    capacity = (node.get("status") or {}).get("capacity") or {}
    return _whole(capacity.get(GPU_RESOURCE) if isinstance(capacity, Mapping) else None) or 0


def _domains(name: str, labels: Mapping[str, str], levels: Iterable[str]) -> tuple[tuple[str, str], ...]:
    by_level = {"zone": labels.get(ZONE_LABEL), "rack": labels.get(RACK_LABEL),
                "nvlink": labels.get(GPU_CLIQUE) or name}
    return tuple((level, by_level.get(level) or name) for level in levels if level != "node")


def _taints(node: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    raw = (node.get("spec") or {}).get("taints") or []
    return tuple(sorted((str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
                        for t in raw if isinstance(t, Mapping)))


def cluster_node(node: Mapping[str, Any], levels: Iterable[str]) -> ir.TopologyNode | None:
    """A cluster node as the topology file would describe it (None: no GPUs)."""
    count = gpu_count(node)
    if count <= 0:
        return None
    name = str((node.get("metadata") or {}).get("name"))
    labels = _labels(node)
    memory_mib = _whole(labels.get(GPU_MEMORY))
    capacity = (node.get("status") or {}).get("capacity") or {}
    return ir.TopologyNode(
        name=name, gpu_count=count, gpu_product=labels.get(GPU_PRODUCT),
        gpu_memory=f"{memory_mib}Mi" if memory_mib else None,
        cpu=str(capacity["cpu"]) if "cpu" in capacity else None,
        memory=str(capacity["memory"]) if "memory" in capacity else None,
        domains=_domains(name, labels, levels), taints=_taints(node))


def with_cluster_nodes(loaded: LoadedTopology, nodes: Iterable[Mapping[str, Any]]
                       ) -> tuple[LoadedTopology, tuple[str, ...]]:
    """`loaded` plus the cluster's GPU nodes it does not list, in name order, and one note
    per added node or disagreement."""
    listed = {n.name: n for n in loaded.topology.nodes}
    added: list[ir.TopologyNode] = []
    matrices: list[tuple[str, GpuMatrix]] = []
    notes: list[str] = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name"))):
        name = str((node.get("metadata") or {}).get("name"))
        known = listed.get(name)
        if known is not None:
            count, product = gpu_count(node), _labels(node).get(GPU_PRODUCT)
            if known.gpu_count and count and count != known.gpu_count:
                notes.append(f"{name}: the cluster reports {count} GPUs, the topology file {known.gpu_count}; "
                             f"planned with the file's")
            if product and known.gpu_product and product != known.gpu_product:
                notes.append(f"{name}: GPU feature discovery says {product}, the topology file "
                             f"{known.gpu_product}; planned with the file's")
            continue
        fresh = cluster_node(node, loaded.topology.levels)
        if fresh is None:
            continue
        matrix = default_matrix(fresh.gpu_count, fresh.gpu_product)
        added.append(fresh)
        matrices.append((name, matrix))
        nvswitch = any(info.link is Link.NVLINK for _, _, info in matrix.links)
        what = f"{fresh.gpu_count} × {fresh.gpu_product or 'GPU'}"
        notes.append(f"{name}: added from the cluster's labels ({what}, "
                     f"{', '.join(f'{lvl} {d}' for lvl, d in fresh.domains)}; no nvidia-smi matrix: "
                     f"{'NVSwitch' if nvswitch else 'PCIe'} assumed)")
    if not added:
        return loaded, tuple(notes)
    topology = dataclasses.replace(loaded.topology, nodes=loaded.topology.nodes + tuple(added))
    return LoadedTopology(topology, loaded.matrices + tuple(matrices)), tuple(notes)

