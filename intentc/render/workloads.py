"""Per-intent workloads: Jobs for run-to-completion actions, Deployment + Service for serving.

A gang that spans several nodes needs one pod per planned node: an Indexed
Job (stable ranks from the completion index), each pod pinned to a distinct
planned node by node affinity plus pod anti-affinity.  When the nodes carry
different GPU counts no single pod template fits, so each node gets its own Job;
so does a target that names devices (`dra`) when the planned index sets differ.
The decision is returned as a `Choice` and stamped as `intentc.dev/gang-mode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from intentc.graph.digraph import duration_seconds
from intentc.ir import ActionKind, Intent, Topology, TriggerKind
from intentc.plan.model import NodeAllocation, Placement
from intentc.render.autoscale import autoscaler, batch_growth
from intentc.render.binding import BindRequest, PodBinding, RenderTarget, node_products
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.fallback import (GPU_FAILURE_EXIT_CODES, Variant, back_to_the_same_gpus, failure_spec,
                                     released_from_nodes, variant_annotations, variants)
from intentc.objectmeta import INTENT_LABEL, TENANT_LABEL
from intentc.render.meta import labels, metadata
from intentc.render.model import HANDED_OVER_ANNOTATION, PLANNED_DURATION_ANNOTATION, Choice
from intentc.render.nccl import nccl_env
from intentc.render.tenants import priority_class_name

DEFAULT_SERVE_PORT = 8000
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


@dataclass(frozen=True)
class GangLayout:
    mode: str                                        # single | indexed | per-node
    groups: tuple[tuple[NodeAllocation, ...], ...]   # one Job per group
    reason: str = ""


def gang_layout(placement: Placement | None, exact_devices: bool = False) -> GangLayout:
    allocs = tuple(sorted(placement.allocations, key=lambda a: a.node)) if placement else ()
    if len(allocs) <= 1:
        return GangLayout("single", (allocs,))
    counts = sorted({len(a.gpus) for a in allocs})
    if len(counts) > 1:
        return GangLayout("per-node", tuple((a,) for a in allocs),
                          f"GPU counts differ per node ({', '.join(str(len(a.gpus)) for a in allocs)}): "
                          f"one Job per node")
    if exact_devices and len({a.gpus for a in allocs}) > 1:
        return GangLayout("per-node", tuple((a,) for a in allocs),
                          f"planned GPU indices differ per node "
                          f"({'; '.join(f'{a.node}=' + ','.join(map(str, a.gpus)) for a in allocs)}): "
                          f"one Job (and device claim) per node")
    return GangLayout("indexed", (allocs,), f"{len(allocs)} indexed pods, one per planned node")


def _env_list(plain: Mapping[str, str], refs: Mapping[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in plain.items()]
    items += [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": path}}} for k, path in refs.items()]
    return sorted(items, key=lambda e: e["name"])


def effective_batch(intent: Intent, resolved: int | None) -> int | None:
    """The batch the workload runs with: the fixed size, or the planner's size for
    `batch: auto` (plan/batch_size.py; 1 when the plan did not size it); None without a batch."""
    s = intent.action.settings
    if s is None or s.batch is None:
        return None
    if s.batch.auto:
        return resolved if resolved is not None else 1
    return s.batch.size


def intent_env(intent: Intent, dataset_uris: Mapping[str, str | None], batch: int | None = None
               ) -> dict[str, str]:
    """`batch` is the effective batch (see `effective_batch`)."""
    env = {"INTENTC_INTENT": intent.name, "INTENTC_TENANT": intent.tenant}
    a, s = intent.action, intent.action.settings
    if a.model:
        env["INTENTC_MODEL"] = a.model
    if batch is not None:
        env["INTENTC_BATCH"] = str(batch)
    if s is not None:
        if s.seq_len is not None:
            env["INTENTC_SEQ_LEN"] = str(s.seq_len)
        if s.kv_cache:
            env["INTENTC_KV_CACHE"] = s.kv_cache
        if s.precision:
            env["INTENTC_PRECISION"] = s.precision
    for var, refs in (("INTENTC_CONSUMES", intent.consumes), ("INTENTC_PRODUCES", intent.produces)):
        if refs:
            env[var] = ",".join(f"{r.name}={dataset_uris.get(r.name) or ''}" for r in refs)
    return env


def trigger_text(intent: Intent) -> str:
    t = intent.trigger
    if t.after:
        return f"{t.kind}:{','.join(r.name for r in t.after)}"
    if t.schedule:
        return f"{t.kind}:{t.schedule}"
    return t.kind


def _container(intent: Intent, binding: PodBinding, env: list[dict[str, Any]],
               port: int | None) -> dict[str, Any]:
    c = intent.constraints
    requests = {k: v for k, v in (("cpu", c.cpu), ("memory", c.memory)) if v}
    limits = {"memory": c.memory} if c.memory else {}
    requests.update(binding.requests)
    limits.update(binding.limits)
    container: dict[str, Any] = {"name": "main", "image": intent.action.image}
    if intent.action.command:
        container["command"] = list(intent.action.command)
    if env:
        container["env"] = env
    if port is not None:
        container["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
    resources: dict[str, Any] = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    if binding.resource_claims:
        resources["claims"] = [{"name": name} for name, _ in binding.resource_claims]
    if resources:
        container["resources"] = resources
    return container


def _pod_template(intent: Intent, binding: PodBinding, env: list[dict[str, Any]],
                  annotations: Mapping[str, str], restart: str, port: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container(intent, binding, env, port)], "restartPolicy": restart}
    if binding.node_selector:
        spec["nodeSelector"] = dict(binding.node_selector)
    if binding.affinity:
        spec["affinity"] = dict(binding.affinity)
    if binding.tolerations:
        spec["tolerations"] = [dict(t) for t in binding.tolerations]
    if intent.constraints.sla:
        spec["priorityClassName"] = priority_class_name(intent.constraints.sla)
    if binding.resource_claims:
        spec["resourceClaims"] = [{"name": name, "resourceClaimTemplateName": template}
                                  for name, template in binding.resource_claims]
    meta: dict[str, Any] = {"labels": labels(intent.tenant, intent.name)}
    if annotations or binding.pod_annotations:
        meta["annotations"] = {**annotations, **binding.pod_annotations}
    return {"metadata": meta, "spec": spec}


def _annotations(intent: Intent, placement: Placement | None, wave: int, target: str) -> dict[str, str]:
    ann = {"intentc.dev/wave": str(wave), "intentc.dev/trigger": trigger_text(intent),
           "intentc.dev/action": intent.action.kind, "intentc.dev/render-target": target}
    if intent.constraints.sla:
        ann["intentc.dev/sla"] = intent.constraints.sla
    if placement is not None and placement.allocations:
        ann["intentc.dev/interconnect"] = placement.interconnect
    return ann


def _gpus_per_pod(intent: Intent, allocations: Sequence[NodeAllocation]) -> int:
    if allocations:
        return max(len(a.gpus) for a in allocations)
    return intent.gpu_count


def _workload_metadata(name: str, intent: Intent, annotations: Mapping[str, str],
                       binding: PodBinding) -> dict[str, Any]:
    return metadata(name, intent.tenant, tenant=intent.tenant, intent=intent.name, annotations=annotations,
                    extra_labels=binding.labels)


def _job(intent: Intent, name: str, group: tuple[NodeAllocation, ...], layout: GangLayout, rank: int,
         world: int, placement: Placement | None, wave: int, version: KubeVersion, target: RenderTarget,
         dataset_uris: Mapping[str, str | None], batch: int | None, variant: Variant | None,
         topology: Topology | None) -> list[dict[str, Any]]:
    """One Job of the gang (`variant` None), or one suspended step of its fallback chain,
    followed by the objects its binding needs (a DRA claim template)."""
    cpu = variant is not None and variant.cpu
    pods = max(len(group), 1)
    spread = {INTENT_LABEL: intent.name, TENANT_LABEL: intent.tenant}
    request = (BindRequest(intent, name, (), 0, spread, topology) if cpu
               else BindRequest(intent, name, group, _gpus_per_pod(intent, group), spread, topology))
    binding = target.bind(request)
    if variant is not None and not cpu:
        binding = released_from_nodes(binding, [a.node for a in group], node_products(request))
    if variant is not None and variant.same_gpus:
        binding = back_to_the_same_gpus(binding)
    plain = {**intent_env(intent, dataset_uris, batch if variant is None else variant.batch), **binding.env,
             **dict(variant.env if variant is not None else ())}
    refs: dict[str, str] = {}
    if placement is not None and not cpu:
        plain.update(nccl_env(placement, group))
    if placement is not None and placement.allocations and not cpu:
        plain["INTENTC_GPU_FAILURE_EXIT_CODES"] = ",".join(str(c) for c in GPU_FAILURE_EXIT_CODES)
    if cpu:
        plain["INTENTC_DEVICE"] = "cpu"
    if world > 1:
        plain.update({"INTENTC_WORLD_SIZE": str(world), "INTENTC_GANG_MODE": layout.mode})
        refs["INTENTC_NODE_NAME"] = "spec.nodeName"
        if layout.mode == "per-node":
            plain["INTENTC_RANK"] = str(rank)
        elif layout.mode == "indexed":
            refs["INTENTC_RANK"] = COMPLETION_INDEX
    ann = {**_annotations(intent, None if cpu else placement, wave, target.name), **binding.annotations}
    if world > 1:
        ann["intentc.dev/gang-mode"] = layout.mode
    if variant is not None:
        ann.update(variant_annotations(name, variant))
    pod_ann = {k: v for k, v in ann.items() if k not in ("intentc.dev/wave", "intentc.dev/trigger")}
    pod_ann[PLANNED_DURATION_ANNOTATION] = str(duration_seconds(intent))
    ann.update(binding.object_annotations)
    gpu = bool(placement is not None and placement.allocations) and not cpu
    spec: dict[str, Any] = {**failure_spec(intent, version, gpu), "completions": pods, "parallelism": pods}
    if layout.mode == "indexed":
        spec["completionMode"] = "Indexed"
    if variant is not None or binding.suspend:
        spec["suspend"] = True
    spec["template"] = _pod_template(intent, binding, _env_list(plain, refs), pod_ann, "Never", None)
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": _workload_metadata(name, intent, ann, binding), "spec": spec}
    return [job, *(dict(o) for o in binding.objects)]


def jobs(intent: Intent, placement: Placement | None, wave: int, version: KubeVersion,
         target: RenderTarget, dataset_uris: Mapping[str, str | None], batch: int | None = None,
         with_variants: bool = True, topology: Topology | None = None) -> tuple[list[dict[str, Any]], Choice | None]:
    """The gang's Jobs, each followed by its suspended fallback variants (render/fallback.py)
    when `with_variants` (not for CronJobs) and the target leaves Jobs' suspension to
    intentc (a queue such as Kueue resumes every suspended Job it is handed)."""
    layout = gang_layout(placement, target.exact_devices())
    world = sum(len(g) for g in layout.groups) or 1
    gpu = placement is not None and bool(placement.allocations)
    batch = effective_batch(intent, batch)
    queued = target.admits_suspended()
    steps = variants(intent, batch, gpu) if with_variants and not queued else ()
    out: list[dict[str, Any]] = []
    for rank, group in enumerate(layout.groups):
        name = intent.name if len(layout.groups) == 1 else f"{intent.name}-{rank}"
        args = (group, layout, rank, world, placement, wave, version, target, dataset_uris, batch)
        out.extend(_job(intent, name, *args, None, topology))
        for v in steps:
            out.extend(_job(intent, f"{name}-{v.suffix}", *args, v, topology))
    reason = layout.reason
    if layout.mode == "per-node" and queued:
        reason += "; a queue admits each of those Jobs on its own, not the gang as a whole"
    decisions = [(layout.mode, reason)] if reason else []
    if not decisions:
        return out, None
    return out, Choice(intent.name, ", ".join(d for d, _ in decisions), "; ".join(r for _, r in decisions))


def deployment_and_service(intent: Intent, placement: Placement | None, wave: int, target: RenderTarget,
                           dataset_uris: Mapping[str, str | None], batch: int | None = None,
                           version: KubeVersion = DEFAULT_KUBE_VERSION, topology: Topology | None = None
                           ) -> tuple[list[dict[str, Any]], Choice | None]:
    """The planned GPU set is the service's whole footprint; replicas share it
    evenly, so replicas × per-replica GPUs is exactly what the plan (and the
    quota) counted.  The tenancy pass refuses a count that does not divide
    (E0903); should one reach here, replicas are cut to what the GPUs hold
    rather than asking the cluster for more than was planned."""
    allocs = tuple(sorted(placement.allocations, key=lambda a: a.node)) if placement else ()
    port = intent.action.port or DEFAULT_SERVE_PORT
    asked = intent.action.replicas or 1
    planned = sum(len(a.gpus) for a in allocs) if allocs else intent.gpu_count
    replicas = min(asked, planned) if planned else asked
    while planned and planned % replicas:
        replicas -= 1
    per_pod = planned // replicas if planned else 0
    choice = None
    if replicas != asked:
        choice = Choice(intent.name, "replicas-cut",
                        f"{planned} planned GPUs do not divide into {asked} replicas: "
                        f"{replicas} replicas of {per_pod} GPUs")
    selector = {INTENT_LABEL: intent.name, TENANT_LABEL: intent.tenant}
    binding = target.bind(BindRequest(intent, intent.name, allocs, per_pod, {}, topology))
    if choice is None and binding.note:
        choice = Choice(intent.name, "union", binding.note)
    plain = {**intent_env(intent, dataset_uris, effective_batch(intent, batch)), **binding.env,
             "INTENTC_PORT": str(port), "INTENTC_BATCH_GROWTH": batch_growth(intent)}
    if placement is not None:
        plain.update(nccl_env(placement, allocs))
    ann = {**_annotations(intent, placement, wave, target.name), **binding.annotations}
    pod_ann = {k: v for k, v in ann.items() if k not in ("intentc.dev/wave", "intentc.dev/trigger")}
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _workload_metadata(intent.name, intent, ann, binding),
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                 "template": _pod_template(intent, binding, _env_list(plain, {}), pod_ann, "Always", port)},
    }
    hpa = autoscaler(intent, replicas, version)
    if hpa is not None:
        del deployment["spec"]["replicas"]          # the autoscaler owns it
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(intent.name, intent.tenant, tenant=intent.tenant, intent=intent.name,
                             annotations={"intentc.dev/wave": str(wave)}),
        "spec": {"selector": selector, "type": "ClusterIP",
                 "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}]},
    }
    return [deployment, service] + ([hpa] if hpa is not None else []) + [dict(o) for o in binding.objects], choice


# A schedule that never fires (February 31st): manual intents are CronJobs
# kept suspended, run on demand with `kubectl create job --from=cronjob/NAME`.
NEVER = "0 0 31 2 *"


def as_cronjob(job: dict[str, Any], intent: Intent) -> dict[str, Any]:
    """Wrap a rendered Job so it runs on the intent's schedule instead of at
    apply time (a scheduled or manual intent must not start on every merge)."""
    manual = intent.trigger.kind == TriggerKind.MANUAL.value
    meta = dict(job["metadata"])
    # What a Job hands over (to Kueue) is the Jobs' business, not the CronJob's.
    meta["annotations"] = {k: v for k, v in meta.get("annotations", {}).items() if k != HANDED_OVER_ANNOTATION}
    # The Jobs the CronJob controller creates are its, not intentc's: they
    # carry the intent and tenant labels but not managed-by, so drift
    # detection does not take them for orphans.
    # Queue labels (the `kueue` target) must reach each Job the CronJob creates.
    queue = {k: v for k, v in meta.get("labels", {}).items() if k.startswith("kueue.x-k8s.io/")}
    template_meta = {"labels": {INTENT_LABEL: intent.name, TENANT_LABEL: intent.tenant, **queue}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
            "spec": {"schedule": NEVER if manual else str(intent.trigger.schedule),
                     "suspend": manual,
                     "concurrencyPolicy": "Forbid",
                     "jobTemplate": {"metadata": template_meta, "spec": job["spec"]}}}


def workload_objects(intent: Intent, placement: Placement | None, wave: int, version: KubeVersion,
                     target: RenderTarget, dataset_uris: Mapping[str, str | None], batch: int | None = None,
                     topology: Topology | None = None) -> tuple[list[dict[str, Any]], Choice | None]:
    """`batch`: the planner's size for `batch: auto` (Plan.batch), ignored for a fixed batch;
    `topology`: what targets that describe the cluster need (Kueue levels, DRA cliques)."""
    if intent.action.kind == ActionKind.SERVE.value:
        return deployment_and_service(intent, placement, wave, target, dataset_uris, batch, version, topology)
    timed = intent.trigger.kind in (TriggerKind.SCHEDULE.value, TriggerKind.MANUAL.value)
    # a CronJob makes a new Job per run: suspended variants beside it would belong to no run
    bodies, choice = jobs(intent, placement, wave, version, target, dataset_uris, batch,
                          with_variants=not timed, topology=topology)
    if timed:
        bodies = [as_cronjob(b, intent) if b["kind"] == "Job" else b for b in bodies]
    return bodies, choice
