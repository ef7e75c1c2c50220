"""From the API server's objects to an `Observation` (pure).

The forecast must describe what the cluster did, not what intentc asked
for, so everything here is read from objects the API server returned —
Jobs, Kueue Workloads, Pods and Nodes as plain mappings (`kube/forecast_state.py`
lists them) — and nothing from intentc's inventory or plan:

* an intent's workload is its Jobs (label `intentc.dev/intent`, in its
  tenant's namespace).  Of a fallback chain only the step that runs now
  counts (`render/fallback.py`: a variant not resumed yet is a standby,
  a step that failed and handed over is history); a gang of several chains
  is folded into one: created and started at its first member, Running
  while a member's pod runs, Succeeded when every member did, Failed as
  soon as one did;
* Queued or Admitted: a Job held with `spec.suspend` is queued unless its
  Kueue Workload (owner: the Job) carries `Admitted=True`; a Job that is
  let go but whose pods do not run yet is admitted;
* the GPUs a Running pod holds are its target's planned indices
  (`intentc.dev/gpu-indices`, written by every render target) on the node
  the scheduler put it, else as many of the node's highest indices as it
  asks for (the device plugin does not say which);
* nodes and foreign GPUs are read exactly as live planning reads them
  (`plan/live_occupancy.py`): the same problems, the same pods counted as foreign;
* the epoch (plan time 0) is when the first of the program's Jobs was
  created: the moment `apply` released the plan's first wave.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping

from intentc import ir
from intentc.forecast.model import JobObservation, NodeObservation, Observation
from intentc.objectmeta import INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from intentc.plan.live_occupancy import node_problem, occupancy, pod_gpus
from intentc.plan.model import Busy
from intentc.render.fallback import chains, is_standby

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def timestamp(text: Any) -> float | None:
    """An RFC 3339 time as the API server writes it, as Unix seconds (None if absent or unreadable)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def _admitted(workloads: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], bool]:
    """(namespace, Job name) -> whether its Kueue Workload is admitted."""
    out: dict[tuple[str, str], bool] = {}
    for w in workloads:
        for owner in _meta(w).get("ownerReferences") or []:
            if owner.get("kind") == "Job":
                key = (str(_meta(w).get("namespace") or ""), str(owner.get("name") or ""))
                out[key] = out.get(key, False) or _condition(w, "Admitted") is not None
    return out


def _held(pod: Mapping[str, Any], sizes: Mapping[str, int]) -> Busy | None:
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    count, planned = pod_gpus(pod, node)
    if not node or count <= 0:
        return None
    if planned is not None and len(planned) == count:
        return Busy(node, planned)
    size = sizes.get(node, count)
    return Busy(node, tuple(range(max(size - count, 0), size)))


def _one(intent: str, jobs: list[Mapping[str, Any]], admitted: Mapping[tuple[str, str], bool],
         pods: Mapping[tuple[str, str], list[Mapping[str, Any]]], sizes: Mapping[str, int]) -> JobObservation:
    """One intent's Jobs (every chain's current step) folded into one observation."""
    current = []
    for chain in chains(jobs).values():
        active = [j for j in chain if not is_standby(j)] or chain[:1]
        current.append(active[-1])
    created = min(timestamp(_meta(j).get("creationTimestamp")) or 0.0 for j in jobs)
    starts = [t for j in current if (t := timestamp((j.get("status") or {}).get("startTime"))) is not None]
    completions: list[float] = []
    failures: list[tuple[float, str]] = []
    running = False
    gpus: list[Busy] = []
    held_by_kueue: list[bool | None] = []
    suspended = True
    for j in current:
        meta = _meta(j)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        suspended = suspended and bool((j.get("spec") or {}).get("suspend"))
        held_by_kueue.append(admitted.get(key))
        done = _condition(j, "Complete")
        if done is not None:
            completions.append(timestamp((j.get("status") or {}).get("completionTime"))
                               or timestamp(done.get("lastTransitionTime")) or created)
        failed = _condition(j, "Failed")
        if failed is not None:
            failures.append((timestamp(failed.get("lastTransitionTime")) or created, str(failed.get("reason") or "")))
        for pod in pods.get(key, []):
            if (pod.get("status") or {}).get("phase") == "Running":
                running = True
                b = _held(pod, sizes)
                if b is not None:
                    gpus.append(b)
    admitted_all: bool | None = None
    if all(a is not None for a in held_by_kueue):
        admitted_all = all(bool(a) for a in held_by_kueue)
    first_failure = min(failures) if failures else None
    return JobObservation(
        intent, created, suspended=suspended, admitted=admitted_all, started=min(starts) if starts else None,
        running=running, completed=max(completions) if len(completions) == len(current) else None,
        failed=first_failure[0] if first_failure else None, failure=first_failure[1] if first_failure else "",
        gpus=tuple(sorted(gpus, key=lambda b: (b.node, b.gpus))))


def observe(program: ir.Program, topology: ir.Topology, nodes: Iterable[Mapping[str, Any]],
            pods: Iterable[Mapping[str, Any]], jobs: Iterable[Mapping[str, Any]],
            workloads: Iterable[Mapping[str, Any]] = ()) -> Observation:
    """What the cluster shows for `program` (its intents' Jobs, in their tenants' namespaces),
    and what it leaves for the rest of the plan (nodes, GPUs held by others)."""
    tenant_of = {i.name: i.tenant for i in program.intents}
    node_list = sorted(nodes, key=lambda n: str(_meta(n).get("name") or ""))
    pod_list = list(pods)
    by_job: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for pod in pod_list:
        labels = _meta(pod).get("labels") or {}
        job_name = next((labels[k] for k in JOB_NAME_LABELS if k in labels), None)
        if job_name:
            by_job.setdefault((str(_meta(pod).get("namespace") or ""), str(job_name)), []).append(pod)
    mine: dict[str, list[Mapping[str, Any]]] = {}
    for j in jobs:
        meta = _meta(j)
        labels = meta.get("labels") or {}
        name = labels.get(INTENT_LABEL)
        if name in tenant_of and meta.get("namespace") == tenant_of[name] and \
                labels.get(MANAGED_BY_LABEL) == MANAGED_BY:
            mine.setdefault(str(name), []).append(j)
    admitted = _admitted(workloads)
    sizes = {n.name: n.gpu_count for n in topology.nodes}
    observed = tuple(_one(name, mine[name], admitted, by_job, sizes) for name in sorted(mine))
    occupied, notes = occupancy(topology, node_list, pod_list, sorted(set(tenant_of.values())), sorted(tenant_of))
    return Observation(
        jobs=observed,
        nodes=tuple(NodeObservation(str(_meta(n).get("name")), node_problem(n)) for n in node_list),
        foreign=occupied.busy, notes=notes,
        epoch=min((j.created for j in observed), default=None))
