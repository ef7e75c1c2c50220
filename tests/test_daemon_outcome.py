"""What follows a finished rollout or rollback (daemon/outcome.py): pure, from plain facts."""

from __future__ import annotations

from intentc.daemon.outcome import (AfterInconsistent, Settled, after_inconsistent, failed_objects,
                                    rollback_request, settle)
from intentc.drift.consistency import Problem, Verdict
from intentc.reconcile.diff import Action
from intentc.reconcile.result import ApplyResult, ObjectOutcome
from intentc.objectmeta import ObjectRef

A = ObjectRef("batch/v1", "Job", "team", "a")
B = ObjectRef("apps/v1", "Deployment", "team", "b")
C = ObjectRef("v1", "Service", "team", "c")
COMMIT = "c" * 40


def applied(result: str, *objects: ObjectOutcome, message: str = "") -> ApplyResult:
    return ApplyResult("default", COMMIT, "1.37.2", False, objects, result, message=message)


def test_a_rollout_is_judged_only_when_it_applied() -> None:
    ok = applied("succeeded")
    assert settle("rollout", ok, desired=True, error="") is Settled.JUDGE
    assert settle("rollout", applied("failed"), desired=True, error="") is Settled.JUDGE, "health failed: judge it"
    assert settle("rollout", applied("error"), desired=True, error="") is Settled.ERROR
    assert settle("rollout", None, desired=True, error="stopped") is Settled.STOPPED
    assert settle("rollout", None, desired=True, error="RuntimeError('x')") is Settled.NOTHING, "a crash: no retry"
    assert settle("rollout", ok, desired=False, error="") is Settled.NOTHING
    assert settle("rollout", None, desired=False, error="stopped") is Settled.NOTHING
    assert settle("rollback", ok, desired=True, error="") is Settled.ROLLED_BACK
    assert settle("rollback", None, desired=False, error="stopped") is Settled.ROLLED_BACK


def test_the_failed_objects_are_those_that_failed_to_apply_else_those_never_healthy() -> None:
    writes = applied("failed", ObjectOutcome(A, 10, Action.CREATE, ok=False, message="denied"),
                     ObjectOutcome(B, 10, Action.CREATE, ok=False), ObjectOutcome(C, 10, Action.CREATE),
                     message="wave 1 timed out")
    assert failed_objects(writes) == [(A, "denied"), (B, "apply failed")]
    health = applied("failed", ObjectOutcome(A, 10, Action.CREATE, health="Progressing"),
                     ObjectOutcome(B, 10, Action.CREATE, health="Healthy"),
                     ObjectOutcome(C, 10, Action.CREATE, health="Missing"), message="wave 1 timed out")
    assert failed_objects(health) == [(A, "wave 1 timed out"), (C, "wave 1 timed out")]
    assert failed_objects(applied("succeeded", ObjectOutcome(A, 10, Action.CREATE, health="Progressing"))) == []


def test_only_the_leader_in_git_mode_rolls_back_and_only_when_asked() -> None:
    asked = ("train",)
    assert after_inconsistent(asked, leading=True, can_roll_back=True) is AfterInconsistent.ROLL_BACK
    assert after_inconsistent(asked, leading=False, can_roll_back=True) is AfterInconsistent.NOT_LEADER
    assert after_inconsistent((), leading=False, can_roll_back=True) is AfterInconsistent.NOT_LEADER
    assert after_inconsistent((), leading=True, can_roll_back=True) is AfterInconsistent.KEEP
    assert after_inconsistent(asked, leading=True, can_roll_back=False) is AfterInconsistent.KEEP, "a working tree"


def test_a_rollback_records_why_and_names_each_failing_object_once() -> None:
    verdict = Verdict(COMMIT, (Problem(B, "serve", "team", "unhealthy", "not available"),
                               Problem(A, "train", "team", "unhealthy", "failed"),
                               Problem(B, "serve", "team", "placement-changed", "moved")))
    reason, failing = rollback_request(verdict, ("serve", "train"))
    assert reason == (f"rollout of {COMMIT[:12]} is not consistent: {B}: not available; {A}: failed; {B}: moved "
                      "(policy rollback: serve, train)")
    assert failing == tuple(sorted((A, B)))
