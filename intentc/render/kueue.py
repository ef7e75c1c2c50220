"""The `kueue` render target: compile to Kueue's own objects and let it admit on live state.

From the tenants and the topology (plain data), once per cluster:

* a `ResourceFlavor` per GPU product, selecting nodes by GFD's
  `nvidia.com/gpu.product` label and naming the `Topology`;
* a `Topology` whose levels are the topology file's, as node labels
  (zone, rack, NVLink clique where domains span nodes, hostname last) —
  one per product when the products' nodes carry different levels (GB200
  trays in a multi-node NVLink domain beside HGX nodes whose domain is the
  node), since Kueue's TAS leaves out a node that lacks any level's label;
* a `Cohort` holding the capacity no tenant is guaranteed, and a
  `ClusterQueue` per tenant in it: `nominalQuota` is the tenant's GPU quota
  (split over the flavors in proportion to their GPUs), the fair-sharing
  weight its tier's (gold 4, silver 2, bronze 1) or its `weight:`;
* a `LocalQueue` named `intentc` in each tenant's namespace, and a
  `WorkloadPriorityClass` per SLA class.

Jobs are created suspended, labelled with the queue and the priority class,
request `nvidia.com/gpu`, and carry the PodSet topology annotations for
`within` (required) and `prefer` (preferred), at the level of their
product's Topology: `within nvlink` the NVLink clique where the product's
nodes form multi-node domains, `within rack` the rack, `within node` the
hostname.  They are not pinned to the
planned nodes: Kueue decides at admission, all pods of a Job or none.  The
plan's placement stays on the objects as annotations, so what Kueue assigned
can be compared with it (`intentc.drift.kueue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

from intentc.ir import Intent, Program, Scope, SlaClass, Tenant, Topology, TopologyNode
from intentc.plan.admission import tenant_weight
from intentc.ir.quantity import parse_quantity
from intentc.render.binding import (HOSTNAME_LABEL, BindRequest, PodBinding, Requirement, TargetDefaults,
                                    gpu_toleration, node_products, plan_annotations)
from intentc.render.meta import metadata
from intentc.render.model import HANDED_OVER_ANNOTATION
from intentc.objectmeta import GPU_INDICES_ANNOTATION
from intentc.render.tenants import PRIORITY_VALUES, priority_class_name
from intentc.topology.labels import GPU_CLIQUE, GPU_PRODUCT, GPU_RESOURCE, RACK_LABEL, ZONE_LABEL

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
COHORT = "intentc"
LOCAL_QUEUE = "intentc"
COVERED = ("cpu", "memory", GPU_RESOURCE)
# What Kueue writes on an admitted Job: it unsuspends it and injects the flavor's node
# selector and tolerations, TAS scheduling gates and PodSet labels/annotations.
HANDED_OVER = ",".join(("spec.suspend", "spec.template.metadata", "spec.template.spec.nodeSelector",
                        "spec.template.spec.tolerations", "spec.template.spec.schedulingGates"))


def flavor_name(product: str) -> str:
    """A DNS-1123 name for a GPU product ("H100-80GB" → "h100-80gb")."""
    out = "".join(c if c.isalnum() else "-" for c in product.lower()).strip("-")
    return "-".join(p for p in out.split("-") if p)[:63] or "gpu"


def _gpu_nodes(topo: Topology, products: Sequence[str] = ()) -> list[TopologyNode]:
    """The GPU nodes of `products` (every GPU node when none is named)."""
    return [n for n in topo.nodes if n.gpu_count and (not products or n.gpu_product in products)]


def _multi_node_cliques(nodes: Sequence[TopologyNode]) -> bool:
    """Every one of `nodes` sits in an NVLink domain wider than itself (GFD labels those
    `nvidia.com/gpu.clique`; a node-sized domain has no label)."""
    return bool(nodes) and all(n.domain("nvlink") not in (None, n.name) for n in nodes)


def level_labels(topo: Topology, products: Sequence[str] = ()) -> dict[str, str]:
    """Topology level → the node label Kueue reads it from, for the nodes of `products`
    (every GPU node when none is named).  A level only some of those nodes have is left
    out (Kueue's TAS only sees nodes carrying every level's label); an NVLink domain the
    size of a node is the node.  Judged per product because each product is its own
    ResourceFlavor with its own Topology: GB200 trays keep their clique level even
    where HGX nodes, whose NVLink domain is the node, carry no clique label."""
    gpu_nodes = _gpu_nodes(topo, products)
    out: dict[str, str] = {}
    for level in topo.levels:
        if level in (Scope.ZONE.value, Scope.RACK.value):
            if gpu_nodes and all(n.domain(level) for n in gpu_nodes):
                out[level] = ZONE_LABEL if level == Scope.ZONE.value else RACK_LABEL
        elif level == Scope.NVLINK.value:
            out[level] = GPU_CLIQUE if _multi_node_cliques(gpu_nodes) else HOSTNAME_LABEL
    out[Scope.NODE.value] = HOSTNAME_LABEL
    return out


def topology_levels(topo: Topology, products: Sequence[str] = ()) -> list[str]:
    """The Kueue Topology's levels for the nodes of `products`, outermost first, hostname
    last and once."""
    labels = level_labels(topo, products)
    ordered = [labels[lvl] for lvl in topo.levels if lvl in labels and labels[lvl] != HOSTNAME_LABEL]
    return list(dict.fromkeys(ordered)) + [HOSTNAME_LABEL]


def topology_names(topo: Topology) -> dict[str, str]:
    """GPU product → the name of the Kueue Topology its ResourceFlavor names: the topology
    file's name while every product has the same levels (one Topology), else one per
    product (`<topology>-<flavor>`), so no product loses a level another lacks."""
    products = _products(topo)
    if len({tuple(topology_levels(topo, (p,))) for p in products}) <= 1:
        return {p: topo.name for p in products}
    return {p: f"{topo.name}-{flavor_name(p)}" for p in products}


def scope_label(scope: str | None, topo: Topology | None, products: Sequence[str] = ()) -> str | None:
    """The node label a `within` / `prefer` scope names in the PodSet topology annotation,
    on the Topology of `products` (the Job's candidate GPU products; all when unknown).
    With several products, the levels of their nodes together: a level every one of
    them carries, so whichever flavor Kueue tries has it."""
    if scope is None:
        return None
    if topo is None:
        return {Scope.NODE.value: HOSTNAME_LABEL, Scope.NVLINK.value: HOSTNAME_LABEL}.get(scope)
    return level_labels(topo, products).get(scope)


def _products(topo: Topology) -> list[str]:
    return sorted(topo.gpu_products)


def _sum_cpu(nodes: Sequence[TopologyNode]) -> str:
    total = sum((parse_quantity(n.cpu or "0") or Decimal(0) for n in nodes), Decimal(0))
    return str(int(total)) if total == int(total) else f"{int(total * 1000)}m"


def _sum_memory(nodes: Sequence[TopologyNode]) -> str:
    total = sum((parse_quantity(n.memory or "0") or Decimal(0) for n in nodes), Decimal(0))
    return f"{int(total // 2**20)}Mi"


def split_quota(total: int, capacity: dict[str, int]) -> dict[str, int]:
    """`total` GPUs over flavors in proportion to their GPUs (largest remainder, ties by
    name), never more than a flavor has."""
    whole = sum(capacity.values())
    if whole == 0:
        return {f: 0 for f in capacity}
    total = min(total, whole)
    exact = {f: Decimal(total) * c / whole for f, c in capacity.items()}
    out = {f: int(v) for f, v in exact.items()}
    for f in sorted(capacity, key=lambda f: (-(exact[f] - out[f]), f))[: total - sum(out.values())]:
        out[f] += 1
    return out


def _resources(cpu: str, memory: str, gpus: int) -> list[dict[str, Any]]:
    return [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory},
            {"name": GPU_RESOURCE, "nominalQuota": str(gpus)}]


def cluster_queue(tenant: Tenant, flavors: Sequence[str], guaranteed: dict[str, int]) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": metadata(tenant.name, tenant=tenant.name),
            "spec": {"cohortName": COHORT,
                     "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.name}},
                     "queueingStrategy": "BestEffortFIFO",
                     "fairSharing": {"weight": str(tenant_weight(tenant))},
                     "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                     "resourceGroups": [{"coveredResources": list(COVERED), "flavors": [
                         {"name": f, "resources": _resources("0", "0", guaranteed.get(f, 0))} for f in flavors]}]}}


def kueue_objects(program: Program, topo: Topology) -> list[dict[str, Any]]:
    products = _products(topo)
    nodes_of = {p: [n for n in topo.nodes if n.gpu_product == p] for p in products}
    flavors = [flavor_name(p) for p in products]
    capacity = {flavor_name(p): sum(n.gpu_count for n in nodes_of[p]) for p in products}
    names = topology_names(topo)
    out: list[dict[str, Any]] = []
    for name in sorted(set(names.values())):
        levels = topology_levels(topo, [p for p in products if names[p] == name] if name != topo.name else ())
        out.append({"apiVersion": KUEUE_API, "kind": "Topology", "metadata": metadata(name),
                    "spec": {"levels": [{"nodeLabel": label} for label in levels]}})
    if not products:      # no GPU nodes: the file's Topology all the same, for CPU-only flavors to name
        out.append({"apiVersion": KUEUE_API, "kind": "Topology", "metadata": metadata(topo.name),
                    "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(topo)]}})
    for p in products:
        out.append({"apiVersion": KUEUE_API, "kind": "ResourceFlavor",
                    "metadata": metadata(flavor_name(p), extra_labels={"intentc.dev/gpu-product": flavor_name(p)}),
                    "spec": {"nodeLabels": {GPU_PRODUCT: p}, "topologyName": names[p],
                             "tolerations": [dict(t) for t in gpu_toleration(1)]}})
    guaranteed = {t.name: split_quota(t.quota_gpus, capacity) if t.quota_gpus else {} for t in program.tenants}
    # The cohort holds what no tenant is guaranteed, so the queues' quotas add up to the cluster.
    pool = {f: max(0, capacity[f] - sum(g.get(f, 0) for g in guaranteed.values())) for f in flavors}
    out.append({"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": metadata(COHORT),
                "spec": {"resourceGroups": [{"coveredResources": list(COVERED), "flavors": [
                    {"name": flavor_name(p), "resources": _resources(_sum_cpu(nodes_of[p]), _sum_memory(nodes_of[p]),
                                                                     pool[flavor_name(p)])}
                    for p in products]}]}})
    for t in program.tenants:
        out.append(cluster_queue(t, flavors, guaranteed[t.name]))
        out.append({"apiVersion": KUEUE_API, "kind": "LocalQueue",
                    "metadata": metadata(LOCAL_QUEUE, t.name, tenant=t.name),
                    "spec": {"clusterQueue": t.name}})
    for cls in SlaClass:
        out.append({"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass",
                    "metadata": metadata(priority_class_name(cls.value), extra_labels={"intentc.dev/sla": cls.value}),
                    "value": PRIORITY_VALUES[cls],
                    "description": f"intentc SLA class {cls.value} (P0 is admitted first)."})
    return out


@dataclass(frozen=True)
class KueueTarget(TargetDefaults):
    name: str = "kueue"

    def admits_suspended(self) -> bool:
        return True

    @property
    def requirement(self) -> Requirement:
        return Requirement(KUEUE_API, None, "Kueue")

    def tenant_gpu_ceiling(self, topology: Topology | None) -> int | None:
        """Kueue bounds each tenant (its ClusterQueue's nominal quota plus what the cohort
        lends, up to every GPU); the namespace's ResourceQuota must not cut below that, or
        a Job admitted on borrowed GPUs could not create its pods."""
        return sum(n.gpu_count for n in topology.nodes) if topology is not None else None

    def bind(self, req: BindRequest) -> PodBinding:
        intent = req.intent
        labels = {QUEUE_LABEL: LOCAL_QUEUE}
        sla = intent.constraints.sla
        if sla and sla in {c.value for c in SlaClass}:
            labels[PRIORITY_LABEL] = priority_class_name(sla)
        gpu = {GPU_RESOURCE: str(req.gpus_per_pod)} if req.gpus_per_pod else {}
        products = node_products(req) if req.gpus_per_pod else []
        selector = {GPU_PRODUCT: products[0]} if len(products) == 1 else {}
        pod_ann: dict[str, str] = {}
        wanted = intent.constraints.gpus
        if wanted is not None:
            for scope, key in ((wanted.within, REQUIRED_TOPOLOGY), (wanted.prefer, PREFERRED_TOPOLOGY)):
                label = scope_label(scope, req.topology, products)
                if label and REQUIRED_TOPOLOGY not in pod_ann:
                    pod_ann[key] = label
        annotations = plan_annotations(req.allocations) if req.allocations else {}
        env = {"INTENTC_GPU_INDICES": annotations[GPU_INDICES_ANNOTATION]} if annotations else {}
        return PodBinding(node_selector=selector, tolerations=gpu_toleration(req.gpus_per_pod), limits=gpu,
                          requests=gpu, annotations=annotations, pod_annotations=pod_ann, labels=labels,
                          env=env, suspend=True, object_annotations={HANDED_OVER_ANNOTATION: HANDED_OVER})

    def cluster_objects(self, program: Program, intents: Sequence[Intent],
                        topology: Topology | None) -> list[dict[str, Any]]:
        return kueue_objects(program, topology) if topology is not None else []
