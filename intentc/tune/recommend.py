"""The tuning rule, with hysteresis and bounds (pure; docs/sizing.md, "Tuning from live metrics").

From the observations made while the workload ran its current batch:

* an OOM kill in any of them: halve (an OOM at this batch says the batch does
  not fit, however good the minutes around it looked);
* else a P99 latency above the SLA's target in any of them: halve;
* else, when the last `good_needed` observations in a row each had P99 under
  the target and at most 0.75 of GPU memory used: grow ×1.25 (at least +1);
* else hold, saying what is missing.

Shrinking is at once and growing only after a run of good observations, so a
single quiet minute never grows a batch and a single bad one is never ignored:
the asymmetry is the hysteresis.  A shrink holds for as long as the bad
observation is in the window, which is why the caller forgets the window when
the workload's batch changes (`TunePass` keys it by the current batch).  The
result is an integer within the bounds; equal inputs give equal results.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Sequence

GROWTH = 1.25
SHRINK = 0.5
MEMORY_HEADROOM = 0.75          # at most this share of GPU memory used to grow


class Direction(enum.Enum):
    GROW = "grow"
    SHRINK = "shrink"
    HOLD = "hold"


@dataclass(frozen=True, slots=True)
class Observation:
    """What Prometheus said at one instant; None: the query returned nothing."""

    at: float                               # Unix time of the instant queried
    p99_s: float | None = None              # P99 request latency, seconds
    memory_used: float | None = None        # share of GPU memory used, 0..1 (the fullest GPU)
    ooms: float | None = None               # OOM kills seen in the query's window


@dataclass(frozen=True, slots=True)
class Bounds:
    low: int = 1
    high: int = 2048

    def clamp(self, batch: int) -> int:
        return max(self.low, min(self.high, batch))


@dataclass(frozen=True, slots=True)
class Rule:
    """The numbers of the rule for one intent: its SLA's latency target and the hysteresis."""

    target_s: float
    good_needed: int = 3
    headroom: float = MEMORY_HEADROOM


@dataclass(frozen=True, slots=True)
class Recommendation:
    batch: int
    current: int
    direction: Direction
    reason: str


def grown(batch: int) -> int:
    """×1.25 rounded down, but at least one more (×1.25 of 1, 2 or 3 would stay put)."""
    return max(batch + 1, math.floor(batch * GROWTH))


def shrunk(batch: int) -> int:
    return max(1, batch // 2)


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _good(o: Observation, rule: Rule) -> bool:
    return (o.p99_s is not None and o.p99_s < rule.target_s and o.memory_used is not None
            and o.memory_used <= rule.headroom and not (o.ooms or 0) > 0)


def recommend(observations: Sequence[Observation], current: int, bounds: Bounds, rule: Rule) -> Recommendation:
    """The recommended batch for an intent running `current`, from `observations` (oldest first)
    made while it ran `current`."""
    def made(batch: int, direction: Direction, reason: str) -> Recommendation:
        clamped = bounds.clamp(batch)
        if clamped != batch:
            edge = "lower" if clamped > batch else "upper"
            reason = f"{reason}; held at the {edge} bound {clamped}"
        if clamped == current:
            direction = Direction.HOLD
        return Recommendation(clamped, current, direction, reason)

    if not observations:
        return made(current, Direction.HOLD, "no observations yet")
    oom = next((o for o in reversed(observations) if (o.ooms or 0) > 0), None)
    if oom is not None:
        # an `increase()` over a window is extrapolated (1.02 kills): say the whole number
        return made(shrunk(current), Direction.SHRINK, f"OOM kill observed ({max(1, round(oom.ooms or 0))}): halve")
    breach = next((o for o in reversed(observations) if o.p99_s is not None and o.p99_s > rule.target_s), None)
    if breach is not None and breach.p99_s is not None:
        return made(shrunk(current), Direction.SHRINK,
                    f"P99 {_fmt(breach.p99_s)} over the target {_fmt(rule.target_s)}: halve")
    streak = 0
    for o in reversed(observations):
        if not _good(o, rule):
            break
        streak += 1
    last = observations[-1]
    if streak >= rule.good_needed:
        assert last.p99_s is not None and last.memory_used is not None
        return made(grown(current), Direction.GROW,
                    f"P99 {_fmt(last.p99_s)} under the target {_fmt(rule.target_s)} and GPU memory "
                    f"{last.memory_used:.0%} used (at most {rule.headroom:.0%}) in {streak} observations in a "
                    f"row: grow ×{GROWTH}")
    if last.p99_s is None:
        why = "no P99 latency (the latency query returned nothing)"
    elif last.memory_used is None:
        why = "no GPU memory figure (the memory query returned nothing)"
    elif last.memory_used > rule.headroom:
        why = f"GPU memory {last.memory_used:.0%} used, over {rule.headroom:.0%}: no headroom to grow"
    elif last.p99_s >= rule.target_s:
        why = f"P99 {_fmt(last.p99_s)} at the target {_fmt(rule.target_s)}"
    else:
        why = f"headroom in {streak} of the {rule.good_needed} observations in a row needed to grow"
    return made(current, Direction.HOLD, why)
