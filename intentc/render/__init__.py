"""IR + plan → Kubernetes objects (pure; docs/design.md, "Objects on the cluster").

`render` is the one entry point: it knows nothing of clusters or git — the
commit SHA and the target Kubernetes version are inputs — so the same
program, plan, commit and version give byte-identical manifests.
"""

from __future__ import annotations

from typing import Any, Collection, Iterable, Mapping

from intentc.ir import Intent, Program, Topology
from intentc.plan.model import BatchSizing, Placement, Plan, Strategy
from intentc.policy import BUILTIN, Policies, Requirement
from intentc.render.admission import admission_objects
from intentc.render.binding import GPU_QUOTA
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import SETUP_KINDS, Choice, Manifest, Rendered, SetupStep, wave_step
from intentc.objectmeta import TENANT_LABEL, ObjectRef
from intentc.render.crd import intent_crd
from intentc.render.packed import BodyCodec
from intentc.render.policy_objects import (default_deny, disruption_budget, pod_count, state_claim,
                                           with_env, with_state_volume)
from intentc.render.stamp import stamp
from intentc.render.targets import DEFAULT_TARGET, RenderTarget, get_target, version_problem
from intentc.render.tenants import namespace, priority_classes, resource_quota, role_binding
from intentc.render.workloads import workload_objects

__all__ = ["render", "Rendered", "Manifest", "KubeVersion", "DEFAULT_KUBE_VERSION",
           "manifest", "tenant_manifests", "priority_class_manifests", "intent_manifests", "target_manifests", "crd_manifest",
           "admission_manifests"]


def _step(body: Mapping[str, Any], wave: int) -> int:
    """Setup kinds (queues, claim templates: what a workload refers to) go before the waves."""
    kind = body["kind"]
    return SETUP_KINDS[kind] if kind in SETUP_KINDS else wave_step(wave)


def manifest(body: dict[str, Any], step: int, commit: str, tenant: str | None = None,
             intent: str | None = None) -> Manifest:
    """A desired object stamped with the commit and its spec hash."""
    stamped, digest = stamp(body, commit)
    return Manifest(ObjectRef.of(stamped), step, stamped, digest, intent, tenant)


def tenant_manifests(program: Program, commit: str, plan: Plan | None = None,
                     policies: Policies = BUILTIN, gpu_quota: str = GPU_QUOTA,
                     gpu_ceiling: int | None = None, deny: Collection[str] | None = None) -> list[Manifest]:
    """Per tenant: Namespace, ResourceQuota (always: see `resource_quota`; its GPU key and
    ceiling are the render target's), RoleBinding (when the tenant names a group), and a default-deny
    NetworkPolicy when a tag rule of one of its intents requires it (`deny`: those tenants,
    when the caller knows them already; working them out reads every intent's tags)."""
    if deny is None:
        deny = {i.tenant for i in program.intents if policies.requires(i, Requirement.DEFAULT_DENY_NETWORK)}
    planned = {s.tenant: s.allocated_gpus for s in plan.tenants} if plan is not None else {}
    out: list[Manifest] = []
    for t in program.tenants:
        out.append(manifest(namespace(t), SetupStep.NAMESPACES, commit, t.name))
        bodies = [role_binding(t), resource_quota(t, planned.get(t.name, 0), gpu_quota, gpu_ceiling),
                  default_deny(t) if t.name in deny else None]
        for body in bodies:
            if body is not None:
                out.append(manifest(body, SETUP_KINDS[body["kind"]], commit, t.name))
    return out


def crd_manifest(kube_version: KubeVersion, commit: str) -> Manifest:
    """The Intent CRD (render/crd.py): part of every compile, so `apply` installs it."""
    return manifest(intent_crd(kube_version), SetupStep.NAMESPACES, commit)


