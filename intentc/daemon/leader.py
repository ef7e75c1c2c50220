"""Leader election: who may act for a target, decided from the Lease alone.

Two daemon replicas on one target would both heal the same drift (issue
14: two Events within 10 ms).  Exactly one acts: the holder of the Lease
`intentc-system/intentc-daemon-<target>`, with client-go's leaderelection
semantics, so operators who know kube-controller-manager's flags know ours:

- A candidate takes the Lease when it does not exist, when nobody holds it
  (a leader that shut down released it), or when the holder has not
  renewed it for `lease_duration` seconds *as measured by the candidate's
  own clock* from the moment it first saw the current record — never by
  comparing the record's renewTime with the local wall clock, which would
  trust two machines' clocks to agree.  A candidate reads the Lease every
  `retry_period`, so it sees a renewal up to one period late; it takes
  that lag off (expiry = first seen + duration − retry period), so that a
  crashed leader is replaced within one lease duration, not one duration
  plus a period (client-go's behaviour).  Safety needs the old leader to
  have stopped by then: `lease_duration − retry_period > renew_deadline`
  (`Timing.problem`).
- The leader renews every `retry_period`.  If it has not renewed
  successfully for `renew_deadline` seconds it stops acting; because
  `renew_deadline < lease_duration`, it has stopped before any candidate
  can consider the Lease expired.
- acquireTime is kept across renewals; leaseTransitions counts changes of
  holder.

This module only decides (pure: no clock, no client; the time comes in as
arguments).  `daemon.election` reads and writes the Lease and calls it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from intentc.reconcile.lease import LeaseRecord

JITTER = 1.2        # client-go: renewDeadline must exceed JitterFactor × retryPeriod


class Verdict(enum.Enum):
    ACQUIRE = "acquire"     # write a record naming us (a new term)
    RENEW = "renew"         # write a record naming us (the same term)
    FOLLOW = "follow"       # someone else holds it: write nothing, do not act
    LOST = "lost"           # we were leading and may not any more: stop acting now


@dataclass(frozen=True)
class Timing:
    lease_duration: int = 15          # written into the Lease (whole seconds)
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problem(self) -> str:
        """Why these durations cannot work together ("" when they can)."""
        if self.retry_period <= 0:
            return "the retry period must be positive"
        if not self.lease_duration - self.retry_period > self.renew_deadline:
            return (f"the lease duration ({self.lease_duration:g}s) less the retry period "
                    f"({self.retry_period:g}s) must be longer than the renew deadline "
                    f"({self.renew_deadline:g}s), or a new leader could act before the old one stops")
        if not self.renew_deadline > JITTER * self.retry_period:
            return (f"the renew deadline ({self.renew_deadline:g}s) must be longer than {JITTER:g} × the retry "
                    f"period ({self.retry_period:g}s)")
        return ""


@dataclass(frozen=True)
class Observed:
    """A record as this process last saw it, and when (its monotonic clock) it first saw it."""

    record: LeaseRecord | None
    since: float


@dataclass(frozen=True)
class Step:
    verdict: Verdict
    observed: Observed
    write: LeaseRecord | None = None     # ACQUIRE / RENEW: the record to write

    @property
    def holder(self) -> str:
        return self.observed.record.holder if self.observed.record is not None else ""


def expires(observed: Observed | None, timing: Timing) -> float | None:
    """When (local monotonic time) a follower may take over the record it observed
    (None: nobody holds it, or nothing observed).  Lets a follower try right then
    rather than at its next retry period.  The record was written up to one retry
    period before we first saw it (we read every period): that lag is taken off."""
    if observed is None or observed.record is None or not observed.record.holder:
        return None
    duration = observed.record.duration
    seconds = duration if duration is not None and duration > 0 else timing.lease_duration
    return observed.since + seconds - timing.retry_period


def leads(last_renew: float | None, now: float, timing: Timing) -> bool:
    """Whether a leader whose last successful renewal *started* at `last_renew` may still act."""
    return last_renew is not None and now - last_renew < timing.renew_deadline


def decide(lease: LeaseRecord | None, *, identity: str, now: float, wall: datetime, timing: Timing,
           observed: Observed | None = None, last_renew: float | None = None) -> Step:
    """What to do after reading `lease` (None: it does not exist) at local time `now`.

    `last_renew` is when our last successful write started (None: we do not
    lead); `wall` is only written into the record (acquireTime, renewTime)."""
    if observed is None or observed.record != lease:
        observed = Observed(lease, now)
    leading = leads(last_renew, now, timing)
    if last_renew is not None and not leading:
        return Step(Verdict.LOST, observed)
    seconds = timing.lease_duration
    if lease is None:
        return Step(Verdict.ACQUIRE, observed, LeaseRecord(identity, seconds, wall, wall, 0))
    if lease.holder == identity:
        return Step(Verdict.RENEW, observed,
                    LeaseRecord(identity, seconds, lease.acquired or wall, wall, lease.transitions))
    until = expires(observed, timing)
    if until is not None and now < until:
        return Step(Verdict.LOST if leading else Verdict.FOLLOW, observed)
    if leading:     # someone else's record, expired or released, while we think we lead
        return Step(Verdict.LOST, observed)
    return Step(Verdict.ACQUIRE, observed, LeaseRecord(identity, seconds, wall, wall, lease.transitions + 1))
