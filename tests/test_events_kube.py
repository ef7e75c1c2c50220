"""Events are aggregated like client-go's recorder: a repeat is a count, not a new Event."""

from __future__ import annotations

import pytest

from intentc.kube import events
from intentc.kube.client import KubeClient
from intentc.objectmeta import ObjectRef
from tests.kube_env import KubeEnv


def test_event_identity_is_what_it_says() -> None:
    ref = ObjectRef("apps/v1", "Deployment", "team-a", "serve")
    a = events.event_body(ref, "DriftHealed", "re-applied", at="2026-01-01T00:00:00Z")
    assert a["metadata"]["name"] == events.event_name(ref, "DriftHealed", "re-applied")
    assert events.event_name(ref, "DriftHealed", "other") != a["metadata"]["name"]
    assert events.repeated({"count": 3}, at="2026-01-02T00:00:00Z") == {"count": 4,
                                                                        "lastTimestamp": "2026-01-02T00:00:00Z"}


@pytest.mark.kube
def test_a_repeated_event_is_counted_not_duplicated(kube_env: KubeEnv) -> None:
    client = KubeClient.connect(str(kube_env.kubeconfig))
    ref = ObjectRef("v1", "ConfigMap", "default", "flappy")
    for _ in range(3):
        assert events.emit(client, ref, "DriftHealed", "intentc re-applied the desired state")
    assert events.emit(client, ref, "RolledBack", "rolled back to abc")
    items = client.list("v1", "Event", "default")
    mine = sorted((e["reason"], e["count"]) for e in items if e["involvedObject"]["name"] == "flappy")
    assert mine == [("DriftHealed", 3), ("RolledBack", 1)]
