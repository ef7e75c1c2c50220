"""An intent's phase, as its mirrored `Intent` object shows it (docs/crd.md).

Pure: a function of the intent's live workload objects, read from the
daemon's informer cache.  One word a person can scan in
`kubectl get intents -A`:

| phase | meaning |
|---|---|
| Pending | nothing of it runs yet (not created, or a Deployment not available yet) |
| Running | its Job runs, or its Deployment is available |
| Fallback | a fallback variant runs (docs/failure-fallback.md) |
| Scheduled | a CronJob waits for its schedule (or, `manual`, for someone to start it) |
| Succeeded | its Job (or the fallback step that took over) completed |
| Failed | its Job failed and no fallback step is left, or its Deployment is stuck |

A gang of several Jobs shows its worst member.  Of a fallback chain only the
step that runs now counts: a Job that failed and handed over to its
next step (a power-capped retry, say) is history, not the intent's state.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from intentc.reconcile.health import HealthStatus, health_of
from intentc.render.fallback import FALLBACK_OF, chains, is_standby

# worst first: the phase a gang shows when its members disagree
ORDER = ("Failed", "Pending", "Fallback", "Running", "Scheduled", "Succeeded")


def _job_phase(chain: list[Mapping[str, Any]]) -> str:
    active = [j for j in chain if not is_standby(j)] or chain[:1]
    current = active[-1]
    fallback = FALLBACK_OF in ((current.get("metadata") or {}).get("annotations") or {})
    status = health_of(current).status
    if status is HealthStatus.HEALTHY:
        return "Succeeded"
    if status is HealthStatus.DEGRADED:
        return "Failed"
    return "Fallback" if fallback else "Running"


def _deployment_phase(obj: Mapping[str, Any]) -> str:
    status = health_of(obj).status
    return {HealthStatus.HEALTHY: "Running", HealthStatus.DEGRADED: "Failed"}.get(status, "Pending")


def intent_phase(objects: Iterable[Mapping[str, Any]]) -> str:
    """The phase of one intent from its live objects (any kinds; workloads decide)."""
    objs = list(objects)
    phases = [_job_phase(c) for c in chains(o for o in objs if o.get("kind") == "Job").values()]
    phases += [_deployment_phase(o) for o in objs if o.get("kind") == "Deployment"]
    phases += ["Scheduled" for o in objs if o.get("kind") == "CronJob"]
    if not phases:
        return "Pending"
    return min(phases, key=ORDER.index)
