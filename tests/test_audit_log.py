"""tests/audit.py on hand-written audit events: the split-brain count must see what it claims to.

The cluster tests (tests/test_daemon_partition_kube.py) assert 0 overlapping
windows; this shows the count is not 0 by construction: interleaved writers
are counted, Lease and Event writes and refused writes are not acting, and
parts of the log an API server cut short are skipped.
"""

from __future__ import annotations

import json

from tests import audit

A, B = "system:serviceaccount:intentc-system:a", "system:serviceaccount:intentc-system:b"


def event(user: str, second: int, resource: str = "deployments", verb: str = "patch", code: int = 200,
          stage: str = "ResponseComplete") -> str:
    stamp = f"2026-12-07T05:00:{second:02d}.000000Z"
    return json.dumps({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "stage": stage,
                       "verb": verb, "user": {"username": user},
                       "objectRef": {"resource": resource, "namespace": "t", "name": "web"},
                       "responseStatus": {"code": code}, "requestReceivedTimestamp": stamp, "stageTimestamp": stamp})


def test_a_takeover_is_one_switch_and_an_interleaving_is_counted() -> None:
    takeover = audit.acting(audit.parse([event(A, 1), event(A, 2), event(B, 3), event(B, 4)]), (A, B))
    assert audit.runs(takeover) == [(A, 2), (B, 2)]
    assert audit.overlapping_windows(takeover) == 0 and audit.after_first(takeover, B, A) == []
    split = audit.acting(audit.parse([event(A, 1), event(B, 2), event(A, 3), event(B, 4)]), (A, B))
    assert audit.overlapping_windows(split) == 2
    assert [str(w.done.second) for w in audit.after_first(split, B, A)] == ["3"]


def test_leases_events_refusals_and_cut_lines_are_not_acting() -> None:
    lines = [event(A, 1), event(B, 2, "leases", "update"), event(B, 3, "events", "create"),
             event(B, 4, code=409), event(B, 5, stage="ResponseStarted"), event(A, 6)[:40], event(A, 7)]
    writes = audit.parse(lines)
    assert [w.resource for w in writes] == ["deployments", "leases", "events", "deployments", "deployments"]
    ordered = audit.acting(writes, (A, B))
    assert audit.runs(ordered) == [(A, 2)] and audit.overlapping_windows(ordered) == 0
    assert audit.summary(writes, (A, B))["lease_writes_by_replica"] == {A: 0, B: 1}
