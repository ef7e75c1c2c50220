"""Is a rollout semantically consistent?  A pure verdict over plain data.

A rollout of commit C is consistent when

* every wave became healthy within its timeout — the reconciler's apply
  result says so (it waits wave by wave), and no object of C is degraded
  now (a Job marked `Failed` after the apply returned counts too);
* the plan's invariants hold on the cluster: every gang member the plan
  rendered exists (a multi-node job with one pod group missing is not a
  smaller job, it is a hung one), and every workload still carries the
  placement it was planned with (node pinning, GPU indices).

Only the verdict lives here; `intentc.drift.rollback` acts on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from intentc.reconcile.fields import same_value
from intentc.reconcile.health import HealthStatus, health_of
from intentc.render.model import Manifest
from intentc.objectmeta import GPU_INDICES_ANNOTATION, ObjectRef

# Where a rendered workload carries its placement (docs/design.md, "GPU binding on the cluster").
PLACEMENT_FIELDS: tuple[tuple[str, ...], ...] = (
    ("spec", "template", "spec", "nodeSelector"),
    ("spec", "template", "spec", "affinity"),
    ("spec", "template", "metadata", "annotations", "intentc.dev/nodes"),
    ("spec", "template", "metadata", "annotations", GPU_INDICES_ANNOTATION),
)


@dataclass(frozen=True)
class Problem:
    ref: ObjectRef
    intent: str | None
    tenant: str | None
    reason: str                      # "unhealthy" | "gang-member-missing" | "placement-changed" | "apply-failed"
    message: str


@dataclass(frozen=True)
class Verdict:
    commit: str
    problems: tuple[Problem, ...]

    @property
    def consistent(self) -> bool:
        return not self.problems

    @property
    def intents(self) -> tuple[str, ...]:
        return tuple(sorted({p.intent for p in self.problems if p.intent}))

    def tenants(self) -> dict[str, str]:
        """intent -> tenant, for policy lookup."""
        return {p.intent: p.tenant for p in self.problems if p.intent and p.tenant}

    def summary(self) -> str:
        if self.consistent:
            return f"rollout of {self.commit[:12]} is consistent"
        first = "; ".join(f"{p.ref}: {p.message}" for p in self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        return f"rollout of {self.commit[:12]} is not consistent: {first}{more}"


def _at(body: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = body
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def check_rollout(commit: str, manifests: Sequence[Manifest], live: Mapping[ObjectRef, Mapping[str, Any]],
                  apply_failed: Sequence[tuple[ObjectRef, str]] = ()) -> Verdict:
    """The verdict on the rollout of `commit` (`manifests`: its rendered objects).

    `apply_failed` lists what the apply itself reported as failed (an
    object refused, or a wave that timed out, with the reconciler's message)."""
    by_ref = {m.ref: m for m in manifests}
    problems: list[Problem] = []
    for ref, message in apply_failed:
        m = by_ref.get(ref)
        problems.append(Problem(ref, m.intent if m else None, m.tenant if m else None, "apply-failed", message))
    reported = {p.ref for p in problems}
    for m in manifests:
        if m.ref in reported:
            continue
        body = live.get(m.ref)
        if body is None:
            what = "gang member missing" if m.intent else "missing"
            problems.append(Problem(m.ref, m.intent, m.tenant, "gang-member-missing", what))
            continue
        health = health_of(body)
        if health.status is HealthStatus.DEGRADED:
            problems.append(Problem(m.ref, m.intent, m.tenant, "unhealthy",
                                    f"degraded: {health.message}" if health.message else "degraded"))
            continue
        for path in PLACEMENT_FIELDS:
            want, have = _at(m.body, path), _at(body, path)
            if want is not None and not same_value(want, have):
                problems.append(Problem(m.ref, m.intent, m.tenant, "placement-changed",
                                        f"{'.'.join(path)} is {have!r}, planned {want!r}"))
                break
    problems.sort(key=lambda p: (p.ref.kind, p.ref.namespace, p.ref.name, p.reason))
    return Verdict(commit, tuple(problems))
