"""Leader election without a cluster: the pure decision as a table, and the
elector loop against an in-memory Lease store with the API server's
optimistic concurrency (resourceVersion, Conflict, AlreadyExists)."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from intentc.daemon.election import Elector
from intentc.daemon.leader import Observed, Timing, Verdict, decide, leads
from intentc.kube.errors import AlreadyExists, NotFound, Outdated
from intentc.reconcile.lease import LeaseRecord
from intentc.objectmeta import ObjectRef

T = Timing(15, 10.0, 2.0)
WALL = datetime(2026, 1, 1, tzinfo=timezone.utc)
EARLIER = WALL - timedelta(hours=1)


def held_by(holder: str, duration: int | None = 15, transitions: int = 3) -> LeaseRecord:
    return LeaseRecord(holder, duration, EARLIER, EARLIER, transitions)


OTHER = held_by("b")

# (case, lease read, first seen at, now, our last renewal start) -> verdict, written holder, transitions
TABLE: list[tuple[str, LeaseRecord | None, float | None, float, float | None, Verdict, int | None]] = [
    ("no Lease yet: create it", None, None, 100.0, None, Verdict.ACQUIRE, 0),
    ("released (no holder): take it, one more transition", held_by(""), 100.0, 100.0, None, Verdict.ACQUIRE, 4),
    ("another holder, just seen: follow", OTHER, None, 100.0, None, Verdict.FOLLOW, None),
    ("another holder, seen 12.9 s ago unchanged: follow", OTHER, 87.1, 100.0, None, Verdict.FOLLOW, None),
    ("unchanged for 15 s less the 2 s a read may lag: take over", OTHER, 87.0, 100.0, None, Verdict.ACQUIRE, 4),
    ("the record's own duration counts (30 s)", held_by("b", 30), 80.0, 100.0, None, Verdict.FOLLOW, None),
    ("... and expires at 30 s less the lag", held_by("b", 30), 72.0, 100.0, None, Verdict.ACQUIRE, 4),
    ("no duration in the record: ours (15 s)", held_by("b", None), 85.0, 100.0, None, Verdict.ACQUIRE, 4),
    ("ours, leading: renew, same term", held_by("me"), 99.0, 100.0, 98.0, Verdict.RENEW, 3),
    ("ours after a restart of the loop: renew", held_by("me"), None, 100.0, None, Verdict.RENEW, 3),
    ("leading but no renewal for 10 s: lost", held_by("me"), 99.0, 100.0, 90.0, Verdict.LOST, None),
    ("leading, someone else's record: lost", OTHER, None, 100.0, 98.0, Verdict.LOST, None),
    ("leading, record released by someone: lost", held_by(""), None, 100.0, 98.0, Verdict.LOST, None),
]


@pytest.mark.parametrize("case,lease,seen,now,renewed,verdict,transitions", TABLE, ids=[r[0] for r in TABLE])
def test_decide(case: str, lease: LeaseRecord | None, seen: float | None, now: float, renewed: float | None,
                verdict: Verdict, transitions: int | None) -> None:
    observed = Observed(lease, seen) if seen is not None else None
    step = decide(lease, identity="me", now=now, wall=WALL, timing=T, observed=observed, last_renew=renewed)
    assert step.verdict is verdict, case
    if transitions is None:
        assert step.write is None
        return
    assert step.write is not None
    assert (step.write.holder, step.write.duration, step.write.renewed, step.write.transitions) == \
        ("me", 15, WALL, transitions)
    # a renewal keeps the term's acquireTime; a new term starts now
    assert step.write.acquired == (EARLIER if verdict is Verdict.RENEW else WALL)


def test_observation_restarts_when_the_record_changes() -> None:
    """Expiry is measured from when *this* process saw the record change, not from
    the renewTime written by another machine's clock."""
    first = decide(OTHER, identity="me", now=100.0, wall=WALL, timing=T)
    assert first.observed.since == 100.0
    same = decide(OTHER, identity="me", now=110.0, wall=WALL, timing=T, observed=first.observed)
    assert same.observed.since == 100.0 and same.verdict is Verdict.FOLLOW
    renewed = LeaseRecord("b", 15, EARLIER, EARLIER + timedelta(seconds=2), 3)
    moved = decide(renewed, identity="me", now=114.0, wall=WALL, timing=T, observed=same.observed)
    assert moved.observed.since == 114.0 and moved.verdict is Verdict.FOLLOW
    assert decide(renewed, identity="me", now=129.0, wall=WALL, timing=T,
                  observed=moved.observed).verdict is Verdict.ACQUIRE


