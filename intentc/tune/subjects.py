"""Which intents are tuned, the batch each runs now, and the status document of a recommendation (pure).

A serving intent (`action: serve`) that declares `batch` is tuned; one that
declares none passes no batch to its server, so there is nothing to
recommend against.  The batch it runs is its fixed `batch: N`, or for
`batch: auto` the size the plan in force gave it (`plan.json`'s `batches`
entry, the `INTENTC_BATCH` its pods carry): the recommendation starts
from the same number as the plan, and an auto intent the plan did not size
(not placed) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from intentc.ir import ActionKind, Program
from intentc.plan.model import Plan
from intentc.tune.queries import Subject
from intentc.tune.recommend import Recommendation


@dataclass(frozen=True)
class Tunable:
    tenant: str
    intent: str
    sla: str | None
    current: int                 # what the workload runs
    auto: bool                   # `batch: auto`: `current` is the plan's size
    cap: int | None = None       # `auto(max N)`

    @property
    def subject(self) -> Subject:
        return Subject(self.tenant, self.intent)


def tunables(program: Program, plan: Plan | None) -> tuple[Tunable, ...]:
    out: list[Tunable] = []
    for intent in program.intents:
        settings = intent.action.settings
        if intent.action.kind != ActionKind.SERVE.value or settings is None or settings.batch is None:
            continue
        b = settings.batch
        if b.auto:
            sized = plan.batch(intent.name) if plan is not None else None
            if sized is None:
                continue
            current = sized.size
        elif b.size is None:
            continue
        else:
            current = b.size
        out.append(Tunable(intent.tenant, intent.name, intent.constraints.sla, current, b.auto, b.max))
    return tuple(sorted(out, key=lambda t: (t.tenant, t.intent)))


def rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_document(rec: Recommendation, tunable: Tunable, observed_at: float, observations: int) -> dict[str, Any]:
    """The Intent status's `batchRecommendation` (render/crd.py's schema)."""
    return {"batch": rec.batch, "current": rec.current, "direction": rec.direction.value, "reason": rec.reason,
            "auto": tunable.auto, "observations": observations, "observedAt": rfc3339(observed_at)}
