"""The daemon's Intent mirror (daemon/mirror.py) against a recording stand-in for the
API server: what it applies, prunes and writes, and what it does not send again.
The same code runs against a real API server in tests/test_fallback_kube.py."""

from __future__ import annotations

from typing import Any

import pytest

from intentc.daemon import mirror as mirror_module
from intentc.daemon.mirror import MIRROR_LABEL, IntentMirror
from intentc.daemon.source import Desired
from intentc.frontend.dsl import parse
from intentc.frontend.sources import SourceFile
from intentc.ir import Program
from intentc.kube.errors import NotFound
from intentc.objectmeta import ObjectRef

TEXT = """
tenant team-a { tier: gold }
tenant team-b { tier: gold }
intent train { trigger: on push
  action: training image "t:1"
  context: tenant team-a }
intent web { trigger: on push
  action: serve model "m" image "w:1" replicas 1 port 80
  context: tenant team-b }
"""


def program(text: str = TEXT) -> Program:
    prog, diags = parse(SourceFile("t.intent", text))
    assert not diags, diags
    return prog


class FakeServer:
    def __init__(self, existing: list[dict[str, Any]] = ()) -> None:   # type: ignore[assignment]
        self.objects = {ObjectRef.of(o): o for o in existing}
        self.calls: list[tuple[str, str]] = []
        self.missing: set[str] = set()          # namespaces not there (yet)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        r = mirror_module.reactions
        monkeypatch.setattr(r, "list_mirrors", lambda _c, _v, _k, selector: [
            o for o in self.objects.values() if selector == f"{MIRROR_LABEL}={o['metadata']['labels'][MIRROR_LABEL]}"])
        monkeypatch.setattr(r, "apply_mirror", self.apply)
        monkeypatch.setattr(r, "write_mirror_status", self.status)
        monkeypatch.setattr(r, "delete_mirror", self.delete)

    def apply(self, _client: Any, body: dict[str, Any]) -> dict[str, Any]:
        ref = ObjectRef.of(body)
        self.calls.append(("apply", ref.name))
        if ref.namespace in self.missing:
            raise NotFound(f"namespaces {ref.namespace!r} not found", 404)
        self.objects[ref] = {**body, "status": self.objects.get(ref, {}).get("status", {})}
        return body

    def status(self, _client: Any, ref: ObjectRef, status: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("status", ref.name))
        if ref not in self.objects:
            raise NotFound("gone", 404)
        self.objects[ref]["status"] = status
        return status

    def delete(self, _client: Any, ref: ObjectRef) -> bool:
        self.calls.append(("delete", ref.name))
        return self.objects.pop(ref, None) is not None


def job(name: str, tenant: str, intent: str, complete: bool) -> dict[str, Any]:
    status = {"conditions": [{"type": "Complete", "status": "True"}]} if complete else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "status": status,
            "metadata": {"name": name, "namespace": tenant, "labels": {"intentc.dev/intent": intent},
                         "uid": f"uid-{name}", "resourceVersion": "2" if complete else "1"}}


def live(*objs: dict[str, Any]) -> dict[ObjectRef, dict[str, Any]]:
    return {ObjectRef.of(o): o for o in objs}


def test_applies_once_per_commit_and_writes_a_status_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer()
    server.install(monkeypatch)
    m = IntentMirror(None, "prod", now=lambda: "2026-01-01T00:00:00Z")     # type: ignore[arg-type]
    desired = Desired.of("a" * 40, (), program(), "git")
    m.sync(desired, live(job("train", "team-a", "train", False)))
    assert sorted(server.calls) == [("apply", "train"), ("apply", "web"), ("status", "train"), ("status", "web")]
    train = server.objects[ObjectRef("intentc.dev/v1alpha1", "Intent", "team-a", "train")]
    assert train["metadata"]["labels"][MIRROR_LABEL] == "prod"
    assert train["status"] == {"phase": "Running", "placement": "-", "commit": "a" * 40}
    server.calls.clear()
    m.sync(desired, live(job("train", "team-a", "train", False)))
    assert server.calls == []                                  # nothing changed: nothing sent
    m.healed({"metadata": {"namespace": "team-a", "labels": {"intentc.dev/intent": "train"}}})
    m.sync(desired, live(job("train", "team-a", "train", True)))
    assert server.calls == [("status", "train")]
    assert train["status"] == {"phase": "Succeeded", "placement": "-", "commit": "a" * 40,
                               "lastHeal": "2026-01-01T00:00:00Z"}


def test_prunes_its_own_intents_only_and_keeps_held_tenants(monkeypatch: pytest.MonkeyPatch) -> None:
    def mirrored(name: str, tenant: str, target: str) -> dict[str, Any]:
        return {"apiVersion": "intentc.dev/v1alpha1", "kind": "Intent",
                "metadata": {"name": name, "namespace": tenant, "labels": {MIRROR_LABEL: target}},
                "status": {"lastHeal": "2025-12-31T00:00:00Z"} if name == "train" else {}}
    server = FakeServer([mirrored("train", "team-a", "prod"), mirrored("old", "team-a", "prod"),
                         mirrored("held", "team-b", "prod"), mirrored("theirs", "team-a", "staging")])
    server.install(monkeypatch)
    m = IntentMirror(None, "prod", now=lambda: "2026-01-01T00:00:00Z")     # type: ignore[arg-type]
    only_train = program(TEXT.split("intent web")[0])
    m.sync(Desired.of("b" * 40, (), only_train, "git", held=("team-b",)), {})
    assert ("delete", "old") in server.calls
    assert not {("delete", "held"), ("delete", "theirs"), ("delete", "train")} & set(server.calls)
    # the time of the last heal survives a restart: read back from the object
    train = server.objects[ObjectRef("intentc.dev/v1alpha1", "Intent", "team-a", "train")]
    assert train["status"]["lastHeal"] == "2025-12-31T00:00:00Z"


def test_an_intent_object_deleted_by_someone_is_applied_again(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer()
    server.install(monkeypatch)
    m = IntentMirror(None, "prod")     # type: ignore[arg-type]
    desired = Desired.of("a" * 40, (), program(), "git")
    m.sync(desired, {})
    ref = ObjectRef("intentc.dev/v1alpha1", "Intent", "team-a", "train")
    del server.objects[ref]
    m.sync(desired, live(job("train", "team-a", "train", True)))      # the status write finds it gone
    m.sync(desired, live(job("train", "team-a", "train", True)))
    assert server.objects[ref]["status"]["phase"] == "Succeeded"


def test_only_the_intents_that_could_not_be_applied_are_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeServer()
    server.missing = {"team-b"}
    server.install(monkeypatch)
    m = IntentMirror(None, "prod")     # type: ignore[arg-type]
    desired = Desired.of("a" * 40, (), program(), "git")
    m.sync(desired, {})
    assert sorted(c for c in server.calls if c[0] == "apply") == [("apply", "train"), ("apply", "web")]
    server.calls.clear()
    m.sync(desired, {})
    assert server.calls == [("apply", "web")]
    server.missing.clear()
    server.calls.clear()
    m.sync(desired, {})
    assert server.calls == [("apply", "web"), ("status", "web")]
    server.calls.clear()
    m.sync(desired, {})
    assert server.calls == []
