"""Shared by the cache tests: a repository with findings of every kind, and a
stand-in for `lstat` whose clock says what a test needs it to say."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

from intentc.frontend import stat_index
from intentc.pipeline import loading

ROOT = Path(__file__).parents[1]
HOUR_NS = 3600 * 10**9
EDITED = "nlp/pretrain.intent"          # holds "duration 45m"; tests edit it to "duration 50m" (same size)


def make_repo(tmp_path: Path) -> Path:
    """The example intents plus a parse error, unknown references (cross-file
    findings with carets) and a warning only a topology in the tree explains."""
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    golden = ROOT / "tests" / "golden" / "passes"
    shutil.copytree(golden / "resolve_names--unknown-refs", tree / "refs", ignore=shutil.ignore_patterns("expected.txt"))
    shutil.copytree(golden / "check_gpu_products--unknown-product", tree / "gpus",
                    ignore=shutil.ignore_patterns("expected.txt"))
    (tree / "broken.intent").write_text("intent broken {\n  trigger on push\n}\n")
    (tree / "bad.yaml").write_text("kind: Tenant\nmetadata:\n  name: t-bad\nspec:\n  tier: platinum\n")
    return tree


def edit_same_size(repo: Path) -> Path:
    """`EDITED` with its duration changed, same size, its mtime put back as it was."""
    target = repo / EDITED
    before = target.stat()
    text = target.read_text()
    assert "duration 45m" in text
    target.write_text(text.replace("duration 45m", "duration 50m"))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    return target


def pretend_times(monkeypatch: pytest.MonkeyPatch, times: Callable[[os.stat_result], tuple[int, int]]) -> None:
    """The stat index sees (mtime, ctime) = `times(real stat)`; size, inode and device are real."""
    monkeypatch.setattr(stat_index, "times_of", times)


def aged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file an hour older than it is: what a repository nobody wrote to in the last seconds looks like."""
    pretend_times(monkeypatch, lambda st: (st.st_mtime_ns - HOUR_NS, st.st_ctime_ns - HOUR_NS))


def one_tick(monkeypatch: pytest.MonkeyPatch, tick_ns: int) -> None:
    """Every write lands in the same tick of a coarse clock: edits leave mtime and ctime as they were."""
    pretend_times(monkeypatch, lambda st: (tick_ns, tick_ns))


def deep(obj: object) -> object:
    """Every field, spans included (they take no part in IR equality)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj).__name__, tuple(deep(getattr(obj, f.name)) for f in dataclasses.fields(obj)))
    if isinstance(obj, (tuple, list)):
        return tuple(deep(o) for o in obj)
    return obj


def spy_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the loader parses from now on, in order."""
    parsed: list[str] = []
    real = loading._parse_guarded

    def spy(source: loading.SourceFile) -> loading.FileResult:
        parsed.append(source.path)
        return real(source)

    monkeypatch.setattr(loading, "_parse_guarded", spy)
    return parsed
