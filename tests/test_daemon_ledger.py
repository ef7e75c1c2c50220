"""The daemon's memory between passes (daemon/ledger.py): pure, no cluster needed."""

from __future__ import annotations

from intentc.daemon.ledger import DriftLedger
from intentc.drift.detect import DriftClass, Finding
from intentc.drift.policy import Decision, Verb
from intentc.ir import DriftPolicy
from intentc.render.model import Manifest
from intentc.objectmeta import ObjectRef

A = ObjectRef("apps/v1", "Deployment", "team", "a")
B = ObjectRef("batch/v1", "Job", "team", "b")


def found(ref: ObjectRef, drift: DriftClass, message: str = "x") -> Finding:
    return Finding(ref, drift, message)


def heal(f: Finding) -> Decision:
    return Decision(f, DriftPolicy.HEAL, Verb.HEAL)


def manifest(ref: ObjectRef) -> Manifest:
    return Manifest(ref, 10, {"kind": ref.kind}, "hash")


def test_a_drift_is_said_once_while_it_lasts() -> None:
    ledger = DriftLedger()
    modified = found(A, DriftClass.MODIFIED, "replicas 2 -> 5")
    assert ledger.record([modified, found(B, DriftClass.IN_SYNC)], None) == [modified]
    assert ledger.record([modified, found(B, DriftClass.IN_SYNC)], None) == []
    changed = found(A, DriftClass.MODIFIED, "replicas 2 -> 7")
    assert ledger.record([changed], {A}) == [changed]
    assert ledger.counts()[DriftClass.MODIFIED] == 1 and ledger.counts()[DriftClass.IN_SYNC] == 1


def test_a_pass_over_some_objects_keeps_the_others() -> None:
    ledger = DriftLedger()
    ledger.record([found(A, DriftClass.MODIFIED), found(B, DriftClass.MISSING)], None)
    ledger.record([found(A, DriftClass.IN_SYNC)], {A})
    assert ledger.findings[B][0].drift is DriftClass.MISSING
    assert ledger.counts()[DriftClass.MISSING] == 1 and ledger.counts()[DriftClass.MODIFIED] == 0
    ledger.record([], None)                       # a full pass that finds nothing forgets everything
    assert ledger.findings == {}


def test_heals_back_off_and_reset_once_in_sync() -> None:
    ledger = DriftLedger(backoff=(2.0, 5.0))
    f = found(A, DriftClass.MODIFIED)
    desired = {A: manifest(A)}
    due = [ledger.heals_due([heal(f)], desired, {A}, now) for now in (0.0, 1.0, 2.0, 5.0, 6.0, 10.0, 14.0)]
    # allowed at 0, then after 2 s, then 4 s, then capped at 5 s: 0, 2, 6, 11 (so not at 10), ...
    assert [len(d) for d in due] == [1, 0, 1, 0, 1, 0, 1]
    ledger.record([found(A, DriftClass.IN_SYNC)], {A})
    assert len(ledger.heals_due([heal(f)], desired, {A}, 14.5)) == 1     # back to the first delay


def test_only_heals_of_applied_desired_objects_are_due() -> None:
    ledger = DriftLedger()
    missing = found(B, DriftClass.MISSING)
    report = Decision(found(A, DriftClass.MODIFIED), DriftPolicy.REPORT, Verb.REPORT)
    unknown = heal(found(ObjectRef("v1", "ConfigMap", "team", "gone"), DriftClass.MODIFIED))
    desired = {A: manifest(A), B: manifest(B)}
    assert ledger.heals_due([report, unknown, heal(missing)], desired, applied=set(), now=0.0) == []
    [(decision, m)] = ledger.heals_due([heal(missing)], desired, applied={B}, now=0.0)
    assert decision.finding is missing and m.ref == B


def test_a_heal_waits_for_the_earlier_waves_to_be_healthy() -> None:
    """After a rollout timed out in wave 1, healing must not create wave 2's Job (it is `after` wave 1)."""
    from intentc.drift.policy import wave_blocker
    from intentc.render import render
    from intentc.render.model import SETUP_STEPS
    from tests.render_cases import SHA_A, sample_plan, sample_program

    manifests = render(sample_program(), sample_plan(), SHA_A).manifests
    waves = sorted({m.step for m in manifests if m.step >= SETUP_STEPS})
    assert len(waves) >= 2
    later = next(m for m in manifests if m.step == waves[1])
    first = [m for m in manifests if m.step == waves[0]]
    setup = next(m for m in manifests if m.step < SETUP_STEPS)
    assert wave_blocker(setup, manifests, {}) is None, "setup objects never wait"
    reason = wave_blocker(later, manifests, {})
    assert reason is not None and "is not done" in reason
    done = {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1,
                       "availableReplicas": 99, "readyReplicas": 99, "updatedReplicas": 99, "replicas": 99}}
    live = {m.ref: {**dict(m.body), **done} for m in first}
    assert wave_blocker(later, manifests, live) is None, [wave_blocker(later, manifests, live)]
