"""How the reactor follows its source (daemon/following.py): pure, from plain facts."""

from __future__ import annotations

from intentc.daemon.following import (IDLE_TURN, SHORTEST_WAIT, OnLeading, OnReload, follower_adopts, on_leading,
                                      on_reload, wait_seconds)
from intentc.reconcile.inventory import Inventory
from intentc.render.model import Manifest
from intentc.objectmeta import ObjectRef

OLD, GOOD = "a" * 40, "b" * 40


def manifest(name: str, spec_hash: str = "h") -> Manifest:
    return Manifest(ObjectRef("batch/v1", "Job", "team", name), 10, {"kind": "Job"}, spec_hash)


def test_a_follower_takes_what_the_cluster_runs() -> None:
    assert follower_adopts(Inventory(commit=GOOD), None) == GOOD
    assert follower_adopts(Inventory(commit=GOOD), OLD) == GOOD
    assert follower_adopts(Inventory(commit=GOOD), GOOD) is None, "in force already: nothing to re-adopt"
    # no finished apply on record: the last known good
    assert follower_adopts(Inventory(last_known_good=OLD), None) == OLD
    assert follower_adopts(Inventory(commit=GOOD, last_known_good=OLD), None) == GOOD
    assert follower_adopts(Inventory(), None) is None


def test_a_reload_rolls_out_only_new_objects_and_waits_for_a_rollout_in_flight() -> None:
    plan = (manifest("a"), manifest("b"))
    changed = (manifest("a"), manifest("b", "h2"))
    assert on_reload(None, plan, "") is OnReload.NOTHING, "nothing compiled"
    assert on_reload(plan, plan, "") is OnReload.NOTHING, "the same objects: no rollout"
    assert on_reload(changed, plan, "") is OnReload.ROLL_OUT
    assert on_reload(changed, None, "") is OnReload.ROLL_OUT, "first plan"
    assert on_reload(changed, plan, "rollout") is OnReload.PEND
    assert on_reload(plan, plan, "rollout") is OnReload.NOTHING


def test_a_new_leader_decides_afresh() -> None:
    # git: first what the branch wants, then drift; a rollout in flight is not polled over
    assert on_leading(local=False, polling=True, in_force=True, busy=False) == OnLeading(poll=True, resync=True)
    assert on_leading(local=False, polling=True, in_force=True, busy=True) == OnLeading(resync=True)
    assert on_leading(local=False, polling=False, in_force=False, busy=False) == OnLeading(resync=True)
    # a working tree: its plan is rolled out again (the old leader may have applied since), no resync
    assert on_leading(local=True, polling=False, in_force=True, busy=False) == OnLeading(roll_out=True)
    assert on_leading(local=True, polling=False, in_force=True, busy=True) == OnLeading()
    assert on_leading(local=True, polling=False, in_force=False, busy=False) == OnLeading()


def test_the_reactor_waits_until_the_next_poll_or_resync_within_bounds() -> None:
    assert wait_seconds(100.0, 100.25, 100.75, polling=True) == 0.25
    assert wait_seconds(100.0, 100.75, 100.5, polling=True) == 0.5
    assert wait_seconds(100.0, 100.25, 100.75, polling=False) == 0.75, "no poll without a branch"
    assert wait_seconds(100.0, 90.0, 300.0, polling=True) == SHORTEST_WAIT, "overdue: turn soon, never spin"
    assert wait_seconds(100.0, 130.0, 400.0, polling=True) == IDLE_TURN, "turn at least once a second"
