"""Fake GPU nodes for the test bed, made from a Topology file.

Each topology node becomes a `Node` that kwok plays the kubelet for, labelled
the way NVIDIA's GPU feature discovery labels a real one (`nvidia.com/gpu.*`,
zone and rack) with `nvidia.com/gpu` capacity as the device plugin reports
it; and, for DRA, a `ResourceSlice` per node listing one device per GPU the
way NVIDIA's DRA driver (`gpu.nvidia.com`) publishes them: devices named
`gpu-<minor>` with `type`, `uuid`, `productName`, `pcieBusID` and the
standard `resource.kubernetes.io/pcieRoot` attribute. Two attributes are the
test bed's own additions, because a plan names GPUs by index and NUMA node:
`index` and `numa` (the real driver encodes the minor in the device name,
which CEL cannot read).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from intentc import ir
from intentc.topology.labels import GPU_CLIQUE, GPU_COUNT, GPU_MEMORY, GPU_PRODUCT, RACK_LABEL, ZONE_LABEL

from tests.kube_env import KWOK_ANNOTATION, KubeEnv
from tests.kube_support import wait_for

DRA_DRIVER = "gpu.nvidia.com"
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5}


def _mib(quantity: str | None) -> int | None:
    if not quantity:
        return None
    for suffix, power in _BINARY.items():
        if quantity.endswith(suffix):
            return int(Decimal(quantity[: -len(suffix)]) * 1024 ** power // 1024 ** 2)
    return int(Decimal(quantity) // 1024 ** 2)


def node_manifest(node: ir.TopologyNode, levels: tuple[str, ...]) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "type": "kwok"}
    labels.update(dict(node.labels))
    if node.domain("zone"):
        labels[ZONE_LABEL] = str(node.domain("zone"))
    if node.domain("rack"):
        labels[RACK_LABEL] = str(node.domain("rack"))
    nvlink = node.domain("nvlink")
    if nvlink and nvlink != node.name:           # a multi-node NVLink domain: GFD's clique label
        labels[GPU_CLIQUE] = nvlink
    capacity = {"cpu": node.cpu or "64", "memory": node.memory or "512Gi", "pods": "110"}
    if node.gpu_count:
        labels[GPU_COUNT] = str(node.gpu_count)
        if node.gpu_product:
            labels[GPU_PRODUCT] = node.gpu_product
        mib = _mib(node.gpu_memory)
        if mib:
            labels[GPU_MEMORY] = str(mib)
        capacity["nvidia.com/gpu"] = str(node.gpu_count)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},   # kwok fills in the rest
    }


def resource_slice(node: ir.TopologyNode, numa_of: dict[int, int] | None = None) -> dict[str, Any] | None:
    """The DRA driver's ResourceSlice for one node (None for a node without GPUs)."""
    if not node.gpu_count:
        return None
    devices = []
    for i in range(node.gpu_count):
        numa = (numa_of or {}).get(i, 0)
        attrs: dict[str, Any] = {
            "type": {"string": "gpu"},
            "index": {"int": i},
            "uuid": {"string": f"GPU-{node.name}-{i:02d}"},
            "productName": {"string": node.gpu_product or "unknown"},
            "pcieBusID": {"string": f"0000:{0x18 + 0x10 * i:02x}:00.0"},
            "numa": {"int": numa},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{numa:02x}"},
        }
        nvlink = node.domain("nvlink")
        if nvlink:
            attrs["cliqueID"] = {"string": nvlink}
        device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": attrs}
        mib = _mib(node.gpu_memory)
        if mib:
            device["capacity"] = {"memory": {"value": f"{mib}Mi"}}
        devices.append(device)
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node.name}-{DRA_DRIVER}"},
        "spec": {"driver": DRA_DRIVER, "nodeName": node.name,
                 "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }


DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": DRA_DRIVER},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRA_DRIVER}'"}}]},
}


def add_topology(env: KubeEnv, topology_path: str, dra: bool = False, timeout: float = 120.0) -> list[str]:
    """Create a Node (and with `dra`, a ResourceSlice) per topology node; wait until kwok
    reports them Ready. Returns the node names."""
    import json

    from intentc.topology.load import load_topology

    loaded, diags = load_topology(topology_path)
    assert loaded is not None, [d.message for d in diags]
    topo = loaded.topology
    items: list[dict[str, Any]] = [node_manifest(n, topo.levels) for n in topo.nodes]
    if dra:
        items.append(DEVICE_CLASS)
        items += [s for n in topo.nodes if (s := resource_slice(n)) is not None]
    env.kubectl_run("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    names = [n.name for n in topo.nodes]
    env.kubectl_run("wait", "--for=condition=Ready", f"--timeout={int(timeout)}s",
                    *[f"node/{n}" for n in names], timeout=timeout + 10)
    # The node lifecycle controller lifts its `node.kubernetes.io/not-ready` taint a few
    # seconds after the node turns Ready (its monitor period): until then schedulers and
    # intentc's live planning rightly treat the node as unavailable.
    wanted = set(names)

    def untainted() -> bool:
        nodes = json.loads(env.kubectl_run("get", "nodes", "-o", "json").stdout)["items"]
        return all(not any(t.get("key", "").startswith("node.kubernetes.io/")
                           for t in (n.get("spec") or {}).get("taints") or [])
                   for n in nodes if n["metadata"]["name"] in wanted)
    wait_for(untainted, timeout, "the node lifecycle controller lifts its not-ready taints")
    return names
