"""What keeps the daemon's memory small and flat (docs/reload.md, "Memory").

Packed bodies must give back exactly what was packed (every output is made
from them); the Reloader keeps its renders packed; a git compile must leave
nothing frozen and no `git cat-file` process behind (the soak's growth).
"""

from __future__ import annotations

import enum
import gc
import os
import pickle
import shutil
import threading
from pathlib import Path

import git
import pytest

from intentc.pipeline import compile_paths
from intentc.daemon.reload import Reloader
from intentc.daemon.source import GitSource
from intentc.drift.rollback import RepoSource, compile_revision
from intentc.drift.detect import detect
from intentc.render.capabilities import KubeVersion
from intentc.render.model import COMMIT_ANNOTATION, Manifest
from intentc.objectmeta import ObjectRef
from intentc.render.output import to_yaml
from intentc.render.packed import BodyCodec, PackedBody, PackedText

FIXTURE = Path(__file__).parent / "fixtures" / "repo"
SHA = "c" * 40


class Colour(str, enum.Enum):
    RED = "red"


BODY = {"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "t", "labels": {"a": "b"}},
        "spec": {"values": (0, 74, 75), "ratio": 0.95, "big": 2**40, "none": None, "flag": True,
                 "colour": Colour.RED, "list": [{"x": 1}, {"y": [1.5, "z"]}]}}


def test_packed_body_gives_back_exactly_what_was_packed() -> None:
    codec = BodyCodec()
    first = codec.pack({"kind": "Namespace", "metadata": {"name": "a"}})      # primes the dictionary
    packed = codec.pack(BODY)
    out = packed.unpack()
    assert out == BODY and out is not BODY and packed.unpack() is not out       # a fresh dict each time
    assert type(out["spec"]["values"]) is tuple and type(out["spec"]["colour"]) is Colour
    assert type(out["spec"]["big"]) is int and type(out["spec"]["ratio"]) is float
    plain = {**BODY, "spec": {k: v for k, v in BODY["spec"].items() if k != "colour"}}
    assert to_yaml(codec.pack(plain).unpack()) == to_yaml(plain)
    assert packed == BODY and BODY == packed and packed != first
    assert first.unpack() == {"kind": "Namespace", "metadata": {"name": "a"}}


