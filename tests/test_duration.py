"""One duration notation: `check`, the graph, the planner, apply's timeouts and
the fallback chain read every spelling the same way (intentc/ir/duration.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentc import ir
from intentc.graph import digraph
from intentc.ir.duration import format_duration, parse_duration
from intentc.reconcile.timeouts import budget
from intentc.render.fallback import active_deadline

ROOT = Path(__file__).resolve().parent.parent

SPELLINGS = [
    ("90s", 90), ("45m", 2700), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("1d2h3m4s", 93784),
    (" 2h ", 7200), ("0s", 0),
    ("", None), ("h", None), ("30m1h", None), ("1.5h", None), ("2 h", None), ("-1h", None), ("2H", None),
    ("1h1h", None), ("5m30m", None), ("9" * 5000 + "s", None),
]


@pytest.mark.parametrize("text,seconds", SPELLINGS)
def test_parse_duration(text: str, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("seconds", [0, 1, 59, 60, 3599, 3600, 5400, 86399, 86400, 93784, 10 ** 9])
def test_format_is_read_back(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


def _intent(duration: str) -> ir.Intent:
    return ir.Intent("job", ir.Trigger("push"), ir.Action("batch", "img:1"), ir.Context(ir.Ref("team-a")),
                     ir.Constraints(duration=duration))


@pytest.mark.parametrize("text,seconds", SPELLINGS)
def test_every_reader_agrees(text: str, seconds: int | None) -> None:
    """The planner's run time, the Job's activeDeadlineSeconds and apply's
    budget all follow `parse_duration`: a spelling is a duration everywhere or
    nowhere (it was once 5,400 s for the timeouts and "no duration" for the plan)."""
    intent = _intent(text)
    default = digraph.DEFAULT_DURATIONS["batch"]
    assert digraph.duration_seconds(intent) == (default if seconds is None else seconds)
    assert (active_deadline(intent) is None) == (seconds is None)
    assert ("default duration" in budget(intent).derivation) == (seconds is None)


def _check_duration(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", repo)
    ranking = repo / "recsys" / "ranking.intent"
    ranking.write_text(ranking.read_text().replace("duration 6h", f'duration "{text}"'))
    return subprocess.run([sys.executable, "-m", "intentc", "graph", str(repo), "-o", "json"],
                          capture_output=True, text=True, cwd=tmp_path)


def test_check_refuses_what_the_planner_would_not_read(tmp_path: Path) -> None:
    refused = _check_duration(tmp_path, "30m1h")
    assert refused.returncode == 1
    assert "E0415" in refused.stderr and "30m1h" in refused.stderr


def test_graph_reads_what_check_accepts(tmp_path: Path) -> None:
    accepted = _check_duration(tmp_path, "1h30m")
    assert accepted.returncode == 0, accepted.stderr
    intents = {i["name"]: i for i in json.loads(accepted.stdout)["intents"]}
    assert intents["train-ranker"]["duration_s"] == 5400
