"""daemon/reload/references.py: an edit of names or references judged from the edit; and
the file table (files.py) splicing files in and out, which such edits need.

Edits that keep every reference resolved and every name unique must not run the
cross-reference passes over the whole program (they are replaced by a recording
stub here); edits that break a reference or declare a name twice must run them and
report exactly what a full compile reports."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intentc.pipeline import compile_paths
from intentc.daemon.reload import Reloader
from intentc.daemon.reload.files import FileTable, _concatenate
from intentc.daemon.reload.state import FileState
from intentc.diagnostics import Span
from intentc.ir import Action, Context, FieldSpans, Intent, Program, Ref, Tenant, Trigger
from intentc.passes import GLOBAL_PASSES
from intentc.pipeline import checked as checked_module
from tests.test_reload_replan import COMMIT, TENANTS, chains, job, make_tree
from tests.test_reload_replan_structure import data_job


def _tree(tmp_path: Path) -> tuple[Reloader, Path, Path]:
    jobs = chains()
    jobs[20] = data_job(20, produces="made")
    jobs[21] = data_job(21, consumes="made")
    jobs[22] = data_job(22, consumes="raw")
    src, topo = make_tree(tmp_path, jobs)
    (src / "tenants.intent").write_text(TENANTS + 'dataset raw { uri: "s3://b/raw" }\n')
    r = Reloader([str(src)], str(topo), COMMIT)
    assert r.load().ok
    return r, src, topo


Edit = Callable[[Path], list[Path]]


def _write(name: str, text: str) -> Edit:
    def edit(src: Path) -> list[Path]:
        (src / name).write_text(text)
        return [src / name]
    return edit


def _delete(name: str) -> Edit:
    def edit(src: Path) -> list[Path]:
        (src / name).unlink()
        return [src / name]
    return edit


def _append(name: str, text: str) -> Edit:
    def edit(src: Path) -> list[Path]:
        (src / name).write_text((src / name).read_text() + text)
        return [src / name]
    return edit


FINE = {
    "after to another intent": _write("job-04.intent", job(4, after=1)),
    "a new intent after a kept one": _write("job-30.intent", job(30, after=11)),
    "a leaf removed": _delete("job-11.intent"),
    "consumes a declared dataset": _write("job-05.intent", data_job(5, consumes="raw", after=4)),
    "a new producer": _write("job-31.intent", data_job(31, produces="more")),
    "a tenant's quota": _write("tenants.intent", TENANTS.replace("gpus 24", "gpus 30")
                               + 'dataset raw { uri: "s3://b/raw" }\n'),
}

BROKEN = {
    "after an unknown intent": _write("job-04.intent", job(4, after=40)),                        # E0303
    "an intent others wait for removed": _delete("job-03.intent"),                               # E0303
    "an intent declared twice": _write("job-32.intent", job(3)),                                 # E0304
    "a block declared twice in one file": _append("job-05.intent", job(33) + job(33)),           # E0304
    "consumes an unknown dataset": _write("job-05.intent", data_job(5, consumes="nope", after=4)),  # E0302
    "a consumed dataset no longer produced": _write("job-20.intent", job(20)),                   # E0302
    "an unknown tenant": _write("job-06.intent", job(6).replace("team-a", "team-z")),           # E0301
    "a tenant in use removed": _write("tenants.intent", "tenant team-a {\n  tier: gold\n}\n"
                                      'dataset raw { uri: "s3://b/raw" }\n'),                    # E0301
    "a declared dataset in use removed": _write("tenants.intent", TENANTS),                      # E0302
}


@pytest.mark.parametrize("what", sorted(FINE))
def test_an_edit_that_keeps_references_resolved_runs_no_global_pass(tmp_path: Path, what: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    r, src, topo = _tree(tmp_path)
    if what == "consumes a declared dataset":
        r.update(FINE[what](src))              # (the next edit is the one looked at)
    ran: list[int] = []

    def recording(program: Program) -> tuple[Program, list]:  # type: ignore[type-arg]
        ran.append(len(program.intents))
        return program, []
    monkeypatch.setattr(checked_module, "GLOBAL_PASSES", (recording,))
    paths = FINE[what](src) if what != "consumes a declared dataset" else _write("job-05.intent", job(5, after=4))(src)
    result = r.update(paths)
    assert result.ok, [str(d) for d in result.diagnostics]
    assert ran == []
    monkeypatch.setattr(checked_module, "GLOBAL_PASSES", GLOBAL_PASSES)
    assert r.settle(120)
    full = compile_paths([str(src)], str(topo), COMMIT)
    assert full.ok and list(r.current.diagnostics) == list(full.diagnostics)       # type: ignore[union-attr]


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_an_edit_that_breaks_a_reference_reports_what_a_full_compile_reports(tmp_path: Path, what: str) -> None:
    r, src, topo = _tree(tmp_path)
    good = r.current
    result = r.update(BROKEN[what](src))
    full = compile_paths([str(src)], str(topo), COMMIT)
    assert result.ok == full.ok
    if full.ok:
        assert r.settle(120)
        assert list(r.current.diagnostics) == list(full.diagnostics)              # type: ignore[union-attr]
        return
    assert r.current is good
    assert list(result.diagnostics) == [d for d in full.diagnostics if d.code != "W0901"]
    assert any(d.code in ("E0301", "E0302", "E0303", "E0304") for d in result.diagnostics)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "b/c", "b0"]),
                                   st.one_of(st.none(), st.lists(st.sampled_from(["t", "u", "v"]), max_size=3)),
                                   st.integers(0, 5).map(lambda k: k == 0)),
                         min_size=1, max_size=4), max_size=6))
def test_the_file_table_splices_added_removed_and_resized_files(batches: list) -> None:  # type: ignore[type-arg]
    """Batches of edits (files added, removed, their declarations added or dropped) patched
    in at once equal the concatenation of every file in name order.  A file's run is found
    by the file name its declarations carry; some files' declarations name another
    spelling of their path (`foreign`), and while one is in the table the program is
    concatenated anew: the result is the same either way."""
    table = FileTable()
    states: dict[str, FileState] = {"c": _tenants(["t"], "c"), "e": _tenants([], "e")}
    for name, first in states.items():
        table.set(name, first)
    assert table.program() == _concatenate(states[n].program for n in sorted(states))
    for batch in batches:
        for name, tenants, foreign in batch:
            state: FileState | None = None if tenants is None else _tenants(tenants, name, foreign)
            table.set(name, state)
            if state is None:
                states.pop(name, None)
            else:
                states[name] = state
        assert table.program() == _concatenate(states[n].program for n in sorted(states))


def test_the_file_table_finds_a_file_by_the_name_its_declarations_carry() -> None:
    """The splice itself: once every file's declarations carry its name, an edit, a file
    added and a file removed are spliced into the program in force (its other entries are
    the same objects), not concatenated anew."""
    table = FileTable()
    for name in ("a", "b", "c"):
        table.set(name, _tenants(["t", "u"], name))
    first = table.program()
    table.set("b", _tenants(["v"], "b"))
    table.set("ab", _tenants(["t"], "ab"))
    table.set("c", None)
    table.set("a", _tenants(["u", "v"], "a./"))        # a path spelled two ways: concatenated
    table.set("a", _tenants(["u", "v"], "a"))          # ... and spliced again once it is gone
    got = table.program()
    assert [t.name for t in got.tenants] == ["au0", "av1", "abt0", "bv0"]
    assert got.intents[2] is table.get("ab").program.intents[0]    # type: ignore[union-attr]
    table.set("ab", None)
    again = table.program()
    assert [t.name for t in again.tenants] == ["au0", "av1", "bv0"]
    assert again.tenants[0] is got.tenants[0] and again.tenants[2] is got.tenants[3]
    assert first.tenants[0].name == "at0"


def _tenants(names: list[str], file: str, foreign: bool = False) -> FileState:
    """A file's state: a tenant per name and an intent for the first two, their spans in
    `file` (or, `foreign`, in another spelling of its path)."""
    spelled = f"./{file}" if foreign else file
    def at(k: int) -> FieldSpans:
        return FieldSpans.at(Span(spelled, k + 1, 1, k + 1, 2))
    program = Program(tenants=tuple(Tenant(f"{file}{n}{k}", spans=at(k)) for k, n in enumerate(names)),
                      intents=tuple(replace(job_intent(f"{file}-{n}{k}"), spans=at(k))
                                    for k, n in enumerate(names[:2])))
    return FileState(program, (), ())


def job_intent(name: str) -> Intent:
    return Intent(name, Trigger("push"), Action("batch", "img"), Context(Ref("t")))
