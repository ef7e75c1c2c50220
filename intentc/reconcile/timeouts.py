"""How long `apply --wait` waits for an intent, derived from the intent (pure).

A flat 300 s says a `duration 4h` training Job "timed out" after five
minutes.  `apply` releases each intent on its own (reconcile/release.py) and
gives it its own budget, counted from its release; `wave_timeout` is the
longest budget among a group's intents (objects of no intent: `FALLBACK_S`):

* a run-to-completion intent (batch, training, inference) may run
  `duration × (1 + slack)` — exactly the `activeDeadlineSeconds` its Job is
  rendered with (render/fallback.py), the Kubernetes-side limit — plus
  `START_GRACE_S` for scheduling, image pulls and the Job controller, plus
  how long the plan queues it behind other intents of the same wave.
  Without a `duration`, the planner's default for its kind (batch 30m,
  inference 1h, training 4h) with the default slack;
* a `serve` intent runs open-ended: the wave waits for its Deployment to be
  available, up to `SERVE_READY_S` (Kubernetes' default
  `progressDeadlineSeconds` for a Deployment);
* a scheduled or manual intent renders a CronJob, healthy once it exists:
  `START_GRACE_S`.

`tolerance` is a quality bound (which precisions are allowed), not a time,
so it does not enter.  `apply --timeout DURATION` overrides the derived
budget of every intent.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from intentc import ir
from intentc.graph import digraph
from intentc.ir.duration import format_duration, parse_duration
from intentc.plan.model import Placement, Plan
from intentc.render.fallback import DEFAULT_SLACK

START_GRACE_S = 300          # the old flat wave timeout: enough to schedule, pull and start
SERVE_READY_S = 600          # a Deployment's default progressDeadlineSeconds
FALLBACK_S = 300             # a wave whose intents are unknown (setup objects only)


@dataclass(frozen=True)
class Budget:
    """How long one intent's objects may take to become healthy, and the arithmetic."""

    intent: str
    seconds: int
    derivation: str


def budget(intent: ir.Intent, queued_s: int = 0) -> Budget:
    """One intent's budget; `queued_s`: how long the plan has it wait behind its own wave."""
    kind = intent.action.kind
    if kind == ir.ActionKind.SERVE.value:
        return Budget(intent.name, SERVE_READY_S + queued_s,
                      f"serve: available within {format_duration(SERVE_READY_S)}" + _queued(queued_s))
    if intent.trigger.kind in (ir.TriggerKind.SCHEDULE.value, ir.TriggerKind.MANUAL.value):
        return Budget(intent.name, START_GRACE_S, f"{intent.trigger.kind}: a CronJob, created within "
                                                  f"{format_duration(START_GRACE_S)}")
    c = intent.constraints
    given = parse_duration(c.duration) if c.duration else None
    seconds = given if given is not None else digraph.duration_seconds(intent)
    slack = DEFAULT_SLACK if c.slack is None else c.slack
    run = math.ceil(seconds * (1 + slack))
    source = f"duration {format_duration(seconds)}" if given is not None else \
        f"default duration of {kind} {format_duration(seconds)}"
    return Budget(intent.name, run + START_GRACE_S + queued_s,
                  f"{source} x (1 + slack {slack:g}) + {format_duration(START_GRACE_S)} to start" + _queued(queued_s))


def _queued(queued_s: int) -> str:
    return f" + {format_duration(queued_s)} queued behind its wave" if queued_s else ""


def wave_budgets(program: ir.Program, plan: Plan) -> dict[str, Budget]:
    """Every scheduled intent's budget, by name (queueing measured from its wave's first start)."""
    by_name = {i.name: i for i in program.intents}
    # one pass over the placements (`Plan.placement` scans them: per intent, that was
    # quadratic, for each reload's `Desired`)
    placed = {p.intent: p for p in plan.placements}
    out: dict[str, Budget] = {}
    for wave in plan.waves:
        starts = {n: p.start_s for n in wave if (p := placed.get(n)) is not None}
        first = min(starts.values(), default=0)
        for name in wave:
            if name in by_name:
                out[name] = budget(by_name[name], starts.get(name, first) - first)
    return out


class WaveBudgets(Mapping[str, Budget]):
    """`wave_budgets(program, plan)`, made one wave at a time when first read.

    The daemon keeps one per desired state (`daemon.source.Desired`) and reads it only
    when a rollout times a wave: made eagerly, a budget and its derivation text per
    intent would be held twice around every swap (docs/reload.md, Memory).  An intent's
    wave is found by binary search in each (sorted) wave, its placement in the plan's
    (sorted by intent); only the intents by name and the last wave's budgets are kept."""

    def __init__(self, program: ir.Program, plan: Plan) -> None:
        self._program = program
        self._plan = plan
        self._by_name: dict[str, ir.Intent] | None = None
        self._last: tuple[int, dict[str, Budget]] = (-1, {})

    def _intents(self) -> dict[str, ir.Intent]:
        if self._by_name is None:
            self._by_name = {i.name: i for i in self._program.intents}
        return self._by_name

    def _wave(self, k: int) -> dict[str, Budget]:
        if self._last[0] != k:
            by_name = self._intents()
            wave = self._plan.waves[k]
            placements = self._plan.placements
            starts = {}
            for n in wave:
                i = bisect_left(placements, n, key=_intent_of)
                if i < len(placements) and placements[i].intent == n:
                    starts[n] = placements[i].start_s
            first = min(starts.values(), default=0)
            self._last = (k, {n: budget(by_name[n], starts.get(n, first) - first) for n in wave if n in by_name})
        return self._last[1]

    def __getitem__(self, name: str) -> Budget:
        for k, wave in enumerate(self._plan.waves):
            i = bisect_left(wave, name)
            if i < len(wave) and wave[i] == name:
                return self._wave(k)[name]
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        by_name = self._intents()
        return (n for wave in self._plan.waves for n in wave if n in by_name)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _intent_of(p: Placement) -> str:
    return p.intent


def wave_timeout(intents: Iterable[str], budgets: Mapping[str, Budget]) -> tuple[int, str]:
    """(seconds, why) for a wave holding `intents`: its longest intent budget."""
    known = [budgets[n] for n in sorted(set(intents)) if n in budgets]
    if not known:
        return FALLBACK_S, f"{format_duration(FALLBACK_S)} (no intent budget known)"
    longest = max(known, key=lambda b: (b.seconds, b.intent))
    return longest.seconds, f"{format_duration(longest.seconds)}, from {longest.intent}: {longest.derivation}"
