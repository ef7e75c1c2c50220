"""How `apply --wait` learns that Jobs ended: a watch, its fallbacks, and the release loop on it.

`reconcile/watched.py` against scripted list and watch answers (a 410 Gone, a
lost connection) — the real server's side of list-then-watch is
tests/test_watch_kube.py — and the release loop of `reconcile/sync.py` on a
watch that reports each Job's completion; what the API server records when
a chain runs is in tests/test_release_kube.py.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import pytest

from intentc.kube.errors import Unreachable
from intentc.kube.watch import Expired, WatchEvent
from intentc.reconcile import watched
from intentc.reconcile.diff import Pair
from intentc.reconcile.health import Health, HealthStatus
from intentc.reconcile.sync import ApplyOptions, Reconciler, _Run, _State, _Unit
from intentc.reconcile.watched import WatchedObjects
from intentc.objectmeta import ObjectRef

NS = "team-a"
JOBS = [("batch/v1", "Job")]      # the scripted streams: Jobs only (and their Pods where said)


def job(name: str, rv: int, done: bool = False, uid: str = "") -> dict[str, Any]:
    conditions = [{"type": "Complete", "status": "True"}] if done else []
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": str(rv), "uid": uid or f"uid-{name}"},
            "spec": {"completions": 1}, "status": {"conditions": conditions}}


def ref(name: str) -> ObjectRef:
    return ObjectRef("batch/v1", "Job", NS, name)


class Script:
    """The server's answers in order: each list returns the next listing, each watch plays the
    next script (events, then an exception or, at the end of the scripts, blocks until closed)."""

    def __init__(self, lists: list[tuple[list[dict[str, Any]], str]], watches: list[list[Any]]) -> None:
        self.lists, self.watches = lists, watches
        self.listed: list[str] = []          # the resourceVersion each list returned
        self.watched_from: list[str] = []    # the resourceVersion each watch started at
        self.idle = threading.Event()        # the last script is playing: nothing more will happen
        # per kind, for streams that run side by side (Jobs and their Pods): (listings, watches)
        self.by_kind: dict[str, tuple[list[tuple[list[dict[str, Any]], str]], list[list[Any]]]] = {}
        self.idle_kinds: set[str] = set()

    def list_objects(self, client: Any, api_version: str, kind: str, namespace: str = "",
                     label_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        items, rv = (self.by_kind[kind][0] if kind in self.by_kind else self.lists).pop(0)
        self.listed.append(rv)
        return items, rv

    def watch(self, client: Any, api_version: str, kind: str, resource_version: str, namespace: str = "",
              label_selector: str = "", timeout_seconds: int = 300) -> Any:
        self.watched_from.append(resource_version)
        watches = self.by_kind[kind][1] if kind in self.by_kind else self.watches
        steps = watches.pop(0) if watches else None
        script = self

        class _W:
            def __init__(self) -> None:
                self.closed = threading.Event()

            def close(self) -> None:
                self.closed.set()

            def __iter__(self) -> Iterator[WatchEvent]:
                if steps is None:
                    script.idle_kinds.add(kind)
                    if not script.by_kind or script.idle_kinds >= set(script.by_kind):
                        script.idle.set()
                    self.closed.wait(30)
                    return
                for step in steps:
                    if isinstance(step, Exception):
                        raise step
                    yield step
        return _W()


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Iterator[Script]:
    s = Script([], [])
    monkeypatch.setattr(watched, "list_objects", s.list_objects)
    monkeypatch.setattr(watched, "Watch", s.watch)
    yield s


def settled(s: Script) -> None:
    assert s.idle.wait(30), "the scripted answers were not all consumed"


def test_events_update_the_cache_and_a_410_lists_again(script: Script) -> None:
    script.lists = [([job("a", 1)], "1"), ([job("a", 3, done=True), job("b", 4)], "4")]
    script.watches = [[WatchEvent("MODIFIED", job("a", 2)), WatchEvent("BOOKMARK", job("x", 2)),
                       Expired("too old", 410, "Expired")]]
    w = WatchedObjects(None, [NS], JOBS, backoff=(0.0, 0.0), pods=False).start()  # type: ignore[arg-type]
    try:
        settled(script)
        assert script.listed == ["1", "4"], "410 Gone: listed again"
        assert script.watched_from == ["1", "4"], "each watch continues from its list's resourceVersion"
        assert w.lookup(ref("b")) == (True, job("b", 4))
        assert w.lookup(ref("a"))[1] == job("a", 3, done=True)
        assert w.lookup(ObjectRef("batch/v1", "Job", "elsewhere", "a")) == (False, None), "not a watched namespace"
        assert not w.covers(ObjectRef("apps/v1", "Deployment", NS, "serve")), "not a watched kind"
    finally:
        w.close()


def test_a_lost_watch_is_not_live_until_it_has_listed_again(script: Script, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()

    class Blocked(Unreachable):
        """Raised once the test has looked at the stream while the connection is down."""

    script.lists = [([job("a", 1)], "1"), ([job("a", 2, done=True)], "2")]
    seen: list[bool] = []
    original = script.list_objects

    def relist(*args: Any, **kw: Any) -> tuple[list[dict[str, Any]], str]:
        if script.listed:                  # the second list: look at the stream before it answers
            seen.append(w.covers(ref("a")))
            gate.set()
        return original(*args, **kw)
    monkeypatch.setattr(watched, "list_objects", relist)
    script.watches = [[Blocked("connection reset", 0, "")]]
    w = WatchedObjects(None, [NS], JOBS, backoff=(0.0, 0.0), pods=False)  # type: ignore[arg-type]
    w.start()
    try:
        settled(script)
        assert gate.is_set() and seen == [False], "while the watch is down, the caller reads the object itself"
        assert w.lookup(ref("a")) == (True, job("a", 2, done=True))
    finally:
        w.close()


# -- the release loop on a watch ------------------------------------------------------

class _Watch:
    """A watch whose n-th wait reports the n-th Job complete (one change per wait)."""

    def __init__(self, names: list[str], covered: bool = True) -> None:
        self.names, self.covered = names, covered
        self.seq, self.done = 0, 0
        self.bounds: list[float] = []

    def wait(self, since: int, timeout: float) -> int:
        self.bounds.append(timeout)
        self.done += 1
        self.seq += 1
        return self.seq

    def lookup(self, r: ObjectRef) -> tuple[bool, dict[str, Any] | None]:
        if not self.covered:
            return False, None
        return True, job(r.name, 10, done=self.names.index(r.name) < self.done)

    def job_pods(self, body: dict[str, Any]) -> list[tuple[str, str | None]] | None:
        return None                  # the pod stream is not live: the Job's conditions alone


class _NoReads:
    def get(self, r: ObjectRef) -> dict[str, Any]:
        raise AssertionError(f"{r} was read with a GET: the watch covers it")


class _Reads:
    def __init__(self) -> None:
        self.reads: list[str] = []

    def get(self, r: ObjectRef) -> dict[str, Any]:
        self.reads.append(r.name)
        return job(r.name, 10, done=True)


def _running(names: list[str]) -> tuple[dict[str, _Unit], _Run]:
    units = {}
    for n in names:
        u = _Unit(n, n, 4, [Pair(ref(n), None, None, False)])
        u.state, u.deadline = _State.RUNNING, 1e9
        units[n] = u
    run = _Run(None, None, None, [])  # type: ignore[arg-type]   # nothing is written: every intent is created
    run.health = {ref(n): Health(HealthStatus.PROGRESSING) for n in names}
    run.bodies = {ref(n): job(n, 1) for n in names}
    return units, run


def test_the_release_loop_wakes_on_the_watch_and_never_sleeps_a_poll_interval() -> None:
    names = ["a", "b", "c"]
    units, run = _running(names)
    slept: list[float] = []
    reconciler = Reconciler(_NoReads(), ApplyOptions(workers=1, poll_interval=600.0),  # type: ignore[arg-type]
                            sleep=slept.append, monotonic=lambda: 0.0)
    w = _Watch(names)
    assert reconciler._release(units, run, w) == ""  # type: ignore[arg-type]
    assert all(u.state is _State.DONE for u in units.values())
    assert w.done == len(names) and set(slept) == {0}, "one wait per change, no poll-interval sleep"


def test_a_job_the_watch_does_not_cover_is_read_once_per_poll_interval() -> None:
    units, run = _running(["a"])
    clock = [0.0]
    client = _Reads()
    reconciler = Reconciler(client, ApplyOptions(workers=1, poll_interval=2.0),  # type: ignore[arg-type]
                            sleep=lambda s: None, monotonic=lambda: clock[0])
    w = _Watch(["a"], covered=False)
    original = w.wait

    def wait(since: int, timeout: float) -> int:
        clock[0] += timeout          # nothing changes on the watch: the wait runs to its bound
        return original(since, timeout)
    w.wait = wait                    # type: ignore[method-assign]
    assert reconciler._release(units, run, w) == ""  # type: ignore[arg-type]
    assert client.reads == ["a"] and w.bounds == [2.0], "read when the poll interval was up, not before"


def test_a_cached_job_of_another_uid_is_no_news() -> None:
    """A replaced Job: the watch still holds the old, complete one until it sees the deletion."""
    units, run = _running(["a"])
    run.bodies[ref("a")] = job("a", 5, uid="new")
    reconciler = Reconciler(_NoReads(), ApplyOptions(workers=1))  # type: ignore[arg-type]
    w = _Watch(["a"])
    w.done = 1                       # the cache says complete, for the old uid
    assert reconciler._watched(w, ref("a"), run)  # type: ignore[arg-type]
    assert run.health[ref("a")].status is HealthStatus.PROGRESSING


# -- a Job done by its pods, before the Job controller says so ----------------------

def pod(name: str, owner: str, phase: str, index: int | None = None, rv: int = 1) -> dict[str, Any]:
    annotations = {} if index is None else {watched.COMPLETION_INDEX: str(index)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": str(rv), "annotations": annotations,
                         "ownerReferences": [{"kind": "Job", "name": "j", "uid": owner, "controller": True}]},
            "status": {"phase": phase}}


def test_the_pod_stream_keeps_each_jobs_pods_by_owner(script: Script) -> None:
    script.by_kind = {
        "Job": ([([job("a", 1)], "1")], []),
        "Pod": ([([pod("a-0", "uid-a", "Running", 0), pod("x", "uid-x", "Running")], "1")],
                [[WatchEvent("MODIFIED", pod("a-0", "uid-a", "Succeeded", 0, 2)),
                  WatchEvent("ADDED", pod("a-1", "uid-a", "Pending", 1, 3)),
                  WatchEvent("DELETED", pod("x", "uid-x", "Running", None, 4))]])}
    w = WatchedObjects(None, [NS], JOBS, backoff=(0.0, 0.0)).start()  # type: ignore[arg-type]
    try:
        settled(script)
        assert sorted(w.job_pods(job("a", 1)) or []) == [("Pending", "1"), ("Succeeded", "0")]
        assert w.job_pods(job("x", 1)) == [], "its only pod was deleted"
        other = job("a", 1)
        other["metadata"]["namespace"] = "elsewhere"
        assert w.job_pods(other) is None, "not a watched namespace: the caller goes by the Job alone"
    finally:
        w.close()


def indexed(completions: int, **spec: Any) -> dict[str, Any]:
    body = job("g", 1)
    body["spec"] = {"completions": completions, "completionMode": "Indexed", **spec}
    return body


@pytest.mark.parametrize(("body", "pods", "done"), [
    (indexed(2), [("Succeeded", "0"), ("Succeeded", "1")], True),
    (indexed(2), [("Succeeded", "0"), ("Succeeded", "0"), ("Running", "1")], False),   # one index twice
    (indexed(2), [("Succeeded", "0"), ("Failed", "1")], False),
    (indexed(2, suspend=True), [("Succeeded", "0"), ("Succeeded", "1")], False),
    (job("a", 1), [("Succeeded", None)], True),
    (job("a", 1), [("Running", None)], False),
    ({**job("a", 1), "spec": {}}, [("Succeeded", None)], False),                        # a work queue
    ({**job("a", 1), "status": {"conditions": [{"type": "Failed", "status": "True"}]}}, [("Succeeded", None)], False),
])
def test_a_job_is_done_by_its_pods_when_they_meet_its_completions(body: dict[str, Any], pods: list[Any],
                                                                   done: bool) -> None:
    from intentc.reconcile.health import job_succeeded_by_pods
    health = job_succeeded_by_pods(body, pods)
    assert (health is not None and health.status is HealthStatus.HEALTHY) is done


def test_the_release_loop_takes_a_job_as_done_when_its_pods_are() -> None:
    units, run = _running(["a"])
    reconciler = Reconciler(_NoReads(), ApplyOptions(workers=1))  # type: ignore[arg-type]
    w = _Watch(["a"])                                    # the Job says nothing yet
    w.job_pods = lambda body: [("Succeeded", None)]      # type: ignore[method-assign]
    assert reconciler._watched(w, ref("a"), run)  # type: ignore[arg-type]
    assert run.health[ref("a")] == Health(HealthStatus.HEALTHY, "1/1 pods succeeded")


# -- a release waits for its tenant's quota to count the end it waited for -----------

class _Quota:
    """A watch whose cache holds the tenant's ResourceQuota as its controller last counted it."""

    def __init__(self, room: int | None, hard: int = 16) -> None:
        self.room, self.hard = room, hard

    def lookup(self, r: ObjectRef) -> tuple[bool, dict[str, Any] | None]:
        assert (r.kind, r.name) == ("ResourceQuota", "intentc-tenant-quota")
        if self.room is None:
            return False, None
        return True, {"status": {"hard": {"requests.nvidia.com/gpu": str(self.hard)},
                                 "used": {"requests.nvidia.com/gpu": str(self.hard - self.room)}}}


