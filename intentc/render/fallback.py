"""The failure side of a rendered Job (docs/failure-fallback.md).

A run-to-completion intent degrades in a fixed chain when its GPUs fail:

1. **retry on the same product**: the Job's `podFailurePolicy` (batch/v1,
   Kubernetes ≥ 1.26) ignores disruptions (`DisruptionTarget`: preemption,
   eviction, a drained or tainted node) and counts GPU failures (the
   container exits with one of `GPU_FAILURE_EXIT_CODES`) against
   `backoffLimit` = the intent's `retries` (default 2); any other non-zero
   exit fails the Job at once, because a smaller batch or a CPU does not
   fix a bug;
2. **a power-capped retry**: `NAME-fallback-power`, the same Job told to run
   its GPUs at `POWER_LIMIT_FRACTION` of their power limit
   (`INTENTC_POWER_LIMIT_FRACTION`; the workload or its entrypoint applies it,
   e.g. `nvidia-smi -pl`, since no Kubernetes field sets a GPU's power), the
   usual cure for thermal and power Xid errors.  It goes back to the same
   GPUs: it tolerates the observation taint the daemon put on the node
   (`back_to_the_same_gpus`), which keeps everything else off;
3. **a smaller chunk** (training and offline inference, whose work is steps
   between checkpoints or dataset shards): `NAME-fallback-chunk`, the same
   Job told to checkpoint (or shard) at `CHUNK_FRACTION` of its usual size
   (`INTENTC_CHUNK_FRACTION`), so a failure loses less;
4. **a smaller batch**: `NAME-fallback-batch`, the same Job with half the
   batch;
5. **a CPU variant** (only with `fallback cpu`): `NAME-fallback-cpu`, no GPU
   request and no node pin.

Every variant is rendered *suspended*; each changes one thing against the
Job (a step runs only because the one before it did not help, so its cost is
not carried on; the CPU variant keeps the half batch, a CPU's memory being
smaller).  A GPU variant is held to the planned GPU product rather than to
the planned node (`released_from_nodes`): by the time it is resumed the daemon
has tainted the node whose GPU failed, so the scheduler must be free to put
it on another node of that product (the planned node stays preferred).

The variants are ordinary objects in the manifests (so `apply` creates them,
drift sees them, prune removes them) and carry `intentc.dev/fallback-of`,
`intentc.dev/fallback-step` and `intentc.dev/fallback-kind`; the daemon
resumes the next one when the Job before it failed with
`BackoffLimitExceeded` (`daemon/fallback.py` decides, from the step numbers
alone).  `duration × (1 + slack)` becomes every variant's
`activeDeadlineSeconds`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from intentc.ir import ActionKind, Fallback, Intent
from intentc.ir.duration import parse_duration
from intentc.plan.observation import OBSERVATION_TAINT
from intentc.render.binding import HOSTNAME_LABEL, PodBinding
from intentc.render.capabilities import KubeVersion
from intentc.topology.labels import GPU_PRODUCT

DEFAULT_RETRIES = 2
DEFAULT_SLACK = 0.5
# The workload's side of the contract (BSD sysexits): 74 EX_IOERR, a device error
# (Xid, ECC, NVLink), 75 EX_TEMPFAIL, the GPU is gone or unusable for now.
GPU_FAILURE_EXIT_CODES = (74, 75)
FALLBACK_OF = "intentc.dev/fallback-of"
FALLBACK_STEP = "intentc.dev/fallback-step"
FALLBACK_KIND = "intentc.dev/fallback-kind"
# 80 % of the GPU's default power limit: enough headroom for most thermal and power
# Xid errors, at a throughput cost of roughly a tenth on current data-centre GPUs.
POWER_LIMIT_FRACTION = "0.8"
CHUNK_FRACTION = "0.5"
# Actions whose work comes in pieces a failure can be confined to: training steps
# between checkpoints, offline inference's dataset shards.  A plain `batch` container
# is opaque to intentc: it has nothing to split.
CHUNKED_ACTIONS = frozenset({ActionKind.TRAINING.value, ActionKind.INFERENCE.value})


@dataclass(frozen=True)
class Variant:
    """One step of the chain after the Job itself: what it changes against the Job,
    told to the workload through `env` and described by `annotations`."""

    suffix: str            # appended to the Job's name
    step: int              # 1, 2, ...: the order the daemon resumes them in
    batch: int | None      # INTENTC_BATCH of the variant (None: the intent has no batch)
    cpu: bool              # no GPUs
    kind: str = ""         # power-cap | smaller-chunk | smaller-batch | cpu (intentc.dev/fallback-kind)
    env: tuple[tuple[str, str], ...] = ()          # the step's side of the workload contract
    annotations: tuple[tuple[str, str], ...] = ()  # the Job's and its pods', besides of/step/kind
    same_gpus: bool = False    # tolerates the observation taint of the node whose GPU failed


def retries(intent: Intent) -> int:
    r = intent.constraints.retries
    return DEFAULT_RETRIES if r is None else r


def active_deadline(intent: Intent) -> int | None:
    """duration × (1 + slack) in whole seconds, or None without a duration."""
    c = intent.constraints
    seconds = parse_duration(c.duration) if c.duration else None
    if seconds is None:
        return None
    slack = DEFAULT_SLACK if c.slack is None else c.slack
    return math.ceil(seconds * (1 + slack))


def pod_failure_policy(gpu: bool) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]
    if gpu:
        rules.append({"action": "Count", "onExitCodes": {"containerName": "main", "operator": "In",
                                                         "values": list(GPU_FAILURE_EXIT_CODES)}})
    stop = [0, *GPU_FAILURE_EXIT_CODES] if gpu else [0]
    rules.append({"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "NotIn",
                                                       "values": stop}})
    return {"rules": rules}


def failure_spec(intent: Intent, version: KubeVersion, gpu: bool) -> dict[str, Any]:
    """The Job spec fields of the chain's first step (merged into every variant too)."""
    spec: dict[str, Any] = {"backoffLimit": retries(intent)}
    deadline = active_deadline(intent)
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    spec["podFailurePolicy"] = pod_failure_policy(gpu)
    return spec


