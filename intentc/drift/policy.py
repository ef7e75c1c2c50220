"""What to do about drift, per tenant or intent: `report | heal | rollback`.

Policies come from the IR (`tenant { drift: heal }`, `context: ... drift:
rollback`); an intent's own setting wins over its tenant's, and the default
is `report` — a controller that rewrites production without being asked is
worse than one that only tells.  Deciding is pure; `intentc.daemon` acts.

* `report`   — log it, count it in the metrics; nothing is written.
* `heal`     — re-apply the desired state of the drifted object
               (server-side apply, taking the fields back).
* `rollback` — heal drifted objects like `heal`, and additionally allow the
               semantic-consistency rollback of a whole commit when the
               rollout of an intent under this policy fails
               (`intentc.drift.rollback`).

Orphans are only ever reported: they are not in the inventory, so intentc
has no record that it created them, and deleting on a label alone is how
controllers destroy things they never owned.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from intentc.drift.detect import DriftClass, Finding, Report
from intentc.ir import DriftPolicy, Program
from intentc.reconcile.health import HealthStatus, health_of
from intentc.render.model import SETUP_STEPS, Manifest, step_label
from intentc.objectmeta import ObjectRef

DEFAULT_POLICY = DriftPolicy.REPORT
HEALABLE = frozenset({DriftClass.MODIFIED, DriftClass.MISSING, DriftClass.STALE, DriftClass.FOREIGN})


class Verb(enum.Enum):
    REPORT = "report"
    HEAL = "heal"


def _parse(value: str | None) -> DriftPolicy | None:
    """None for unset; an unknown word is the domain pass's error (E0418), so
    here it falls back to the safe default instead of guessing."""
    if value is None:
        return None
    try:
        return DriftPolicy(value)
    except ValueError:
        return DEFAULT_POLICY


@dataclass(frozen=True)
class Policies:
    by_intent: Mapping[str, DriftPolicy] = field(default_factory=dict)
    by_tenant: Mapping[str, DriftPolicy] = field(default_factory=dict)
    default: DriftPolicy = DEFAULT_POLICY

    @classmethod
    def from_program(cls, program: Program, default: DriftPolicy = DEFAULT_POLICY) -> Policies:
        tenants = {t.name: p for t in program.tenants if (p := _parse(t.drift)) is not None}
        intents = {i.name: p for i in program.intents if (p := _parse(i.context.drift)) is not None}
        return cls(intents, tenants, default)

    def resolve(self, intent: str | None, tenant: str | None) -> DriftPolicy:
        if intent is not None and intent in self.by_intent:
            return self.by_intent[intent]
        if tenant is not None and tenant in self.by_tenant:
            return self.by_tenant[tenant]
        return self.default

    def for_finding(self, finding: Finding) -> DriftPolicy:
        return self.resolve(finding.intent, finding.tenant)


@dataclass(frozen=True)
class Decision:
    finding: Finding
    policy: DriftPolicy
    verb: Verb


def decide(report: Report, policies: Policies) -> tuple[Decision, ...]:
    """One decision per drifted finding, in the report's order."""
    out = []
    for f in report.drifted:
        policy = policies.for_finding(f)
        heal = policy is not DriftPolicy.REPORT and f.drift in HEALABLE
        out.append(Decision(f, policy, Verb.HEAL if heal else Verb.REPORT))
    return tuple(out)


def asking_for_rollback(owners: Iterable[tuple[str | None, str | None]], policies: Policies) -> tuple[str, ...]:
    """Of the (intent, tenant) pairs behind a failed rollout, those whose
    policy is `rollback` (as "intent" or "tenant/<name>", sorted): a commit
    is only rolled back on behalf of someone who asked for it."""
    out = set()
    for intent, tenant in owners:
        if policies.resolve(intent, tenant) is DriftPolicy.ROLLBACK:
            out.add(intent or f"tenant/{tenant}")
    return tuple(sorted(out))


def wave_blocker(manifest: Manifest, desired: Iterable[Manifest],
                 live: Mapping[ObjectRef, Mapping[str, Any]]) -> str | None:
    """Why healing `manifest` must wait, or None: a heal respects waves and `after`
    exactly as a rollout does, so an object of wave N is (re)created only when every
    object of the earlier waves is healthy on the cluster.  Setup objects
    (namespaces, RBAC, quotas, priority classes) never wait."""
    if manifest.step < SETUP_STEPS:
        return None
    for m in sorted(desired, key=lambda m: m.sort_key):
        if SETUP_STEPS <= m.step < manifest.step:
            health = health_of(live.get(m.ref))
            if health.status is not HealthStatus.HEALTHY:
                return f"{step_label(m.step)} is not done: {m.ref} is {health.status.value}"
    return None