def admission_manifests(policies: Policies, commit: str) -> list[Manifest]:
    """The organisation rules the cluster enforces too (render/admission.py): a policy and a binding each."""
    return [manifest(body, SETUP_KINDS[body["kind"]], commit) for body in admission_objects(policies.cel)]


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
                     batch: BatchSizing | None = None, policies: Policies = BUILTIN,
                     strategy: Strategy | None = None, topology: Topology | None = None
                     ) -> tuple[tuple[Manifest, ...], Choice | None]:
    """The workload objects of one scheduled intent, and the rendering choice made for it.
    `batch` is the plan's sizing of a `batch: auto` intent (`Plan.batch`); `policies`
    the tag rules that may add a volume, a claim and a disruption budget; `strategy` the
    plan's batching decision (`Plan.strategy`), passed to the container; `topology` what
    targets that describe the cluster need."""
    bodies, choice = workload_objects(intent, placement, wave, kube_version, target, uris,
                                      batch.size if batch is not None else None, topology)
    if strategy is not None:
        bodies = [with_env(b, {"INTENTC_STRATEGY": strategy.strategy,
                               "INTENTC_ALLOWED_PRECISIONS": ",".join(strategy.precisions)})
                  if b["kind"] in ("Job", "Deployment", "CronJob") else b for b in bodies]
    volume = policies.requires(intent, Requirement.PERSISTENT_VOLUME)
    if volume is not None:
        pods = pod_count(bodies)
        bodies = [with_state_volume(b, intent) if b["kind"] in ("Job", "Deployment", "CronJob") else b
                  for b in bodies] + [state_claim(intent, volume.volume_size, pods)]
    if policies.requires(intent, Requirement.DISRUPTION_BUDGET) is not None:
        bodies.append(disruption_budget(intent, kube_version))
    return tuple(manifest(b, _step(b, wave), commit, intent.tenant, intent.name) for b in bodies), choice


def render(program: Program, plan: Plan, commit: str,
           kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
           topology: Topology | None = None, policies: Policies = BUILTIN, hold: Iterable[str] = (),
           pack: BodyCodec | None = None) -> Rendered:
    """Every desired object, in apply order.  Intents the plan does not
    schedule (not in any wave) are not rendered: the planner reported why.
    `topology` (plain data, as loaded) is what targets that describe the
    cluster itself need: Kueue's flavors and levels, DRA's NVLink cliques.
    Tenants in `hold` get nothing rendered; the PriorityClasses their
    scheduled intents use stay, since what they already run needs them.
    With `pack`, each object's body is packed as soon as it is made
    (render/packed.py), for a process that keeps them all: the bodies as
    dictionaries would be held all at once."""
    tgt = get_target(target)
    problem = version_problem(tgt, kube_version)
    if problem:
        raise ValueError(problem)
    held = tuple(sorted(set(hold)))
    wave_of = {name: n for n, wave in enumerate(plan.waves) for name in wave}
    placement_of = {p.intent: p for p in plan.placements}    # dicts: 10,000 intents stay linear
    batch_of = {b.intent: b for b in plan.batches}
    strategy_of = {s.intent: s for s in plan.strategies}
    scheduled = [i for i in program.intents if i.name in wave_of]
    intents = [i for i in scheduled if i.tenant not in held]
    kept = Program(tuple(t for t in program.tenants if t.name not in held), program.datasets,
                   tuple(intents), program.topologies) if held else program
    manifests = (tenant_manifests(kept, commit, plan, policies, tgt.gpu_quota, tgt.tenant_gpu_ceiling(topology))
                 + priority_class_manifests(scheduled, commit)
                 + target_manifests(tgt, kept, intents, topology, commit))
    manifests.append(crd_manifest(kube_version, commit))
    manifests.extend(admission_manifests(policies, commit))
    if pack is not None:
        manifests = [m.packed(pack) for m in manifests]
    uris = {d.name: d.uri for d in program.datasets}
    choices: list[Choice] = []
    for intent in intents:
        made, choice = intent_manifests(intent, placement_of.get(intent.name), wave_of[intent.name],
                                        kube_version, tgt, uris, commit, batch_of.get(intent.name), policies,
                                        strategy_of.get(intent.name), topology)
        manifests.extend(made if pack is None else (m.packed(pack) for m in made))
        if choice is not None:
            choices.append(choice)
    manifests.sort(key=lambda m: m.sort_key)
    return Rendered(tuple(manifests), str(kube_version), tgt.name, commit,
                    tuple(sorted(choices, key=lambda c: c.intent)), held)
