"""Hot reload: only changed files re-parsed, only affected intents re-rendered,
a broken edit keeps the last good plan, and the result always equals a full compile."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from intentc.daemon.reload import Reloader, write_changed
from intentc.frontend.sources import OUTPUT_MARKER
from intentc.pipeline import compile_paths

REPO = Path(__file__).resolve().parents[1]
COMMIT = "c" * 40


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "intents", tmp_path / "intents")
    shutil.copytree(REPO / "examples" / "topologies", tmp_path / "topologies")
    return tmp_path


def reloader(tree: Path) -> Reloader:
    return Reloader([str(tree / "intents")], str(tree / "topologies" / "cluster.yaml"), COMMIT)


def full_compile(tree: Path) -> dict[str, str]:
    result = compile_paths([str(tree / "intents")], str(tree / "topologies" / "cluster.yaml"), COMMIT)
    assert result.ok, result.diagnostics
    return result.files()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_initial_load_equals_a_full_compile(tree: Path) -> None:
    r = reloader(tree)
    result = r.load()
    assert result.ok and result.snapshot is not None
    assert result.snapshot.files() == full_compile(tree)
    assert len(result.reparsed) == len(list((tree / "intents").rglob("*.*")))


def test_image_edit_reparses_one_file_and_rerenders_one_intent(tree: Path) -> None:
    r = reloader(tree)
    first = r.load().snapshot
    assert first is not None
    target = tree / "intents" / "nlp" / "inference.intent"
    edit(target, 'image "ghcr.io/acme/faiss-builder:2.1"', 'image "ghcr.io/acme/faiss-builder:2.2"')
    result = r.update([target])
    assert result.ok
    assert result.reparsed == (str(target),)
    assert result.rerendered == ("build-rag-index",)
    assert not result.replanned
    assert result.snapshot is not None and result.snapshot.generation == first.generation + 1
    assert result.snapshot.plan is first.plan
    assert result.snapshot.files() == full_compile(tree)
    changed = {k for k, v in result.snapshot.files().items() if first.files().get(k) != v}
    assert changed and all("build-rag-index" in k for k in changed)


def test_gpu_edit_replans_and_still_equals_a_full_compile(tree: Path) -> None:
    r = reloader(tree)
    r.load()
    target = tree / "intents" / "nlp" / "inference.intent"
    edit(target, 'gpus 2 x "H100-80GB" within node', 'gpus 4 x "H100-80GB" within node')
    result = r.update([target])
    assert result.ok and result.replanned
    assert "eval-chat" in result.rerendered
    assert result.snapshot is not None and result.snapshot.files() == full_compile(tree)


def test_dataset_and_tenant_edits_rerender_what_depends_on_them(tree: Path) -> None:
    r = reloader(tree)
    r.load()
    data = tree / "intents" / "datasets" / "datasets.intent"
    edit(data, "s3://acme-ml/corpus/raw/2026-11", "s3://acme-ml/corpus/raw/2026-12")
    result = r.update([data])
    assert result.ok and not result.replanned
    consumers = {i.name for i in result.snapshot.program.intents if any(c.name == "corpus-raw" for c in i.consumes)}
    assert consumers and set(result.rerendered) == consumers
    assert result.snapshot.files() == full_compile(tree)
    tenants = tree / "intents" / "tenants" / "tenants.intent"
    edit(tenants, '"nlp-engineers"', '"nlp-team"')
    result = r.update([tenants])
    assert result.ok and result.rerendered == ()
    assert result.snapshot is not None and result.snapshot.files() == full_compile(tree)


def test_broken_edit_keeps_the_last_good_plan(tree: Path) -> None:
    r = reloader(tree)
    good = r.load().snapshot
    target = tree / "intents" / "nlp" / "inference.intent"
    edit(target, "seq_len: 4096", "seq_len: 99999")
    result = r.update([target])
    assert not result.ok
    assert [d.code for d in result.diagnostics if d.is_error] == ["E0403"]
    assert result.diagnostics[0].span.file == str(target)
    assert r.current is good and result.snapshot is good
    # a syntax error too
    edit(target, "intent embed-corpus {", "intent embed-corpus {{")
    assert not r.update([target]).ok and r.current is good
    # fixing it brings a new snapshot equal to a full compile
    edit(target, "intent embed-corpus {{", "intent embed-corpus {")
    edit(target, "seq_len: 99999", "seq_len: 2048")
    fixed = r.update([target])
    assert fixed.ok and fixed.snapshot is not None and fixed.snapshot is not good
    assert fixed.snapshot.files() == full_compile(tree)


def test_a_change_that_breaks_another_file_is_caught(tree: Path) -> None:
    """Deleting the tenants file breaks every intent elsewhere: cross-file passes are global."""
    r = reloader(tree)
    good = r.load().snapshot
    gone = tree / "intents" / "tenants" / "tenants.intent"
    gone.unlink()
    result = r.update([gone])
    assert not result.ok and r.current is good
    assert any(d.code == "E0301" and "nlp" in d.span.file for d in result.diagnostics)


def test_unchanged_bytes_and_foreign_files_are_ignored(tree: Path) -> None:
    r = reloader(tree)
    r.load()
    target = tree / "intents" / "nlp" / "inference.intent"
    target.write_text(target.read_text())
    (tree / "intents" / "notes.txt").write_text("not an input")
    (tree / "intents" / ".hidden").mkdir()
    (tree / "intents" / ".hidden" / "x.intent").write_text("garbage {")
    result = r.update([target, tree / "intents" / "notes.txt", tree / "intents" / ".hidden" / "x.intent"])
    assert result.ok and result.reparsed == () and result.rerendered == ()
    # what check leaves out, watch does too (no .git here: the root is the directory given)
    (tree / "intents" / ".intentcignore").write_text("drafts/\n")
    (tree / "intents" / "drafts").mkdir()
    (tree / "intents" / "drafts" / "wip.intent").write_text("garbage {")
    out = tree / "intents" / "out"
    (out / "manifests").mkdir(parents=True)
    (out / OUTPUT_MARKER).write_text("")
    (out / "manifests" / "00-x.yaml").write_text("kind: Namespace\n")
    result = r.update([tree / "intents" / "drafts" / "wip.intent", out / "manifests" / "00-x.yaml"])
    assert result.ok and result.reparsed == ()


def test_new_file_is_picked_up(tree: Path) -> None:
    r = reloader(tree)
    r.load()
    new = tree / "intents" / "nlp" / "extra.intent"
    new.write_text('intent extra-job {\n  trigger: on push\n  action: batch image "busybox:1" command ["true"]\n'
                   '  context: tenant team-nlp\n  constraints: cpu 1, memory 1Gi\n}\n')
    result = r.update([new])
    assert result.ok and result.rerendered == ("extra-job",)
    assert result.snapshot is not None and result.snapshot.files() == full_compile(tree)


def test_topology_change_replans(tree: Path) -> None:
    r = reloader(tree)
    r.load()
    topo = tree / "topologies" / "cluster.yaml"
    topo.write_text(topo.read_text() + "\n")
    result = r.update([topo])
    assert result.ok and result.replanned and result.reparsed == ()


def test_outputs_are_written_only_when_changed(tree: Path) -> None:
    out = tree / "out"
    r = reloader(tree)
    snap = r.load().snapshot
    assert snap is not None
    written, removed = write_changed(snap, out)
    assert len(written) == len(snap.files()) and removed == []
    target = tree / "intents" / "nlp" / "inference.intent"
    edit(target, 'image "ghcr.io/acme/faiss-builder:2.1"', 'image "ghcr.io/acme/faiss-builder:2.2"')
    snap2 = r.update([target]).snapshot
    assert snap2 is not None
    written, removed = write_changed(snap2, out, snap.files())
    assert written and all("build-rag-index" in w for w in written) and removed == []
    assert not list(out.rglob(".*.tmp"))
    on_disk = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*")
               if p.is_file() and p.name != OUTPUT_MARKER}
    assert on_disk == full_compile(tree)
    assert "manifests/Kustomization" in on_disk
    assert write_changed(snap2, out) == ([], [])     # a restarted watch reads what is there, Kustomization too
    assert (out / OUTPUT_MARKER).is_file()     # the next discovery does not read out/manifests


def test_readers_always_see_a_whole_snapshot(tree: Path) -> None:
    """The swap is one assignment: a concurrent reader sees the old or the new plan, never a mix
    (the program and the manifests a reader gets always belong together)."""
    r = reloader(tree)
    r.load()
    target = tree / "intents" / "nlp" / "inference.intent"
    mixed: list[tuple[str | None, set[str]]] = []
    samples = 0
    stop = threading.Event()

    def read() -> None:
        nonlocal samples
        while not stop.is_set():
            s = r.current
            if s is None:
                continue
            intent = s.program.intent("build-rag-index")
            want = intent.action.image if intent else None
            images = {c["image"] for m in s.rendered.manifests if m.intent == "build-rag-index"
                      for c in m.body["spec"]["template"]["spec"]["containers"]}
            samples += 1
            if images != {want}:
                mixed.append((want, images))

    t = threading.Thread(target=read)
    t.start()
    try:
        for old, new in (("2.1", "2.2"), ("2.2", "2.3"), ("2.3", "2.4")):
            edit(target, f"faiss-builder:{old}", f"faiss-builder:{new}")
            assert r.update([target]).ok
    finally:
        stop.set()
        t.join()
    assert samples and not mixed


def test_follow_reacts_to_a_saved_file(tree: Path) -> None:
    """The real OS watcher (watchfiles) drives the reloader; waits are event-based."""
    from intentc.daemon.reload import follow

    r = reloader(tree)
    r.load()
    results: list = []
    got = threading.Event()
    stop = threading.Event()

    def on_result(result, _seconds) -> None:  # type: ignore[no-untyped-def]
        results.append(result)
        got.set()

    t = threading.Thread(target=follow, args=(r, on_result, stop), kwargs={"debounce_ms": 20})
    t.start()
    try:
        target = tree / "intents" / "nlp" / "inference.intent"
        for n in range(1, 200):       # the watcher needs a moment to arm: save again until it reports
            edit(target, f"faiss-builder:2.{n}\"", f"faiss-builder:2.{n + 1}\"")
            if got.wait(0.5):
                break
        assert got.is_set()
    finally:
        stop.set()
        t.join()
    assert results[0].ok and results[0].reparsed == (str(target),)
    assert results[0].rerendered == ("build-rag-index",)


def test_watch_command_end_to_end(tree: Path) -> None:
    """`intentc watch --out --format json` in a subprocess: one JSON line per reload,
    a broken save keeps the files, SIGTERM exits 0."""
    import json
    import queue
    import signal
    import subprocess
    import sys

    out = tree / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "watch", str(tree / "intents"), "-t", str(tree / "topologies" / "cluster.yaml"),
         "--out-dir", str(out), "-o", "json", "--commit", COMMIT],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True)
    reader.start()
    target = tree / "intents" / "nlp" / "inference.intent"
    try:
        first = json.loads(lines.get(timeout=120))
        assert first["ok"] and first["generation"] == 1 and len(first["written"]) == len(full_compile(tree))
        for n in range(1, 200):          # the OS watcher arms asynchronously: save until it reports
            edit(target, f"faiss-builder:2.{n}\"", f"faiss-builder:2.{n + 1}\"")
            try:
                second = json.loads(lines.get(timeout=1))
                break
            except queue.Empty:
                continue
        assert second["ok"] and second["rerendered"] == ["build-rag-index"] and not second["replanned"]
        assert second["reparsed"] == [str(target)]
        assert all("build-rag-index" in w for w in second["written"]) and second["written"]
        before = {p: p.read_text() for p in out.rglob("*") if p.is_file()}
        edit(target, "seq_len: 4096", "seq_len: 0")
        while True:
            third = json.loads(lines.get(timeout=60))
            if not third["ok"]:
                break
        assert [d["code"] for d in third["diagnostics"]] == ["E0403"] and third["written"] == []
        assert {p: p.read_text() for p in out.rglob("*") if p.is_file()} == before
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, proc.stderr.read() if proc.stderr else ""


def test_repository_tag_rules_apply_to_the_daemon_as_to_compile(tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / "policies").mkdir()
    (tree / "policies" / "online.yaml").write_text(
        "apiVersion: intentc.dev/v1alpha1\nkind: Policy\nmetadata: {name: online}\n"
        "spec: {tag: online, requires: [disruption-budget]}\n")
    result = reloader(tree).load()
    assert result.ok and result.snapshot is not None
    files = result.snapshot.files()
    assert files == full_compile(tree)
    assert any("poddisruptionbudget" in name and "serve-chat" in name for name in files)
