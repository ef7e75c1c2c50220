"""The bookkeeping of a finished rollout or rollback: say it, count it, and tell the reactor what follows.

When the worker reports a `Done`, `outcome.py` decides (pure) what it
means; this module does the part that only *says* and *counts* — the log
lines, the applied-commit info metric, the quarantine (cleared by a good
commit, counted after a rollback) — and returns a `Then`: what the reactor
(`loop.py`) must do with its own state (try a head again, adopt the commit
rolled back to, resync, roll back).  The reactor stays the one place that
changes what is in force or starts work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.outcome import AfterInconsistent, Settled, after_inconsistent, failed_objects, settle
from intentc.daemon.quarantines import QuarantineKeeper
from intentc.daemon.reads import LiveReads, Safe
from intentc.daemon.rollouts import Done
from intentc.daemon.source import Desired
from intentc.drift.consistency import Verdict, check_rollout
from intentc.drift.detect import History
from intentc.drift.policy import Policies, asking_for_rollback
from intentc.drift.rollback import RollbackOutcome
from intentc.reconcile.result import ApplyResult

log = logging.getLogger("intentc.daemon")


@dataclass(frozen=True, slots=True)
class Then:
    """What the reactor does next, in this order."""

    forget: str | None = None       # try this commit again at the next poll
    roll_back: tuple[Desired, Verdict, tuple[str, ...]] | None = None   # (bad, its verdict, who asked)
    adopt: str | None = None        # take this commit as in force (the one rolled back to)
    resync: bool = False


class Settler:
    def __init__(self, metrics: DaemonMetrics, quarantine: QuarantineKeeper, reads: LiveReads, branch: str,
                 safe: Safe) -> None:
        self.metrics = metrics
        self.quarantine = quarantine
        self.reads = reads
        self.branch = branch
        self.safe = safe

    def finished(self, done: Done, *, leading: Callable[[], bool], can_roll_back: bool,
                 history: History | None) -> Then:
        result, desired = done.result, done.desired
        step = settle(done.kind, result, desired=desired is not None, error=done.error)
        if step is Settled.ROLLED_BACK:
            return self._rolled_back(done)
        if step is not Settled.JUDGE:
            if step is Settled.NOTHING or desired is None:
                return Then()
            if step is Settled.ERROR and isinstance(result, ApplyResult):
                log.error("rollout of %s stopped: %s", desired.commit[:12], result.message)
            return Then(forget=desired.commit)
        assert desired is not None and isinstance(result, ApplyResult)
        verdict = check_rollout(desired.commit, desired.manifests, self.reads.live(desired), failed_objects(result))
        if verdict.consistent:
            log.info("commit %s rolled out: %s", desired.commit[:12], result.health)
            self.metrics.set_applied(desired.commit, self.branch, desired.origin)
            if history is not None and leading():
                self.safe("quarantine", partial(self.quarantine.clear, desired.commit, history))
            return Then(resync=True)
        log.error("%s", verdict.summary())
        askers = asking_for_rollback(((p.intent, p.tenant) for p in verdict.problems),
                                     Policies.from_program(desired.program))
        after = after_inconsistent(askers, leading=leading(), can_roll_back=can_roll_back)
        if after is AfterInconsistent.NOT_LEADER:
            log.warning("not rolling back %s: no longer the leader", desired.commit[:12])
            return Then()
        if after is AfterInconsistent.KEEP:
            log.warning("not rolling back %s: no failing intent has `drift: rollback`", desired.commit[:12])
            return Then(resync=True)
        return Then(roll_back=(desired, verdict, askers))

    def _rolled_back(self, done: Done) -> Then:
        outcome = done.result
        if not isinstance(outcome, RollbackOutcome):
            log.error("rollback of %s failed: %s", done.desired.commit[:12] if done.desired else "?", done.error)
            return Then()
        log.warning("rolled back to %s: %s", outcome.to_commit[:12], outcome.applied.result)
        self.metrics.set_applied(outcome.to_commit, self.branch, "rollback")
        self.safe("quarantine", self.quarantine.held)
        return Then(adopt=outcome.to_commit)
