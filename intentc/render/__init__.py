"""IR + plan → Kubernetes objects (pure; DESIGN.md "Objects on the cluster").

`render` is the one entry point: it knows nothing of clusters or git — the
commit SHA and the target Kubernetes version are inputs — so the same
program, plan, commit and version give byte-identical manifests.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from intentc.ir import Intent, Program, Topology
from intentc.plan.model import Placement, Plan
from intentc.render.binding import GPU_QUOTA
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import (SETUP_KINDS, TENANT_LABEL, Choice, Manifest, ObjectRef, Rendered,
                                  SetupStep, wave_step)
from intentc.render.stamp import stamp
from intentc.render.targets import DEFAULT_TARGET, RenderTarget, get_target, version_problem
from intentc.render.tenants import namespace, priority_classes, resource_quota, role_binding
from intentc.render.workloads import workload_objects

__all__ = ["render", "Rendered", "Manifest", "ObjectRef", "KubeVersion", "DEFAULT_KUBE_VERSION",
           "manifest", "tenant_manifests", "priority_class_manifests", "intent_manifests", "target_manifests"]


def _step(body: Mapping[str, Any], wave: int) -> int:
    """Setup kinds (queues, claim templates: what a workload refers to) go before the waves."""
    kind = body["kind"]
    return SETUP_KINDS[kind] if kind in SETUP_KINDS else wave_step(wave)


def manifest(body: dict[str, Any], step: int, commit: str, tenant: str | None = None,
             intent: str | None = None) -> Manifest:
    """A desired object stamped with the commit and its spec hash."""
    stamped, digest = stamp(body, commit)
    return Manifest(ObjectRef.of(stamped), step, stamped, digest, intent, tenant)


def tenant_manifests(program: Program, commit: str, gpu_quota: str = GPU_QUOTA) -> list[Manifest]:
    """Per tenant: Namespace, RoleBinding and ResourceQuota (the latter two when configured)."""
    out: list[Manifest] = []
    for t in program.tenants:
        out.append(manifest(namespace(t), SetupStep.NAMESPACES, commit, t.name))
        for body in (role_binding(t), resource_quota(t, gpu_quota)):
            if body is not None:
                out.append(manifest(body, SETUP_KINDS[body["kind"]], commit, t.name))
    return out


def priority_class_manifests(intents: Iterable[Intent], commit: str) -> list[Manifest]:
    """One PriorityClass per SLA class the scheduled intents use."""
    slas = [i.constraints.sla for i in intents if i.constraints.sla]
    return [manifest(body, SetupStep.PRIORITY_CLASSES, commit) for body in priority_classes(slas)]


def target_manifests(target: RenderTarget, program: Program, intents: Iterable[Intent],
                     topology: Topology | None, commit: str) -> list[Manifest]:
    """The cluster-wide objects a render target needs (Kueue's queues and flavors)."""
    bodies = target.cluster_objects(program, list(intents), topology)
    return [manifest(b, _step(b, 0), commit, b["metadata"].get("labels", {}).get(TENANT_LABEL)) for b in bodies]


def intent_manifests(intent: Intent, placement: Placement | None, wave: int, kube_version: KubeVersion,
                     target: RenderTarget, uris: Mapping[str, str | None], commit: str,
                     topology: Topology | None = None) -> tuple[tuple[Manifest, ...], Choice | None]:
    """The workload objects of one scheduled intent, and the rendering choice made for it."""
    bodies, choice = workload_objects(intent, placement, wave, kube_version, target, uris, topology)
    return tuple(manifest(b, _step(b, wave), commit, intent.tenant, intent.name) for b in bodies), choice


def render(program: Program, plan: Plan, commit: str,
           kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
           topology: Topology | None = None) -> Rendered:
    """Every desired object, in apply order.  Intents the plan does not
    schedule (not in any wave) are not rendered: the planner reported why.
    `topology` (plain data, as loaded) is what targets that describe the
    cluster itself need: Kueue's flavors and levels, DRA's NVLink cliques."""
    tgt = get_target(target)
    problem = version_problem(tgt, kube_version)
    if problem:
        raise ValueError(problem)
    wave_of = {name: n for n, wave in enumerate(plan.waves) for name in wave}
    placement_of = {p.intent: p for p in plan.placements}    # dicts: 10,000 intents stay linear
    intents = [i for i in program.intents if i.name in wave_of]
    manifests = (tenant_manifests(program, commit, tgt.gpu_quota) + priority_class_manifests(intents, commit)
                 + target_manifests(tgt, program, intents, topology, commit))
    uris = {d.name: d.uri for d in program.datasets}
    choices: list[Choice] = []
    for intent in intents:
        made, choice = intent_manifests(intent, placement_of.get(intent.name), wave_of[intent.name],
                                        kube_version, tgt, uris, commit, topology)
        manifests.extend(made)
        if choice is not None:
            choices.append(choice)
    manifests.sort(key=lambda m: m.sort_key)
    return Rendered(tuple(manifests), str(kube_version), tgt.name, commit,
                    tuple(sorted(choices, key=lambda c: c.intent)))
