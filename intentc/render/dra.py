"""The `dra` render target: the planned GPUs as DRA claims the scheduler must honour.

With Dynamic Resource Allocation (`resource.k8s.io/v1`, Kubernetes 1.34+)
kube-scheduler allocates devices from the ResourceSlices a driver publishes,
and a claim can say exactly which: each pod template gets a
ResourceClaimTemplate whose CEL selectors name the planned GPU indices (and
the product) on NVIDIA's DRA driver (`gpu.nvidia.com`), so the devices the pod
gets are the planned ones or the pod does not schedule.  Pods stay pinned to
their planned node(s) as with `device-plugin` (DRA selectors cannot name a
node), and request no `nvidia.com/gpu`.

Where a node belongs to a multi-node NVLink domain, the claim also carries a
`matchAttribute` constraint on the driver's `cliqueID`, so all its devices
come from one clique.  A claim is per pod, so this cannot tie different pods
of a gang to one clique; the planned node pins do that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from intentc.render.binding import (BindRequest, PodBinding, Requirement, TargetDefaults, gpu_toleration, ints, node_pins,
                                    node_products, plan_annotations)
from intentc.render.capabilities import KubeVersion
from intentc.render.meta import labels, metadata
from intentc.objectmeta import GPU_INDICES_ANNOTATION

DRA_API = "resource.k8s.io/v1"
DRA_DRIVER = "gpu.nvidia.com"          # NVIDIA's DRA driver: its DeviceClass and attribute domain
DEVICE_CLASS = DRA_DRIVER
CLIQUE_ATTRIBUTE = f"{DRA_DRIVER}/cliqueID"
CLAIM_NAME = "gpus"                    # the claim's name inside the pod and the request's name


def claim_template_name(owner: str) -> str:
    return f"{owner}-gpus"


def _quoted(values: Sequence[str]) -> str:
    return ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)


def selectors(indices: Sequence[int], products: Sequence[str]) -> list[dict[str, Any]]:
    """CEL selectors on the driver's attributes: the planned indices, and the product."""
    attrs = f'device.attributes["{DRA_DRIVER}"]'
    out = [{"cel": {"expression": f"{attrs}.index in [{', '.join(str(i) for i in indices)}]"}}]
    if len(products) == 1:
        out.append({"cel": {"expression": f"{attrs}.productName == {_quoted(products)}"}})
    elif products:
        out.append({"cel": {"expression": f"{attrs}.productName in [{_quoted(products)}]"}})
    return out


def _in_multi_node_clique(req: BindRequest) -> bool:
    """True when every planned node sits in an NVLink domain wider than itself (a
    clique the driver publishes as `cliqueID`)."""
    if req.topology is None or not req.allocations:
        return False
    domain = {n.name: n.domain("nvlink") for n in req.topology.nodes}
    return all(domain.get(a.node) not in (None, a.node) for a in req.allocations)


def claim_template(req: BindRequest, indices: Sequence[int]) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [{"name": CLAIM_NAME, "exactly": {
        "deviceClassName": DEVICE_CLASS, "allocationMode": "ExactCount", "count": req.gpus_per_pod,
        "selectors": selectors(indices, node_products(req))}}]}
    if _in_multi_node_clique(req):
        devices["constraints"] = [{"requests": [CLAIM_NAME], "matchAttribute": CLIQUE_ATTRIBUTE}]
    intent = req.intent
    # The claims made from the template carry the intent's labels, so what the
    # scheduler allocated can be traced back to the plan.
    return {"apiVersion": DRA_API, "kind": "ResourceClaimTemplate",
            "metadata": metadata(claim_template_name(req.owner), req.namespace, tenant=intent.tenant,
                                 intent=intent.name),
            "spec": {"metadata": {"labels": labels(intent.tenant, intent.name)}, "spec": {"devices": devices}}}


@dataclass(frozen=True)
class DraTarget(TargetDefaults):
    name: str = "dra"

    @property
    def requirement(self) -> Requirement:
        return Requirement(DRA_API, KubeVersion(1, 34), "Dynamic Resource Allocation")

    @property
    def gpu_quota(self) -> str:
        """Claims are not `nvidia.com/gpu` requests: quota counts devices of the class."""
        return f"{DEVICE_CLASS}.deviceclass.resource.k8s.io/devices"

    def exact_devices(self) -> bool:
        return True

    def bind(self, req: BindRequest) -> PodBinding:
        allocs = req.allocations
        if not allocs or not req.gpus_per_pod:
            return PodBinding()
        sets = sorted({a.gpus for a in allocs})
        indices = sorted({i for s in sets for i in s})
        note = ""
        if len(sets) > 1:
            # Only a pod template shared by nodes with different planned sets gets here
            # (a Deployment's replicas): DRA selectors cannot say "these on node a, those on b".
            note = (f"planned GPU indices differ per node ({'; '.join(f'{a.node}={ints(a.gpus)}' for a in allocs)}): "
                    f"the claim selects from their union {ints(indices)}")
        selector, affinity = node_pins(allocs, req.spread_labels)
        annotations = plan_annotations(allocs)
        return PodBinding(node_selector=selector, affinity=affinity, tolerations=gpu_toleration(req.gpus_per_pod),
                          annotations=annotations, env={"INTENTC_GPU_INDICES": annotations[GPU_INDICES_ANNOTATION]},
                          resource_claims=((CLAIM_NAME, claim_template_name(req.owner)),),
                          objects=(claim_template(req, indices),), note=note)
