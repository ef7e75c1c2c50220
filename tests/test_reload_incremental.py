"""Incremental reload keeps its whole-program structures (program, report, apply
order, choices) patched rather than rebuilt; after any sequence of edits they must
equal a full compile of the same tree, byte for byte and diagnostic for diagnostic."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from intentc.pipeline import compile_paths
from intentc.daemon.reload import Reloader
from intentc.daemon.reload.files import FileTable, _concatenate
from intentc.daemon.reload.state import FileState
from intentc.ir import Program

REPO = Path(__file__).resolve().parents[1]
COMMIT = "e" * 40
TENANTS = "tenant team-a {\n  tier: gold\n}\ntenant team-b {\n  tier: silver\n}\n"


def job(i: int, image: str = "busybox:1", gpus: bool = False, duration: bool = True) -> str:
    gpu = ', gpus 1 x "H100-80GB" within node' if gpus else ""
    after = f"  trigger: after job-{i - 1:03d}\n" if i % 3 and i < 100 else "  trigger: on push\n"
    dur = ", duration 30m" if duration else ""
    return (f"intent job-{i:03d} {{\n{after}  action: batch image \"{image}\" command [\"true\"]\n"
            f"  context: tenant team-{'ab'[i % 2]}\n  constraints: cpu 1, memory 1Gi{gpu}{dur}\n}}\n")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "tenants.intent").write_text(TENANTS)
    for i in range(24):
        # every 4th asks for a GPU without a duration: a planner warning in its file
        (src / f"job-{i:03d}.intent").write_text(job(i, gpus=i % 4 == 0, duration=i % 4 != 0))
    shutil.copytree(REPO / "examples" / "topologies", tmp_path / "topologies")
    return tmp_path


def check_equal(r: Reloader, tree: Path) -> None:
    full = compile_paths([str(tree / "src")], str(tree / "topologies" / "cluster.yaml"), COMMIT)
    snap = r.current
    assert full.ok and snap is not None
    assert snap.files() == full.files()
    assert list(snap.diagnostics) == list(full.diagnostics)
    assert snap.program == full.program
    assert snap.rendered == full.rendered


def test_edits_of_every_shape_equal_a_full_compile(tree: Path) -> None:
    src = tree / "src"
    r = Reloader([str(src)], str(tree / "topologies" / "cluster.yaml"), COMMIT)
    first = r.load()
    assert first.ok and any(d.code == "W0602" for d in first.diagnostics)
    check_equal(r, tree)
    steps = [
        src / "job-004.intent",       # image edit in a file with a warning
        src / "job-005.intent",       # image edit, quiet file
        src / "job-006.intent",       # a GPU request goes, with its file's warning
        src / "job-007.intent",       # a warning appears (GPU, no duration)
        src / "job-100.intent",       # a new file
        src / "job-009.intent",       # a second intent in one file
        src / "job-002.intent",       # a file removed
        src / "tenants.intent",       # a tenant's group: setup objects only
    ]
    writes = [
        lambda: (src / "job-004.intent").write_text(job(4, "busybox:2", gpus=True, duration=False)),
        lambda: (src / "job-005.intent").write_text(job(5, "busybox:3")),
        lambda: (src / "job-006.intent").write_text(job(6, "busybox:1", gpus=False, duration=True)),
        lambda: (src / "job-007.intent").write_text(job(7, gpus=True, duration=False)),
        lambda: (src / "job-100.intent").write_text(job(100)),
        lambda: (src / "job-009.intent").write_text(job(9) + job(200)),
        lambda: (src / "job-002.intent").unlink(),
        lambda: (src / "tenants.intent").write_text(TENANTS.replace("tier: gold", 'tier: gold\n  group: "ops"')),
    ]
    for path, write in zip(steps, writes, strict=True):
        write()
        result = r.update([path])
        assert result.ok, [str(d) for d in result.diagnostics]
        check_equal(r, tree)
        if path.name == "job-004.intent":
            # its planner warning points at positions the image edit did not move: plan kept
            assert not result.replanned and result.rerendered == ("job-004",)
    # the same file with every line moved down: the kept warning would point at the
    # wrong line, so the plan is made again
    warned = src / "job-008.intent"
    warned.write_text("# a comment moves everything down\n" + warned.read_text())
    moved = r.update([warned])
    assert moved.ok and moved.replanned
    check_equal(r, tree)
    # image edits keep the plan and re-render one intent
    (src / "job-010.intent").write_text(job(10, "busybox:9"))
    kept = r.update([src / "job-010.intent"])
    assert kept.ok and not kept.replanned and kept.rerendered == ("job-010",)
    check_equal(r, tree)


def test_a_broken_edit_then_a_fix_equals_a_full_compile(tree: Path) -> None:
    src = tree / "src"
    r = Reloader([str(src)], str(tree / "topologies" / "cluster.yaml"), COMMIT)
    good = r.load().snapshot
    (src / "job-003.intent").write_text("intent job-003 {{\n")
    bad = r.update([src / "job-003.intent"])
    assert not bad.ok and r.current is good
    assert bad.sources[str(src / "job-003.intent")].startswith("intent job-003")
    (src / "job-003.intent").write_text(job(3, "busybox:7"))
    fixed = r.update([src / "job-003.intent"])
    assert fixed.ok and not fixed.replanned and fixed.rerendered == ("job-003",)
    check_equal(r, tree)


def _state(*names: str) -> FileState:
    from intentc.ir import Tenant, Tier
    return FileState(Program(tenants=tuple(Tenant(n, Tier.GOLD) for n in names)), (), ())


def test_file_table_patches_and_rebuilds_like_a_concatenation() -> None:
    table = FileTable()
    states = {"a": _state("t1"), "b": _state("t2", "t3"), "c": _state()}
    for name, state in states.items():
        table.set(name, state)
    assert table.program() == _concatenate(states[n].program for n in sorted(states))
    table.settle()
    for name, state in [("b", _state("t4", "t5")), ("a", _state("t6")), ("b", _state("t7")), ("d", _state("t8")),
                        ("a", None)]:
        table.set(name, state)
        if state is None:
            states.pop(name)
        else:
            states[name] = state
        assert table.program() == _concatenate(states[n].program for n in sorted(states))
    assert [n for n, _, _ in table.changes()] == ["a", "b", "d"]
    table.settle()
    assert table.changes() == []


def test_a_cross_file_finding_shows_the_text_of_a_file_that_did_not_change(tree: Path) -> None:
    """Texts are kept only for files that report something themselves; the others
    a finding points into are read when the report is shown."""
    src = tree / "src"
    r = Reloader([str(src)], str(tree / "topologies" / "cluster.yaml"), COMMIT)
    assert r.load().ok
    (src / "tenants.intent").unlink()
    result = r.update([src / "tenants.intent"])
    assert not result.ok
    unknown = [d for d in result.diagnostics if d.code == "E0301"]
    assert unknown and all(d.span.file in result.sources for d in unknown)
    first = unknown[0].span.file
    assert result.sources[first] == Path(first).read_text()
    assert str(src / "job-001.intent") in set(result.sources)
    other = src / "job-001.intent"
    assert result.sources[str(other)] == other.read_text()
    # a file that changes is read again for the next report, not served from before
    other.write_text("# edited\n" + other.read_text())
    again = r.update([other])
    assert not again.ok and again.sources[str(other)].startswith("# edited")
    with pytest.raises(KeyError):
        result.sources[str(src / "nowhere.intent")]