def variants(intent: Intent, batch: int | None, gpu: bool) -> tuple[Variant, ...]:
    """The suspended steps rendered after the Job, in resume order, numbered from 1."""
    if not gpu:
        return ()
    half = max(batch // 2, 1) if batch else batch
    steps: list[Variant] = [power_capped(batch)]
    if intent.action.kind in CHUNKED_ACTIONS:
        steps.append(smaller_chunk(batch))
    if batch is not None and batch > 1:
        steps.append(Variant("fallback-batch", 0, half, False, "smaller-batch"))
    if intent.constraints.fallback == Fallback.CPU.value:
        steps.append(Variant("fallback-cpu", 0, half, True, "cpu"))
    return tuple(replace(v, step=i) for i, v in enumerate(steps, 1))


def power_capped(batch: int | None) -> Variant:
    """The same work on the same GPUs at a lower power limit.  Kubernetes has no field
    for a GPU's power, so the workload applies `INTENTC_POWER_LIMIT_FRACTION` itself
    (`nvidia-smi -pl`, with the privilege the cluster grants its pods)."""
    return Variant("fallback-power", 0, batch, False, "power-cap",
                   (("INTENTC_POWER_LIMIT_FRACTION", POWER_LIMIT_FRACTION),),
                   (("intentc.dev/power-limit-fraction", POWER_LIMIT_FRACTION),), same_gpus=True)


def smaller_chunk(batch: int | None) -> Variant:
    """The same work checkpointed (or sharded) at a fraction of its usual size: a
    failure that comes back loses less.  The workload owns its chunk size, so the
    fraction is relative to whatever it uses."""
    return Variant("fallback-chunk", 0, batch, False, "smaller-chunk",
                   (("INTENTC_CHUNK_FRACTION", CHUNK_FRACTION),),
                   (("intentc.dev/chunk-fraction", CHUNK_FRACTION),))


def variant_annotations(job_name: str, variant: Variant) -> dict[str, str]:
    """What a variant's Job and pods carry: the chain (of, step) the daemon reads and
    the step's description (kind and its parameter) people and tools read."""
    return {FALLBACK_OF: job_name.removesuffix(f"-{variant.suffix}"), FALLBACK_STEP: str(variant.step),
            FALLBACK_KIND: variant.kind, **dict(variant.annotations)}


def back_to_the_same_gpus(binding: PodBinding) -> PodBinding:
    """A binding that also tolerates the observation taint: the power-capped retry is
    meant for the GPUs that failed, and the daemon has tainted their node by then."""
    toleration = {"key": OBSERVATION_TAINT, "operator": "Exists", "effect": "NoSchedule"}
    return replace(binding, tolerations=(*binding.tolerations, toleration))


def step_of(job: Mapping[str, Any]) -> int:
    text = str(((job.get("metadata") or {}).get("annotations") or {}).get(FALLBACK_STEP, "0"))
    return int(text) if text.isdigit() else 0


def chain_root(job: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name of the chain's first Job) — the Job itself when it is not a variant."""
    meta = job.get("metadata") or {}
    return str(meta.get("namespace") or ""), str((meta.get("annotations") or {}).get(FALLBACK_OF) or meta.get("name"))


def chains(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Jobs grouped by chain, each chain in step order (the Job first)."""
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for job in jobs:
        out.setdefault(chain_root(job), []).append(job)
    return {k: sorted(v, key=step_of) if len(v) > 1 else v for k, v in sorted(out.items())}


def is_standby(job: Mapping[str, Any]) -> bool:
    """A fallback variant not resumed yet: healthy as it is, so it never holds up a wave."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return FALLBACK_OF in annotations and bool((job.get("spec") or {}).get("suspend"))


def released_from_nodes(binding: PodBinding, nodes: Sequence[str], products: Sequence[str]) -> PodBinding:
    """The binding of a GPU variant: the planned nodes' GPU product instead of the nodes
    themselves, the planned nodes preferred.  A binding that names devices (DRA claims)
    is left as it is: its claims are the pin, and they stay on the planned node."""
    if binding.resource_claims or not nodes:
        return binding
    product = [{"key": GPU_PRODUCT, "operator": "In", "values": list(products)}] if products else []
    affinity: dict[str, Any] = {k: v for k, v in binding.affinity.items() if k != "nodeAffinity"}
    node_affinity: dict[str, Any] = {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": HOSTNAME_LABEL, "operator": "In", "values": list(nodes)}]}}]}
    if product:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": product}]}
    affinity["nodeAffinity"] = node_affinity
    selector = {k: v for k, v in binding.node_selector.items() if k != HOSTNAME_LABEL}
    return replace(binding, node_selector=selector, affinity=affinity)