def test_a_leader_stops_before_anyone_may_take_over() -> None:
    """The renew deadline ends the leader's right to act while every follower
    still sees an unexpired Lease: no instant with two actors."""
    renewal_started = 50.0
    follower_saw_it = 50.0          # at the earliest: the write lands after it started
    for now in (59.9, 60.0, 64.9):
        leader_acts = leads(renewal_started, now, T)
        follower_may = decide(held_by("me"), identity="b", now=now, wall=WALL, timing=T,
                              observed=Observed(held_by("me"), follower_saw_it)).verdict is Verdict.ACQUIRE
        assert not (leader_acts and follower_may)
    assert leads(renewal_started, 59.9, T) and not leads(renewal_started, 60.0, T)


@pytest.mark.parametrize("timing,problem", [
    (Timing(15, 10.0, 2.0), ""),
    (Timing(10, 10.0, 2.0), "longer than the renew deadline"),
    (Timing(15, 2.0, 2.0), "1.2 × the retry period"),
    (Timing(15, 10.0, 0.0), "positive"),
])
def test_timing_problems(timing: Timing, problem: str) -> None:
    assert (problem in timing.problem()) and (bool(problem) == bool(timing.problem()))


class Leases:
    """The API server's Lease semantics, in memory: create-if-absent, replace-if-unchanged."""

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None
        self.version = 0
        self.hang = False
        self.namespace = True                   # intentc-system exists

    def with_timeout(self, _timeout: tuple[float, float]) -> "Leases":
        return self

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        if self.hang:
            raise Outdated("simulated: no answer in time", 504, "Timeout")
        return copy.deepcopy(self.body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.body = copy.deepcopy(dict(body))
        self.body["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.body)

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["kind"] == "Namespace" and body["metadata"]["name"] == "intentc-system"
        self.namespace = True
        return body

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.namespace:
            raise NotFound('namespaces "intentc-system" not found', 404, "NotFound")
        if self.body is not None:
            raise AlreadyExists("exists", 409, "AlreadyExists")
        return self._store(body)

    def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        assert self.body is not None
        if body["metadata"]["resourceVersion"] != self.body["metadata"]["resourceVersion"]:
            raise Outdated("conflict", 409, "Conflict")
        return self._store(body)

    def request(self, *_args: Any, **_kwargs: Any) -> Any:   # Events: accepted, ignored
        return {}

    def resource(self, *_args: Any) -> Any:
        class _R:
            def path(self, *_a: Any) -> str:
                return "/events"
        return _R()


def two_electors(store: Leases, clock: list[float]) -> tuple[Elector, Elector, dict[str, list[bool]]]:
    """Electors `a` and `b` on one store, both reading `clock[0]` (the wall clock follows it),
    and each one's changes of leadership as it reported them."""
    changes: dict[str, list[bool]] = {"a": [], "b": []}

    def elector(name: str) -> Elector:
        return Elector(store, "prod", T, me=name, on_change=changes[name].append,  # type: ignore[arg-type]
                       clock=lambda: clock[0], wall=lambda: WALL + timedelta(seconds=clock[0]))
    return elector("a"), elector("b"), changes


def test_two_electors_one_leader_and_takeover_after_the_leader_dies() -> None:
    store, clock = Leases(), [0.0]
    a, b, changes = two_electors(store, clock)
    a.tick()
    b.tick()
    assert (a.leading(), b.leading()) == (True, False) and b.holder == "a"
    assert store.body is not None and store.body["spec"]["holderIdentity"] == "a"
    assert store.body["spec"]["leaseTransitions"] == 0
    for _ in range(5):                          # a renews every period; b keeps following
        clock[0] += T.retry_period
        a.tick()
        b.tick()
        assert (a.leading(), b.leading()) == (True, False)
    acquired = store.body["spec"]["acquireTime"]
    # a dies (no more ticks): b takes over only once it saw no renewal for a lease duration
    died = clock[0]
    while not b.leading():
        clock[0] += T.retry_period
        b.tick()
        assert not a.leading() or clock[0] - died < T.renew_deadline   # a's own right ends first
    assert clock[0] - died >= T.lease_duration - T.retry_period
    assert store.body["spec"]["holderIdentity"] == "b"
    assert store.body["spec"]["leaseTransitions"] == 1 and store.body["spec"]["acquireTime"] != acquired
    assert changes == {"a": [True], "b": [True]}
    a.tick()                                    # a comes back: it follows, and says it lost
    assert not a.leading() and a.holder == "b"


def test_a_leader_whose_renewals_hang_stops_acting_at_the_deadline() -> None:
    store = Leases()
    clock = [0.0]
    lost: list[bool] = []
    a = Elector(store, "prod", T, me="a", on_change=lost.append,  # type: ignore[arg-type]
                clock=lambda: clock[0], wall=lambda: WALL)
    a.tick()
    store.hang = True
    clock[0] = T.renew_deadline - 0.1
    assert a.leading()
    clock[0] = T.renew_deadline               # no successful renewal since t=0: no right to act
    assert not a.leading()
    a.tick()
    assert lost == [True, False]


def test_a_stopped_leader_releases_the_lease() -> None:
    store = Leases()
    a = Elector(store, "prod", T, me="a", clock=lambda: 0.0, wall=lambda: WALL)  # type: ignore[arg-type]
    a.tick()
    a.stop()                                    # never started: releases all the same
    assert store.body is not None
    assert store.body["spec"]["holderIdentity"] is None and store.body["spec"]["leaseDurationSeconds"] == 1
    b = Elector(store, "prod", T, me="b", clock=lambda: 0.0, wall=lambda: WALL)  # type: ignore[arg-type]
    b.tick()
    assert b.leading()                          # at once, not after a lease duration


def test_a_follower_retries_when_the_lease_it_watches_expires_not_a_period_later() -> None:
    store = Leases()
    clock = [0.0]
    a = Elector(store, "prod", T, me="a", clock=lambda: clock[0], wall=lambda: WALL)  # type: ignore[arg-type]
    b = Elector(store, "prod", T, me="b", clock=lambda: clock[0], wall=lambda: WALL)  # type: ignore[arg-type]
    a.tick()
    b.tick()                                    # b first sees a's record at t=0: it expires for b at t=13
    assert a._pause() == T.retry_period         # a leader renews every retry period
    clock[0] = 5.0
    assert b._pause() == T.retry_period
    clock[0] = 12.0
    assert b._pause() == pytest.approx(1.05)
    clock[0] = 13.05
    b.tick()
    assert b.leading()


def test_the_first_candidate_on_a_fresh_cluster_creates_intentc_system() -> None:
    store = Leases()
    store.namespace = False
    a = Elector(store, "prod", T, me="a", clock=lambda: 0.0, wall=lambda: WALL)  # type: ignore[arg-type]
    a.tick()
    assert store.namespace and a.leading()


def test_a_lease_deleted_by_hand_never_lets_two_act() -> None:
    """Issue 39: the Lease deleted while `a` leads.  `b` creates it at once but does not
    act for a renew deadline (whoever led may act until then); `a` stops at its next read
    (or at once, should its own create be refused); `b` acts once the fence has passed."""
    store, clock = Leases(), [0.0]
    a, b, changes = two_electors(store, clock)
    a.tick()
    b.tick()
    assert a.leading() and changes == {"a": [True], "b": []}
    store.body = None                           # kubectl delete lease
    clock[0] += T.retry_period
    b.tick()                                    # b reads first: creates it, holds it, does not act
    assert store.body is not None and store.body["spec"]["holderIdentity"] == "b"
    assert b.holds() and not b.leading() and changes["b"] == []
    a.tick()                                    # a reads b's record: it stops
    assert not a.leading() and changes["a"] == [True, False]
    fenced = clock[0]
    while not b.leading():
        clock[0] += T.retry_period
        b.tick()
        a.tick()
        assert not a.leading()
    assert clock[0] - fenced >= T.renew_deadline - T.retry_period and changes["b"] == [True]


def test_a_leader_that_recreates_a_deleted_lease_keeps_acting() -> None:
    store = Leases()
    clock = [0.0]
    a = Elector(store, "prod", T, me="a", clock=lambda: clock[0], wall=lambda: WALL)  # type: ignore[arg-type]
    a.tick()
    store.body = None
    clock[0] += T.retry_period
    a.tick()                                    # its own term goes on: nobody else can have led
    assert a.leading() and store.body is not None and store.body["spec"]["holderIdentity"] == "a"
