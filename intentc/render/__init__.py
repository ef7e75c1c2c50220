"""IR + plan → Kubernetes objects (pure; DESIGN.md "Objects on the cluster").

`render` is the one entry point: it knows nothing of clusters or git — the
commit SHA and the target Kubernetes version are inputs — so the same
program, plan, commit and version give byte-identical manifests.
"""

from __future__ import annotations

from typing import Any

from intentc.ir import Program
from intentc.plan.model import Plan
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import (SETUP_KINDS, Choice, Manifest, ObjectRef, Rendered,
                                  SetupStep, wave_step)
from intentc.render.stamp import stamp
from intentc.render.targets import DEFAULT_TARGET, get_target
from intentc.render.tenants import namespace, priority_classes, resource_quota, role_binding
from intentc.render.workloads import workload_objects

__all__ = ["render", "Rendered", "Manifest", "ObjectRef", "KubeVersion", "DEFAULT_KUBE_VERSION"]


def _manifest(body: dict[str, Any], step: int, commit: str, tenant: str | None = None,
              intent: str | None = None) -> Manifest:
    stamped, digest = stamp(body, commit)
    return Manifest(ObjectRef.of(stamped), step, stamped, digest, intent, tenant)


def render(program: Program, plan: Plan, commit: str,
           kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET) -> Rendered:
    """Every desired object, in apply order.  Intents the plan does not
    schedule (not in any wave) are not rendered: the planner reported why."""
    tgt = get_target(target)
    manifests: list[Manifest] = []
    for t in program.tenants:
        manifests.append(_manifest(namespace(t), SetupStep.NAMESPACES, commit, t.name))
        for body in (role_binding(t), resource_quota(t)):
            if body is not None:
                manifests.append(_manifest(body, SETUP_KINDS[body["kind"]], commit, t.name))
    wave_of = {name: n for n, wave in enumerate(plan.waves) for name in wave}
    placement_of = {p.intent: p for p in plan.placements}    # dicts: 10,000 intents stay linear
    intents = [i for i in program.intents if i.name in wave_of]
    slas = [i.constraints.sla for i in intents if i.constraints.sla]
    for body in priority_classes(slas):
        manifests.append(_manifest(body, SetupStep.PRIORITY_CLASSES, commit))
    uris = {d.name: d.uri for d in program.datasets}
    choices: list[Choice] = []
    for intent in intents:
        wave = wave_of[intent.name]
        bodies, choice = workload_objects(intent, placement_of.get(intent.name), wave, kube_version, tgt, uris)
        if choice is not None:
            choices.append(choice)
        for body in bodies:
            manifests.append(_manifest(body, wave_step(wave), commit, intent.tenant, intent.name))
    manifests.sort(key=lambda m: m.sort_key)
    return Rendered(tuple(manifests), str(kube_version), tgt.name, commit,
                    tuple(sorted(choices, key=lambda c: c.intent)))
