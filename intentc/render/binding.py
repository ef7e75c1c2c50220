"""The contract between the workload builder and a render target (docs/design.md, "GPU binding on the cluster").

A target sees one pod template's worth of plan — the intent, the workload's
name and namespace, the node allocations its pods may use, and the topology
as plain data — and answers with pod-spec fragments (`PodBinding`) plus the
objects those fragments refer to.  Targets also contribute cluster-wide
objects once per render (Kueue's queues and flavors), and say which API the
cluster must serve for their output to mean anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from intentc.ir import Intent, Program, Topology
from intentc.plan.model import NodeAllocation
from intentc.render.capabilities import KubeVersion
from intentc.objectmeta import GPU_INDICES_ANNOTATION
from intentc.topology.labels import GPU_RESOURCE

HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU_QUOTA = f"requests.{GPU_RESOURCE}"


@dataclass(frozen=True)
class BindRequest:
    intent: Intent
    owner: str                                  # the Job / Deployment these pods belong to
    allocations: tuple[NodeAllocation, ...]     # sorted by node; empty when the plan has none
    gpus_per_pod: int
    spread_labels: Mapping[str, str] = field(default_factory=dict)   # non-empty: one pod per node
    topology: Topology | None = None

    @property
    def namespace(self) -> str:
        return self.intent.tenant


@dataclass(frozen=True)
class PodBinding:
    """Pod-spec fragments a target contributes; the workload builder merges them."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, str], ...] = ()
    limits: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)       # workload and pod
    pod_annotations: Mapping[str, str] = field(default_factory=dict)   # pod template only
    object_annotations: Mapping[str, str] = field(default_factory=dict)  # the workload object only
    labels: Mapping[str, str] = field(default_factory=dict)            # the workload object
    env: Mapping[str, str] = field(default_factory=dict)
    resource_claims: tuple[tuple[str, str], ...] = ()    # (claim name in the pod, ResourceClaimTemplate)
    objects: tuple[Mapping[str, Any], ...] = ()          # namespaced objects the pod refers to
    suspend: bool = False                                # created suspended (a queue admits it)
    note: str = ""                                       # a decision worth recording as a Choice


@dataclass(frozen=True)
class Requirement:
    """An API the cluster must serve for a target's output to be enforced."""

    api_version: str          # "resource.k8s.io/v1"
    min_kube: KubeVersion | None = None
    what: str = ""


class RenderTarget(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def requirement(self) -> Requirement | None:
        """What the cluster must serve (None: any supported cluster)."""
        ...

    @property
    def gpu_quota(self) -> str:
        """The ResourceQuota key that counts a tenant's GPUs under this target."""
        ...

    def tenant_gpu_ceiling(self, topology: Topology | None) -> int | None:
        """The GPUs every tenant namespace's ResourceQuota allows under this target, or
        None for the tenant's own bound (its quota, else what the plan gave it)."""
        ...

    def exact_devices(self) -> bool:
        """True when a pod template names its GPU indices, so gang members whose
        planned index sets differ need templates (Jobs) of their own."""
        ...

    def admits_suspended(self) -> bool:
        """True when a queue resumes the suspended Jobs it is handed (Kueue): then
        intentc renders no suspended fallback variants, the queue would start them."""
        ...

    def bind(self, req: BindRequest) -> PodBinding: ...

    def cluster_objects(self, program: Program, intents: Sequence[Intent],
                        topology: Topology | None) -> list[dict[str, Any]]:
        """Objects the target needs once per cluster (none for most)."""
        ...


class TargetDefaults:
    """What a target has unless it says otherwise: no API requirement, GPUs counted as
    `nvidia.com/gpu` requests, advisory indices, no cluster-wide objects."""

    @property
    def requirement(self) -> Requirement | None:
        return None

    @property
    def gpu_quota(self) -> str:
        return GPU_QUOTA

    def tenant_gpu_ceiling(self, topology: Topology | None) -> int | None:
        return None

    def exact_devices(self) -> bool:
        return False

    def admits_suspended(self) -> bool:
        return False

    def cluster_objects(self, program: Program, intents: Sequence[Intent],
                        topology: Topology | None) -> list[dict[str, Any]]:
        return []


def gpu_toleration(gpus_per_pod: int) -> tuple[Mapping[str, str], ...]:
    return ({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},) if gpus_per_pod else ()


def node_pins(allocs: Sequence[NodeAllocation], spread_labels: Mapping[str, str]
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """(node selector, affinity) keeping pods on their planned node(s), one per node for a gang."""
    nodes = [a.node for a in allocs]
    if len(nodes) == 1:
        return {HOSTNAME_LABEL: nodes[0]}, {}
    affinity: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}]}]}}}
    if spread_labels:
        # One pod per planned node: the gang's pods repel each other per hostname.
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": dict(spread_labels)}, "topologyKey": HOSTNAME_LABEL}]}
    return {}, affinity


def _per_node(allocations: Sequence[NodeAllocation], values: Mapping[str, str]) -> str:
    """"0,1,2,3" for one node; "node-a=0,1;node-b=2,3" for several."""
    if len(allocations) == 1:
        return values[allocations[0].node]
    return ";".join(f"{a.node}={values[a.node]}" for a in allocations)


def ints(xs: Sequence[int]) -> str:
    return ",".join(str(x) for x in xs)


def plan_annotations(allocs: Sequence[NodeAllocation]) -> dict[str, str]:
    """The planned placement, as annotations (every target carries them, for people and tools)."""
    annotations = {
        "intentc.dev/nodes": ",".join(a.node for a in allocs),
        GPU_INDICES_ANNOTATION: _per_node(allocs, {a.node: ints(a.gpus) for a in allocs}),
        "intentc.dev/gpu-link": _per_node(allocs, {a.node: a.link for a in allocs}),
    }
    if any(a.numa_nodes for a in allocs):
        annotations["intentc.dev/numa-nodes"] = _per_node(allocs, {a.node: ints(a.numa_nodes) for a in allocs})
    if any(a.nics for a in allocs):
        annotations["intentc.dev/nics"] = _per_node(allocs, {a.node: ",".join(a.nics) for a in allocs})
    return annotations


def node_products(req: BindRequest) -> list[str]:
    """The GPU products of the planned nodes (from the topology), else the intent's."""
    if req.topology is not None and req.allocations:
        planned = {a.node for a in req.allocations}
        found = sorted({n.gpu_product for n in req.topology.nodes if n.name in planned and n.gpu_product})
        if found:
            return found
    gpus = req.intent.constraints.gpus
    return [gpus.product] if gpus is not None and gpus.product else []
