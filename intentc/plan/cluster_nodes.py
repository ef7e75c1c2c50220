"""The topology a live plan is made on: the file's nodes plus the cluster's GPU nodes (pure).

The topology file is the reviewed inventory and the only source of the
`nvidia-smi topo -m` matrices, but a cluster grows between two reviews:
GPU nodes that GPU feature discovery labels (or that the device plugin
reports) and that the file does not list would otherwise sit idle under a
live plan.  `with_cluster_nodes` adds them, read by the same function
`intentc topology import` prints (`topology/cluster_node.topology_node`):

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
from intentc.topology.cluster_node import node_name, topology_node
from intentc.topology.load import LoadedTopology
from intentc.topology.matrix import GpuMatrix, Link
from intentc.topology.nvsmi import default_matrix
from intentc.topology.products import same_product


def with_cluster_nodes(loaded: LoadedTopology, nodes: Iterable[Mapping[str, Any]]
                       ) -> tuple[LoadedTopology, tuple[str, ...]]:
    """`loaded` plus the cluster's GPU nodes it does not list, in name order, and one note
    per added node or disagreement."""
    listed = {n.name: n for n in loaded.topology.nodes}
    added: list[ir.TopologyNode] = []
    matrices: list[tuple[str, GpuMatrix]] = []
    notes: list[str] = []
    for node in sorted(nodes, key=node_name):
        name = node_name(node)
        known = listed.get(name)
        fresh = topology_node(node, loaded.topology.levels)
        if known is not None:
            count, product = fresh.gpu_count, fresh.gpu_product
            if known.gpu_count and count and count != known.gpu_count:
                notes.append(f"{name}: the cluster reports {count} GPUs, the topology file {known.gpu_count}; "
                             f"planned with the file's")
            if product and known.gpu_product and not same_product(product, known.gpu_product):
                notes.append(f"{name}: GPU feature discovery says {product}, the topology file "
                             f"{known.gpu_product}; planned with the file's")
            continue
        if fresh.gpu_count <= 0:
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

