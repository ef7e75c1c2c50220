"""Render targets: how a planned GPU set reaches the cluster (DESIGN.md, "GPU binding").

The planner decides nodes and GPU indices once; a target turns that into
pod-spec fields.  `device-plugin` works on every cluster: pin the pod to
its node(s), request `nvidia.com/gpu`, and carry the exact indices, NUMA
nodes and NICs as annotations for node-level tooling.  A `dra` target
(ResourceClaimTemplates for exactly the planned devices) fits the same
`RenderTarget` shape: it returns claims in `PodBinding` instead of limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from intentc.plan.model import NodeAllocation

HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class PodBinding:
    """Pod-spec fragments a target contributes; the workload builder merges them."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, str], ...] = ()
    limits: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)


class RenderTarget(Protocol):
    @property
    def name(self) -> str: ...

    def bind(self, allocations: Sequence[NodeAllocation], gpus_per_pod: int,
             spread_labels: Mapping[str, str]) -> PodBinding:
        """Binding for pods that may run on `allocations`; with several, non-empty
        `spread_labels` select the gang's pods to keep one pod per node."""
        ...


def _per_node(allocations: Sequence[NodeAllocation], values: Mapping[str, str]) -> str:
    """"0,1,2,3" for one node; "node-a=0,1;node-b=2,3" for several."""
    if len(allocations) == 1:
        return values[allocations[0].node]
    return ";".join(f"{a.node}={values[a.node]}" for a in allocations)


def _ints(xs: Sequence[int]) -> str:
    return ",".join(str(x) for x in xs)


@dataclass(frozen=True)
class DevicePluginTarget:
    name: str = "device-plugin"

    def bind(self, allocations: Sequence[NodeAllocation], gpus_per_pod: int,
             spread_labels: Mapping[str, str]) -> PodBinding:
        if not allocations:
            return PodBinding()
        allocs = sorted(allocations, key=lambda a: a.node)
        nodes = [a.node for a in allocs]
        annotations = {
            "intentc.dev/nodes": ",".join(nodes),
            "intentc.dev/gpu-indices": _per_node(allocs, {a.node: _ints(a.gpus) for a in allocs}),
            "intentc.dev/gpu-link": _per_node(allocs, {a.node: a.link for a in allocs}),
        }
        if any(a.numa_nodes for a in allocs):
            annotations["intentc.dev/numa-nodes"] = _per_node(allocs, {a.node: _ints(a.numa_nodes) for a in allocs})
        if any(a.nics for a in allocs):
            annotations["intentc.dev/nics"] = _per_node(allocs, {a.node: ",".join(a.nics) for a in allocs})
        env = {"INTENTC_GPU_INDICES": annotations["intentc.dev/gpu-indices"]}
        gpu = {GPU_RESOURCE: str(gpus_per_pod)} if gpus_per_pod else {}
        tolerations: tuple[Mapping[str, str], ...] = (
            ({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},) if gpus_per_pod else ())
        if len(allocs) == 1:
            return PodBinding(node_selector={HOSTNAME_LABEL: nodes[0]}, tolerations=tolerations,
                              limits=gpu, requests=gpu, annotations=annotations, env=env)
        affinity: dict[str, Any] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}]}]}}}
        if spread_labels:
            # One pod per planned node: the gang's pods repel each other per hostname.
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": dict(spread_labels)}, "topologyKey": HOSTNAME_LABEL}]}
        return PodBinding(affinity=affinity, tolerations=tolerations, limits=gpu, requests=gpu,
                          annotations=annotations, env=env)


TARGETS: dict[str, RenderTarget] = {"device-plugin": DevicePluginTarget()}
DEFAULT_TARGET = "device-plugin"


def get_target(name: str) -> RenderTarget:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown render target {name!r} (available: {', '.join(sorted(TARGETS))})") from None
