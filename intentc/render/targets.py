"""Render targets: how a planned GPU set reaches the cluster (docs/design.md, "GPU binding on the cluster").

The planner decides nodes and GPU indices once; a target turns that into
pod-spec fields (`intentc.render.binding` is the contract).

* `device-plugin` (default) works on every cluster: pin the pod to its
  node(s), request `nvidia.com/gpu`, and carry the exact indices, NUMA nodes
  and NICs as annotations.  The GPU set inside a node is advisory there: the
  device plugin picks the devices.
* `dra` (`intentc.render.dra`): ResourceClaimTemplates for exactly the planned
  devices; kube-scheduler allocates them or the pod does not run.
* `kueue` (`intentc.render.kueue`): Kueue's queues, flavors and topology;
  workloads are created suspended and Kueue admits them on live state.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentc.render.binding import (HOSTNAME_LABEL, BindRequest, PodBinding, RenderTarget, Requirement,
                                    TargetDefaults, gpu_toleration, node_pins, plan_annotations)
from intentc.render.capabilities import KubeVersion, unsupported_message
from intentc.topology.labels import GPU_RESOURCE
from intentc.objectmeta import GPU_INDICES_ANNOTATION
from intentc.render.dra import DraTarget
from intentc.render.kueue import KueueTarget

__all__ = ["GPU_RESOURCE", "HOSTNAME_LABEL", "BindRequest", "PodBinding", "RenderTarget", "Requirement",
           "DevicePluginTarget", "TARGETS", "DEFAULT_TARGET", "get_target", "version_problem"]


@dataclass(frozen=True)
class DevicePluginTarget(TargetDefaults):
    name: str = "device-plugin"

    def bind(self, req: BindRequest) -> PodBinding:
        if not req.allocations:
            return PodBinding()
        annotations = plan_annotations(req.allocations)
        gpu = {GPU_RESOURCE: str(req.gpus_per_pod)} if req.gpus_per_pod else {}
        selector, affinity = node_pins(req.allocations, req.spread_labels)
        return PodBinding(node_selector=selector, affinity=affinity, tolerations=gpu_toleration(req.gpus_per_pod),
                          limits=gpu, requests=gpu, annotations=annotations,
                          env={"INTENTC_GPU_INDICES": annotations[GPU_INDICES_ANNOTATION]})


TARGETS: dict[str, RenderTarget] = {t.name: t for t in (DevicePluginTarget(), DraTarget(), KueueTarget())}
DEFAULT_TARGET = "device-plugin"


def get_target(name: str) -> RenderTarget:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown render target {name!r} (available: {', '.join(sorted(TARGETS))})") from None


def version_problem(target: RenderTarget, version: KubeVersion) -> str | None:
    """Why `target` cannot be rendered for Kubernetes `version` (None: it can).
    Below the supported floor nothing is rendered: every field intentc writes
    (`podFailurePolicy`, Job `suspend`, `autoscaling/v2`, `policy/v1`, CEL
    validation rules) is served from there on, so no renderer branches on it."""
    if not version.supported:
        return unsupported_message(version, "the render version")
    req = target.requirement
    if req is not None and req.min_kube is not None and version < req.min_kube:
        return (f"render target {target.name!r} needs Kubernetes {req.min_kube} or later ({req.what}, "
                f"{req.api_version}); rendering for {version}")
    return None