def job(i: int) -> dict[str, object]:
    """One of many Jobs alike, as render makes them."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i}", "namespace": "team-a",
                         "annotations": {f"intentc.dev/key-{k}": f"value-{k}" for k in range(20)}},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": f"img:{i}"}]}}}}


def test_bodies_alike_pack_small() -> None:
    codec = BodyCodec()
    codec.pack(job(0))
    assert len(codec.pack(job(1))) * 4 < len(pickle.dumps(job(1), pickle.HIGHEST_PROTOCOL))


def test_each_kind_is_packed_with_a_dictionary_of_its_own_kind() -> None:
    """render packs a CustomResourceDefinition and Namespaces before the Jobs: a Job
    must not be compressed against them (720 bytes instead of ~150 at 100,000 intents)."""
    alone = BodyCodec()
    alone.pack(job(0))
    after_others = BodyCodec()
    namespace = after_others.pack({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    after_others.pack(job(0))
    packed = after_others.pack(job(1))
    assert len(packed) == len(alone.pack(job(1)))
    assert packed.unpack() == job(1) and namespace.unpack()["kind"] == "Namespace"


def stamped(i: int, commit: str) -> dict[str, object]:
    body = job(i)
    meta = body["metadata"]
    assert isinstance(meta, dict)
    meta["annotations"] = {**meta["annotations"], COMMIT_ANNOTATION: commit, "intentc.dev/spec-hash": "h"}
    return body


def test_the_commit_stamp_is_kept_aside_and_put_back_in_its_place() -> None:
    codec = BodyCodec()
    first, second = codec.pack(stamped(1, "a" * 40), COMMIT_ANNOTATION), codec.pack(stamped(1, "b" * 40),
                                                                                       COMMIT_ANNOTATION)
    assert first._data == second._data                  # the same bytes at two commits
    assert first != second and first == stamped(1, "a" * 40) and second == stamped(1, "b" * 40)
    out = second.unpack()
    assert list(out["metadata"]["annotations"]) == list(stamped(1, "b" * 40)["metadata"]["annotations"])
    assert to_yaml(out) == to_yaml(stamped(1, "b" * 40))
    # nothing to keep aside: packed as it is
    assert codec.pack(job(2), COMMIT_ANNOTATION).unpack() == job(2)
    assert codec.pack({"kind": "Job", "metadata": None}, COMMIT_ANNOTATION).unpack() == {"kind": "Job",
                                                                                        "metadata": None}


def test_the_commit_stamp_is_read_without_unpacking(monkeypatch: pytest.MonkeyPatch) -> None:
    body = stamped(1, "c" * 40)
    packed = Manifest(ObjectRef.of(body), 4, body, "h").packed(BodyCodec())
    plain = Manifest(ObjectRef.of(job(2)), 4, job(2), "h").packed(BodyCodec())
    monkeypatch.setattr(PackedBody, "unpack", lambda self: pytest.fail("unpacked"))
    assert packed.commit == "c" * 40
    monkeypatch.undo()
    assert plain.commit == "" and isinstance(plain.content, PackedBody)      # nothing aside: read from the body
    assert plain.content.annotation("intentc.dev/spec-hash") is None
    assert packed.content.annotation("intentc.dev/spec-hash") == "h"
    assert Manifest(ObjectRef.of(body), 4, body, "h").commit == "c" * 40


def test_a_body_packed_alike_to_the_one_in_force_shares_its_bytes() -> None:
    last = BodyCodec()
    before = {i: last.pack(stamped(i, "a" * 40), COMMIT_ANNOTATION) for i in range(3)}
    codec = BodyCodec(like=before.get)
    after = [codec.pack(stamped(i, "b" * 40) if i != 1 else {**stamped(i, "b" * 40), "spec": {}},
                        COMMIT_ANNOTATION, key=i) for i in range(3)]
    assert after[0]._data is before[0]._data and after[2]._data is before[2]._data
    assert after[0]._zdict is before[0]._zdict                  # the kind's dictionary is the one in force
    assert after[1]._data is not before[1]._data and after[1].unpack()["spec"] == {}
    assert after[0].unpack() == stamped(0, "b" * 40) and after[2].unpack() == stamped(2, "b" * 40)
    # a key with nothing in force packs as usual
    assert codec.pack(stamped(7, "b" * 40), COMMIT_ANNOTATION, key=7).unpack() == stamped(7, "b" * 40)


def test_a_packed_manifest_equals_the_unpacked_one() -> None:
    m = Manifest(ObjectRef.of(BODY), 4, BODY, "h", "j", "t")
    p = m.packed(BodyCodec())
    assert isinstance(p.content, PackedBody) and p.packed(BodyCodec()) is p
    assert p == m and p.body == m.body and p.sort_key == m.sort_key
    assert m.with_body({"kind": "X"}).body == {"kind": "X"}


def test_packed_text_is_made_once_when_first_read() -> None:
    calls = []

    def make() -> str:
        calls.append(1)
        return "plan\n" * 1000

    text = PackedText(make=make)
    assert not calls
    seen: list[str] = []
    threads = [threading.Thread(target=lambda: seen.append(str(text))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["plan\n" * 1000] * 4 and calls == [1]
    assert str(PackedText("x" * 100)) == "x" * 100 and PackedText("a") == PackedText(make=lambda: "a")
    with pytest.raises(ValueError):
        PackedText()


def test_the_reloader_keeps_every_intent_packed_and_renders_what_compile_renders() -> None:
    paths, topology = [str(FIXTURE / "intents")], str(FIXTURE / "clusters" / "small.yaml")
    loaded = Reloader(paths, topology, SHA).load()
    snap = loaded.snapshot
    assert loaded.ok and snap is not None and snap.intents
    assert all(isinstance(m.content, PackedBody) for r in snap.intents.values() for m in r.manifests)
    full = compile_paths(paths, topology, SHA)
    assert full.rendered is not None
    assert snap.rendered.manifests == full.rendered.manifests          # packed == unpacked, object by object
    assert snap.files() == full.files()
    assert gc.get_freeze_count() > 0                                   # the load's objects out of the collector's way


def test_detect_reads_the_desired_bodies_as_they_come() -> None:
    live = [{**BODY, "metadata": {**BODY["metadata"], "annotations": {"intentc.dev/spec-hash": "x"}}}]
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "t"}}
    as_list = detect([BODY, other], live)
    assert detect(iter([BODY, other]), live) == as_list
    assert detect((b for b in (BODY, other, BODY)), live) == as_list    # an object given twice is judged once


def _cat_files() -> set[int]:
    """This process's `git cat-file` children."""
    out = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == os.getpid() and b"cat-file" in cmd:
            out.add(int(entry.name))
    return out


