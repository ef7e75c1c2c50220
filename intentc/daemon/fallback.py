"""The daemon's pure decisions on GPU failure (docs/failure-fallback.md).

Two questions, answered from live objects as plain mappings and a clock
value passed in, so they are unit-tested without a cluster:

* `taint_changes(pods, nodes, now)`: which nodes to taint
  `intentc.dev/gpu-observation` (a pod's main container exited with a GPU
  failure code there in the last 15 minutes) and which taints to lift
  (their end time has passed).  The taint's value is the Unix time the
  observation ends, so the decision needs no memory between passes.
* `resumable(jobs)`: over every live Job, `next_fallback` per chain (a Job
  and the variants whose `intentc.dev/fallback-of` names it).
* `next_fallback(jobs)`: which suspended variant of an intent's Job to
  resume — the next step of the chain once the step before it failed
  with `BackoffLimitExceeded` (GPU retries used up).  A Job stopped by its
  podFailurePolicy (an application error) or its deadline ends the chain.

`daemon/failures.py` gathers the pods, nodes and Jobs and applies the result
(a node patch for each `TaintChange`; `spec.suspend: false` for the Job).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Iterable, Mapping

from intentc.plan.observation import OBSERVATION_TAINT
from intentc.render.fallback import FALLBACK_OF, GPU_FAILURE_EXIT_CODES, chain_root, chains, step_of

OBSERVATION_SECONDS = 15 * 60
TAINT_EFFECT = "NoSchedule"


@dataclass(frozen=True, order=True)
class TaintChange:
    node: str
    add: bool                 # True: set the taint; False: remove it
    until: int | None = None  # Unix time the observation ends (the taint's value) when adding

    def taint(self) -> dict[str, str]:
        """The taint as `spec.taints` spells it (for `add`); `timeAdded` is when the
        observation began (the failure), so `kubectl describe node` says since when."""
        start = datetime.fromtimestamp((self.until or 0) - OBSERVATION_SECONDS, UTC)
        return {"key": OBSERVATION_TAINT, "value": str(self.until), "effect": TAINT_EFFECT,
                "timeAdded": start.strftime("%Y-%m-%dT%H:%M:%SZ")}

    def taints(self, node: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The node's whole `spec.taints` after this change (other taints kept as they are)."""
        kept = [dict(t) for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != OBSERVATION_TAINT]
        return [*kept, self.taint()] if self.add else kept


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def gpu_failure(pod: Mapping[str, Any]) -> tuple[str, float] | None:
    """(node, when) if the pod's main container last ended with a GPU failure code."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        return None
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") != "main":
            continue
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            ended = state.get("terminated") or {}
            when = _epoch(ended.get("finishedAt"))
            if ended.get("exitCode") in GPU_FAILURE_EXIT_CODES and when is not None:
                return str(node), when
    return None


def _observation_end(node: Mapping[str, Any]) -> int | None:
    for t in (node.get("spec") or {}).get("taints") or []:
        if t.get("key") == OBSERVATION_TAINT:
            value = str(t.get("value") or "")
            return int(value) if value.isdigit() else 0     # unreadable: lift it
    return None


def taint_changes(pods: Iterable[Mapping[str, Any]], nodes: Iterable[Mapping[str, Any]], now: float
                  ) -> list[TaintChange]:
    """Taints to set (or extend) and to lift, sorted by node name."""
    latest: dict[str, float] = {}
    for pod in pods:
        hit = gpu_failure(pod)
        if hit is not None and now - hit[1] < OBSERVATION_SECONDS:
            latest[hit[0]] = max(latest.get(hit[0], 0.0), hit[1])
    changes = []
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        end = _observation_end(node)
        if name in latest:
            until = int(latest.pop(name)) + OBSERVATION_SECONDS
            if end is None or end < until:
                changes.append(TaintChange(name, True, until))
        elif end is not None and end <= now:
            changes.append(TaintChange(name, False))
    return sorted(changes)


def _failed_reason(job: Mapping[str, Any]) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Failed" and str(c.get("status")) == "True":
            return str(c.get("reason") or "")
    return None


def resumable(jobs: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(namespace, variant to resume, the Job it takes over from), sorted; chains that
    have no variant (most Jobs) are skipped without looking at them further."""
    jobs = list(jobs)
    roots = {chain_root(j) for j in jobs if FALLBACK_OF in ((j.get("metadata") or {}).get("annotations") or {})}
    out = []
    for (namespace, root), chain in chains(j for j in jobs if chain_root(j) in roots).items():
        name = next_fallback(chain)
        if name is not None:
            before = chain[[str(j["metadata"]["name"]) for j in chain].index(name) - 1]
            out.append((namespace, name, str(before["metadata"]["name"])))
    return out


def next_fallback(jobs: Iterable[Mapping[str, Any]]) -> str | None:
    """The name of the suspended variant to resume now, or None.

    `jobs` are one Job of an intent and its variants (`intentc.dev/fallback-of`
    names the Job, `intentc.dev/fallback-step` orders the variants)."""
    chain = sorted(jobs, key=step_of)
    for before, after in zip(chain, chain[1:]):
        if _failed_reason(before) != "BackoffLimitExceeded":
            return None
        if (after.get("spec") or {}).get("suspend"):
            return str(after["metadata"]["name"])
    return None

