"""The compile driver (intentc/pipeline): its stages in order, one check per run, and a run
continued stage by stage giving what one call gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import intentc.pipeline.checked
from intentc.cli import app
from intentc.frontend import Loaded
from intentc.pipeline import STAGES, Checked, Driver, Request, Stage, compile_paths

FIXTURE = Path(__file__).parent / "fixtures" / "repo"
SHA = "0123456789abcdef0123456789abcdef01234567"


def test_the_stages_are_in_pipeline_order() -> None:
    assert [s.stage for s in STAGES] == [Stage.LOAD, Stage.CHECK, Stage.GRAPH, Stage.PLAN, Stage.RENDER,
                                         Stage.WRITE]


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = intentc.pipeline.checked.check_loaded

    def counting(loaded: Loaded) -> Checked:
        calls.append(1)
        return real(loaded)
    monkeypatch.setattr(intentc.pipeline.checked, "check_loaded", counting)
    return calls


def test_finding_the_topology_file_and_compiling_is_one_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FIXTURE / "intents", tmp_path / "intents")
    shutil.copy(FIXTURE / "clusters" / "small.yaml", tmp_path / "cluster.yaml")
    monkeypatch.chdir(tmp_path)
    calls = _count_checks(monkeypatch)
    res = CliRunner().invoke(app, ["compile", ".", "-d", "build", "--commit", SHA])
    assert res.exit_code == 0, res.output
    assert calls == [1]


def test_a_run_continued_stage_by_stage_is_one_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths, topology = [str(FIXTURE / "intents")], str(FIXTURE / "clusters" / "small.yaml")
    calls = _count_checks(monkeypatch)
    driver = Driver(paths)
    request = Request(topology, SHA, out_dir=tmp_path / "out")
    checked = driver.run(request, Stage.CHECK)
    assert checked.reached is Stage.CHECK and checked.result is None
    planned = driver.run(checked, Stage.PLAN)
    assert planned.result is not None and planned.result.rendered is None
    written = driver.run(planned, Stage.WRITE)
    assert calls == [1]
    whole = compile_paths(paths, topology, SHA)
    assert written.result is not None and written.result.files() == whole.files()
    assert (tmp_path / "out" / "plan.json").read_text() == whole.plan_json
    assert sorted(written.written) == sorted(whole.files())
