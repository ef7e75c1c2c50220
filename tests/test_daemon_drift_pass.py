"""What one detection pass looks at and heals (daemon/drift_pass.py): pure, from plain data."""

from __future__ import annotations

import logging

from intentc.daemon.drift_pass import (MAX_GETS_PER_PASS, HealStep, applied_refs, drift_level, heal_plan,
                                       in_scope, live_in_scope, to_fetch)
from intentc.drift.detect import DriftClass, Finding
from intentc.drift.policy import Decision, Verb
from intentc.ir import DriftPolicy
from intentc.reconcile.inventory import Entry, Inventory
from intentc.render.model import SETUP_STEPS, Manifest
from intentc.objectmeta import ObjectRef

NS = ObjectRef("v1", "Namespace", "", "team")
A = ObjectRef("batch/v1", "Job", "team", "a")
B = ObjectRef("batch/v1", "Job", "team", "b")
X = ObjectRef("v1", "ConfigMap", "team", "x")     # not desired


def manifest(ref: ObjectRef, step: int) -> Manifest:
    return Manifest(ref, step, {"kind": ref.kind}, "hash")


WAVE1, WAVE2 = SETUP_STEPS, SETUP_STEPS + 1
BY_REF = {NS: manifest(NS, 0), A: manifest(A, WAVE1), B: manifest(B, WAVE2)}
DONE = {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}}


def heal(ref: ObjectRef) -> Decision:
    return Decision(Finding(ref, DriftClass.MISSING, "gone"), DriftPolicy.HEAL, Verb.HEAL)


def test_an_event_pass_covers_the_changed_desired_objects_a_resync_all() -> None:
    assert in_scope(BY_REF, None) is BY_REF
    assert in_scope(BY_REF, {B, X}) == {B: BY_REF[B]}
    assert in_scope(BY_REF, set()) == {}


def test_absent_objects_are_fetched_unless_too_many_are_absent() -> None:
    cache = {A: {}}
    assert to_fetch([NS, A, B], cache) == [NS, B]
    assert to_fetch([A], cache) == []
    many = [ObjectRef("v1", "ConfigMap", "team", f"c{i}") for i in range(MAX_GETS_PER_PASS + 1)]
    assert to_fetch(many[:-1], cache) == many[:-1], "at the limit: still fetched"
    assert to_fetch(many, cache) == [], "above it: the informers' word is taken"
    assert to_fetch([A, *many[:-1]], cache) == many[:-1], "only the absent ones count"


def test_the_detector_sees_the_changed_live_objects_or_the_whole_cache() -> None:
    cache = {A: {"a": 1}, X: {"x": 1}}
    assert live_in_scope(cache, None) is cache
    assert live_in_scope(cache, {A, B}) == {A: {"a": 1}}


def test_only_applied_entries_count_as_applied() -> None:
    inventory = Inventory(entries=(Entry(A, WAVE1, "h", "c"), Entry(B, WAVE2, "h", "c", state="pending")))
    assert applied_refs(inventory) == {A}
    assert applied_refs(None) == set()


def test_drift_during_a_rollout_is_a_line_not_a_warning() -> None:
    assert drift_level("") == logging.WARNING
    assert drift_level("rollout") == logging.INFO
    assert drift_level("rollback") == logging.INFO


def test_a_heal_of_a_later_wave_waits_for_the_earlier_one_in_order() -> None:
    desired = tuple(BY_REF.values())
    due = [(heal(B), BY_REF[B]), (heal(NS), BY_REF[NS]), (heal(A), BY_REF[A])]
    plan = heal_plan(due, desired, {})
    assert [s.manifest.ref for s in plan] == [B, NS, A], "the ledger's order is kept"
    assert plan[1] == HealStep(due[1][0], BY_REF[NS], None), "setup objects never wait"
    assert plan[2].blocked is None, "wave 1 has no earlier wave"
    assert plan[0].blocked is not None and str(A) in plan[0].blocked
    assert heal_plan(due, desired, {A: {**BY_REF[A].body, **DONE}})[0].blocked is None
