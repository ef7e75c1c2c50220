"""List-then-watch (intentc.kube.watch) against a real kube-apiserver: events in
order, resuming from a resourceVersion, `410 Gone` after the server forgot,
and closing a blocked stream from another thread."""

from __future__ import annotations

import secrets
import threading
from typing import Any

import pytest

from intentc.kube.client import KubeClient
from intentc.kube.watch import Expired, Watch, WatchEvent, list_objects
from intentc.objectmeta import ObjectRef
from tests.kube_env import KubeEnv

pytestmark = pytest.mark.kube


def namespace(c: KubeClient) -> str:
    name = f"w-{secrets.token_hex(4)}"
    c.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="test")
    return name


def cm(ns: str, name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"v": value}}


def collect(w: Watch, count: int) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    for ev in w:
        if ev.type != "BOOKMARK":
            out.append(ev)
        if len(out) == count:
            w.close()
    return out


def test_events_in_order_and_resume(kube_env: KubeEnv) -> None:
    c = KubeClient.connect(str(kube_env.kubeconfig))
    ns = namespace(c)
    items, rv = list_objects(c, "v1", "ConfigMap", ns)
    assert items == [] and rv
    c.apply(cm(ns, "a", "1"), field_manager="test")
    c.apply(cm(ns, "a", "2"), field_manager="test")
    c.delete(ObjectRef("v1", "ConfigMap", ns, "a"))
    w = Watch(c, "v1", "ConfigMap", rv, namespace=ns, timeout_seconds=30)
    events = collect(w, 3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert events[1].object["data"] == {"v": "2"}
    assert w.resource_version == events[-1].resource_version
    # resuming from the middle replays only what came after
    again = collect(Watch(c, "v1", "ConfigMap", events[0].resource_version, namespace=ns, timeout_seconds=30), 2)
    assert [e.type for e in again] == ["MODIFIED", "DELETED"]


def test_close_unblocks_a_quiet_watch(kube_env: KubeEnv) -> None:
    c = KubeClient.connect(str(kube_env.kubeconfig))
    ns = namespace(c)
    _, rv = list_objects(c, "v1", "ConfigMap", ns)
    w = Watch(c, "v1", "ConfigMap", rv, namespace=ns, timeout_seconds=300)
    done = threading.Event()
    seen: list[WatchEvent] = []

    def run() -> None:
        seen.extend(e for e in w if e.type != "BOOKMARK")
        done.set()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    c.apply(cm(ns, "first", "1"), field_manager="test")
    for _ in range(600):
        if seen:
            break
        done.wait(0.1)
    w.close()
    assert done.wait(60), "a closed watch must end its iteration"
    assert [e.object["metadata"]["name"] for e in seen] == ["first"]


def test_resource_version_from_before_a_restart_is_gone(kube_env: KubeEnv) -> None:
    """A restarted API server rebuilds its watch cache from etcd's current revision,
    so an older resourceVersion answers 410 Gone: the caller must list again."""
    c = KubeClient.connect(str(kube_env.kubeconfig))
    ns = namespace(c)
    _, old = list_objects(c, "v1", "ConfigMap", ns)
    c.apply(cm(ns, "after-list", "1"), field_manager="test")      # etcd moves past `old`
    kube_env.stop_apiserver()
    kube_env.start_apiserver()
    c = KubeClient.connect(str(kube_env.kubeconfig))
    with pytest.raises(Expired):
        collect(Watch(c, "v1", "ConfigMap", old, namespace=ns, timeout_seconds=30), 1)
    items, fresh = list_objects(c, "v1", "ConfigMap", ns)
    assert [i["metadata"]["name"] for i in items] == ["after-list"] and int(fresh) > int(old)
