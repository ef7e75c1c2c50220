"""The daemon's decision when its branch moves (daemon/branch.py): pure, one test per rule."""

from __future__ import annotations

from intentc.daemon.branch import HeadDecision, Step, decide_head
from intentc.drift.quarantine import Entry, Quarantine
from intentc.reconcile.inventory import Inventory, Record

OLD, GOOD, HEAD = "a" * 40, "b" * 40, "c" * 40
HELD = Quarantine((Entry(HEAD, "2 Jobs failed", "2026-11-29T10:00:00Z", GOOD),))


def decide(inventory: Inventory = Inventory(), quarantine: Quarantine = Quarantine(),
           in_force: str | None = None, previous: str | None = None,
           attempted: frozenset[str] = frozenset()) -> HeadDecision:
    return decide_head(HEAD, previous_head=previous, in_force=in_force, inventory=inventory,
                       quarantine=quarantine, attempted=attempted)


def test_a_new_head_is_rolled_out() -> None:
    assert decide(Inventory(commit=OLD)) == HeadDecision(Step.ROLL_OUT)


def test_a_quarantined_head_is_held_and_what_runs_is_adopted() -> None:
    fresh = decide(Inventory(commit=GOOD), HELD)
    assert (fresh.step, fresh.adopt) == (Step.HOLD, GOOD)
    assert "quarantined (2 Jobs failed)" in fresh.warning
    # said once; nothing re-adopted while a plan is in force
    again = decide(Inventory(commit=GOOD), HELD, in_force=GOOD, previous=HEAD)
    assert again == HeadDecision(Step.HOLD)
    # no finished apply on record: fall back to the last known-good commit
    assert decide(Inventory(last_known_good=OLD), HELD).adopt == OLD


def test_an_applied_head_is_adopted_not_reapplied() -> None:
    assert decide(Inventory(commit=HEAD)) == HeadDecision(Step.ADOPT, HEAD)
    assert decide(Inventory(commit=HEAD), in_force=HEAD) == HeadDecision(Step.ADOPT)


def test_a_head_tried_once_is_not_tried_again() -> None:
    assert decide(Inventory(commit=OLD), attempted=frozenset({HEAD})) == HeadDecision(Step.NOTHING)


def test_a_head_whose_last_rollout_failed_waits_for_a_human() -> None:
    failed = Inventory(commit=OLD, history=(Record(HEAD, "t0", "t1", "failed", message="Job x failed"),))
    d = decide(failed)
    assert (d.step, d.adopt) == (Step.SKIP_FAILED, HEAD)
    assert "failed its last rollout (Job x failed)" in d.warning
    assert decide(failed, in_force=OLD).adopt is None
    succeeded = Inventory(commit=OLD, history=(Record(HEAD, "t0", "t1", "succeeded"),))
    assert decide(succeeded).step is Step.ROLL_OUT
