"""What the reactor does when a rollout or a rollback finishes: pure decisions.

The worker (`rollouts.py`) reports a `Done`; the reactor (`loop.py`) takes
it apart into plain facts and asks here what follows:

* `settle`: whether the result is judged (applied: is it consistent?), or
  the head is tried again at the next poll (stopped, or an error), or there
  is nothing to do;
* `failed_objects`: what the consistency check (`drift.consistency`) is told
  failed to apply;
* `after_inconsistent`: an inconsistent rollout is rolled back only by the
  leader, only in git mode, and only on behalf of an intent that asked for
  it (`drift: rollback`); otherwise what runs is kept and watched;
* `rollback_request`: the reason recorded for a rollback and the objects
  it names;
* `rollback_refusal`: why a rollback must not run at all: its target, the
  last known-good commit, is gone from the branch (a force-push) or from
  the repository.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from intentc.drift.consistency import Verdict
from intentc.reconcile.result import ApplyResult
from intentc.objectmeta import ObjectRef


class Settled(enum.Enum):
    ROLLED_BACK = "rolled-back"     # a rollback ended, well or not: its own bookkeeping
    NOTHING = "nothing"             # no result, and nothing to undo
    STOPPED = "stopped"             # shut down or leadership lost mid-rollout: try the head again
    ERROR = "error"                 # the rollout could not proceed: say why, try the head again
    JUDGE = "judge"                 # applied: check that it is consistent


def settle(kind: str, result: object, *, desired: bool, error: str) -> Settled:
    """`kind`, `result` and `error` are the `Done`'s; `desired`: whether it names the commit."""
    if kind == "rollback":
        return Settled.ROLLED_BACK
    if not isinstance(result, ApplyResult) or not desired:
        return Settled.STOPPED if desired and error == "stopped" else Settled.NOTHING
    if result.result == "error":
        return Settled.ERROR
    return Settled.JUDGE


def failed_objects(result: ApplyResult) -> list[tuple[ObjectRef, str]]:
    """The objects that failed, with why.  A rollout that failed on health rather than on
    a write names the objects that never became healthy, so the verdict has a culprit."""
    failed = [(o.ref, o.message or "apply failed") for o in result.objects if not o.ok]
    if result.result == "failed" and not failed:
        failed = [(o.ref, result.message) for o in result.objects if o.health in ("Progressing", "Missing")]
    return failed


class AfterInconsistent(enum.Enum):
    NOT_LEADER = "not-leader"       # the new leader judges what it finds
    KEEP = "keep"                   # nobody asked for a rollback (or nothing to roll back to): watch
    ROLL_BACK = "roll-back"


def after_inconsistent(askers: Sequence[str], *, leading: bool, can_roll_back: bool) -> AfterInconsistent:
    """`askers`: the failing intents whose policy is `drift: rollback`; `can_roll_back`:
    the daemon follows a branch (a working tree has no earlier commit to go back to)."""
    if not leading:
        return AfterInconsistent.NOT_LEADER
    if not askers or not can_roll_back:
        return AfterInconsistent.KEEP
    return AfterInconsistent.ROLL_BACK


def rollback_refusal(target: str | None, *, on_branch: bool, in_repository: bool, branch: str) -> str:
    """Why the daemon must not roll back to `target` (the inventory's last known-good
    commit), or "" when it may.  A commit force-pushed off the branch is no longer what the
    repository says should run, and one the mirror never fetched cannot be compiled: rolling
    back to either would apply something nobody can review.  The failing commit is kept (it
    is on the cluster already) and watched; a newer commit on the branch replaces it."""
    if not target:
        return "the inventory records no last known-good commit to roll back to"
    if not in_repository:
        return (f"its last known-good commit {target[:12]} is not in the repository (force-pushed away before "
                "this daemon fetched it)")
    if not on_branch:
        return f"its last known-good commit {target[:12]} is no longer on branch {branch} (force-pushed away)"
    return ""


def rollback_request(verdict: Verdict, askers: Sequence[str]) -> tuple[str, tuple[ObjectRef, ...]]:
    """(the reason the quarantine and the rollback record, the failing objects, sorted)."""
    reason = f"{verdict.summary()} (policy rollback: {', '.join(askers)})"
    return reason, tuple(sorted({p.ref for p in verdict.problems}))
