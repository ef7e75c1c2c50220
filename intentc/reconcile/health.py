"""Health of live objects, gitops-engine style: pure functions of the object.

No controller-manager means nothing here ever waits or polls; `sync` does
that, and tests write `.status` the way a controller would.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from intentc.render.fallback import is_standby


class HealthStatus(enum.Enum):
    HEALTHY = "Healthy"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"
    MISSING = "Missing"

    @property
    def severity(self) -> int:
        return {"Healthy": 0, "Progressing": 1, "Missing": 2, "Degraded": 3}[self.value]


@dataclass(frozen=True)
class Health:
    status: HealthStatus
    message: str = ""


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def _true(c: Mapping[str, Any] | None) -> bool:
    return c is not None and str(c.get("status")) == "True"


def job_health(obj: Mapping[str, Any]) -> Health:
    if is_standby(obj):
        return Health(HealthStatus.HEALTHY, "fallback variant on standby (suspended)")
    failed = _condition(obj, "Failed")
    if _true(failed):
        assert failed is not None
        return Health(HealthStatus.DEGRADED, f"{failed.get('reason') or 'Failed'}: {failed.get('message') or ''}".rstrip(": "))
    if _true(_condition(obj, "Complete")):
        return Health(HealthStatus.HEALTHY, "complete")
    status = obj.get("status") or {}
    want = (obj.get("spec") or {}).get("completions") or 1
    return Health(HealthStatus.PROGRESSING, f"{status.get('succeeded', 0)}/{want} pods succeeded")


# A pod's phase and completion index (None outside an Indexed Job), as `watched.py` keeps them.
PodRecord = tuple[str, "str | None"]


def job_succeeded_by_pods(obj: Mapping[str, Any], pods: Iterable[PodRecord]) -> Health | None:
    """HEALTHY when the Job's own pods have already succeeded as often as it needs, else None.

    The Job controller gathers pod updates for a batch period (a second) before it
    writes `Complete`; a dependant released on that condition pays the period at every
    step of its chain, and the plan has no such gap.  A Succeeded pod is final and the
    count is the controller's own rule (`completions` distinct indexes for an Indexed
    Job, `completions` successes otherwise), so the condition that follows is known
    now.  A Job without `completions` (a work queue) or one already Failed, suspended
    or on standby is left to its conditions.  Trust: only pods in the Job's namespace
    can name it as owner, and a tenant able to fake a success there could as well let
    its real pod exit 0."""
    spec = obj.get("spec") or {}
    want = spec.get("completions")
    if not isinstance(want, int) or want < 1 or spec.get("suspend") or is_standby(obj):
        return None
    if _true(_condition(obj, "Failed")):
        return None
    done = [index for phase, index in pods if phase == "Succeeded"]
    indexed = spec.get("completionMode") == "Indexed"
    count = len({i for i in done if i is not None}) if indexed else len(done)
    if count < want:
        return None
    return Health(HealthStatus.HEALTHY, f"{want}/{want} pods succeeded")


def deployment_health(obj: Mapping[str, Any]) -> Health:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        return Health(HealthStatus.PROGRESSING, "waiting for the rollout to be observed")
    progressing = _condition(obj, "Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Health(HealthStatus.DEGRADED, f"ProgressDeadlineExceeded: {progressing.get('message') or ''}".rstrip(": "))
    want = spec.get("replicas", 1)
    updated, available = status.get("updatedReplicas", 0), status.get("availableReplicas", 0)
    total = status.get("replicas", 0)
    if updated < want:
        return Health(HealthStatus.PROGRESSING, f"{updated}/{want} replicas updated")
    if total > updated:
        return Health(HealthStatus.PROGRESSING, f"{total - updated} old replicas pending termination")
    if available < want:
        return Health(HealthStatus.PROGRESSING, f"{available}/{want} replicas available")
    return Health(HealthStatus.HEALTHY, f"{available}/{want} replicas available")


def service_health(obj: Mapping[str, Any]) -> Health:
    if (obj.get("spec") or {}).get("type") == "LoadBalancer":
        if not ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress"):
            return Health(HealthStatus.PROGRESSING, "waiting for a load balancer")
    return Health(HealthStatus.HEALTHY)


def namespace_health(obj: Mapping[str, Any]) -> Health:
    if (obj.get("status") or {}).get("phase") == "Terminating":
        return Health(HealthStatus.PROGRESSING, "terminating")
    return Health(HealthStatus.HEALTHY)


_BY_KIND = {"Job": job_health, "Deployment": deployment_health, "Service": service_health,
            "Namespace": namespace_health}


def health_of(obj: Mapping[str, Any] | None) -> Health:
    if obj is None:
        return Health(HealthStatus.MISSING, "not found")
    check = _BY_KIND.get(str(obj.get("kind")))
    return check(obj) if check else Health(HealthStatus.HEALTHY)


def worst(healths: Sequence[Health]) -> HealthStatus:
    if not healths:
        return HealthStatus.HEALTHY
    return max((h.status for h in healths), key=lambda s: s.severity)