def _waiting(names: list[str]) -> list[_Unit]:
    return [_Unit(n, n, 4, [Pair(ref(n), None, None, False)]) for n in names]


def test_an_intent_waits_until_its_tenants_quota_shows_room_for_its_gpus() -> None:
    from intentc.reconcile.release import QUOTA_WAIT_S, ReleaseOrder
    order = ReleaseOrder(gpus={"a": 8, "b": 8, "cpu": 0})
    a, b, cpu = _waiting(["a", "b", "cpu"])
    # the controller still counts the predecessor's 8 of 16 GPUs: room for one of the two
    go, short = Reconciler._quota_room([a, b, cpu], {}, order, _Quota(8), 100.0)  # type: ignore[arg-type]
    assert (go, short) == ([a, cpu], [b]), "room is shared out in release order; no GPUs, no wait"
    # counted: both fit
    go, short = Reconciler._quota_room([b], {}, order, _Quota(16), 101.0)  # type: ignore[arg-type]
    assert (go, short) == ([b], [])
    # a quota that never shows room (another client's pods) holds it QUOTA_WAIT_S, no longer
    c, = _waiting(["b"])
    assert Reconciler._quota_room([c], {}, order, _Quota(0), 200.0)[0] == []  # type: ignore[arg-type]
    assert Reconciler._quota_room([c], {}, order, _Quota(0), 200.0 + QUOTA_WAIT_S)[0] == [c]  # type: ignore[arg-type]
    # a quota the watch does not cover holds nobody
    d, = _waiting(["a"])
    assert Reconciler._quota_room([d], {}, order, _Quota(None), 0.0)[0] == [d]  # type: ignore[arg-type]


def test_an_intent_created_a_moment_ago_takes_quota_before_its_pods_are_counted() -> None:
    """Quota 8: `a` was created (8 GPUs) and the controller has not counted its pod yet: `b` waits."""
    from intentc.reconcile.release import ReleaseOrder
    order = ReleaseOrder(gpus={"a": 8, "b": 8})
    a, b = _waiting(["a", "b"])
    a.state = _State.RUNNING
    go, short = Reconciler._quota_room([b], {"a": a, "b": b}, order, _Quota(8, hard=8), 0.0)  # type: ignore[arg-type]
    assert (go, short) == ([], [b])
    a.state = _State.DONE            # ended; the quota's count is what holds now
    assert Reconciler._quota_room([b], {"a": a, "b": b}, order, _Quota(8, hard=8), 1.0)[0] == [b]  # type: ignore[arg-type]