def upstream(tmp_path: Path) -> Path:
    """The fixture repository, committed once on `main`."""
    root = tmp_path / "upstream"
    shutil.copytree(FIXTURE, root)
    with git.Repo.init(root, initial_branch="main") as repo:
        with repo.config_writer() as cw:
            cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
        repo.git.add(A=True)
        repo.index.commit("first")
    return root


def test_a_git_compile_leaves_nothing_frozen_and_no_git_process(tmp_path: Path) -> None:
    root = upstream(tmp_path)
    before = _cat_files()
    src = GitSource(str(root), "main", ("intents",), "clusters/small.yaml", tmp_path / "work", "device-plugin", 0)
    tracked = []
    for _ in range(4):
        compiled = src.compile(src.poll(), KubeVersion(1, 37))
        assert compiled.ok
        # what the compile froze (the parse's long-lived objects, and any cyclic garbage
        # pending then) is handed back: frozen, garbage would be kept for good
        assert gc.get_freeze_count() == 0
        tracked.append(len(gc.get_objects()))
    # ... and collected: unfrozen, it would wait for a full collection that unfrozen
    # objects never bring on (each compile of this small repository left ~470 more behind)
    assert tracked[3] - tracked[1] < 200, tracked
    assert _cat_files() <= before            # every repository gitrepo opened was closed


def test_a_git_commit_shares_the_packed_bytes_of_the_objects_it_does_not_change(tmp_path: Path) -> None:
    root = upstream(tmp_path)
    src = GitSource(str(root), "main", ("intents",), "clusters/small.yaml", tmp_path / "work", "device-plugin", 0)
    old = src.compile(src.poll(), KubeVersion(1, 37))
    assert old.rendered is not None
    in_force = {m.ref: m for m in old.rendered.manifests}
    with git.Repo(root) as repo:
        pipeline = root / "intents" / "pipeline.intent"
        pipeline.write_text(pipeline.read_text().replace("ghcr.io/acme/cleanup:1.0", "ghcr.io/acme/cleanup:1.1"))
        repo.git.add(A=True)
        repo.index.commit("second")
    new = src.compile(src.poll(), KubeVersion(1, 37), objects=in_force)
    assert old.ok and new.ok and new.rendered and old.rendered.commit != new.rendered.commit
    shared = [m for m in new.rendered.manifests if m.content._data is in_force[m.ref].content._data]
    # every object is stamped with the new commit, and reads as a fresh render of it does
    plain = compile_revision(RepoSource(str(root), ("intents",), "clusters/small.yaml"), new.rendered.commit,
                             tmp_path / "plain")
    assert plain.rendered is not None
    assert [to_yaml(m.body) for m in new.rendered.manifests] == [to_yaml(m.body) for m in plain.rendered.manifests]
    assert all(m.commit == new.rendered.commit for m in new.rendered.manifests)
    changed = {m.ref.name for m in new.rendered.manifests if all(m is not k for k in shared)}
    assert len(changed) == 1 and "cleanup" in changed.pop(), changed
