"""Parallel parsing with the parent as one of the parsers (intentc.pipeline.parallel)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from intentc.pipeline import loading
from intentc.pipeline.parallel import shared_map

ROOT = Path(__file__).resolve().parents[1]


def _square_remote(chunk: list[int]) -> tuple[int, list[int]]:
    return os.getpid(), [x * x for x in chunk]


def _decode(part: tuple[int, list[int]]) -> tuple[int, list[int]]:
    return part


def _slow_local(chunk: list[int]) -> tuple[int, list[int]]:
    time.sleep(0.01)                 # the parent is slower than the worker: the worker must take chunks
    return os.getpid(), [x * x for x in chunk]


@pytest.mark.parametrize("participants", [1, 2, 3])
def test_every_chunk_comes_back_once_at_its_position(participants: int) -> None:
    chunks = [list(range(k * 5, k * 5 + 5)) for k in range(40)]
    seen = dict(shared_map(_slow_local, _square_remote, _decode, chunks, participants))
    assert sorted(seen) == list(range(40))
    for position, (_, squares) in seen.items():
        assert squares == [x * x for x in chunks[position]]
    pids = {pid for pid, _ in seen.values()}
    if participants == 1:
        assert pids == {os.getpid()}
    else:                            # the parent parsed some, the workers others
        assert os.getpid() in pids and len(pids) >= 2


def test_a_worker_failure_reaches_the_caller() -> None:
    chunks = [[1], [2], [0], [4]] * 5
    with pytest.raises(ZeroDivisionError):
        list(shared_map(_inverse, _inverse, _decode_inverse, chunks, 2))


def _inverse(chunk: list[int]) -> list[float]:
    return [1 / x for x in chunk]


def _decode_inverse(part: list[float]) -> list[float]:
    return part


def test_shared_parsing_with_a_cache_gives_the_plain_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache-filling path: results arrive out of order, each stored under its own file's key."""
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    plain = loading.load([str(tree)], jobs=1, use_cache=False)
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(loading, "_chunk_size", lambda count, participants: 2)
    cache = str(tmp_path / "cache")
    filled = loading.load([str(tree)], jobs=2, cache_dir=cache)
    warm = loading.load([str(tree)], jobs=2, cache_dir=cache)
    for other in (filled, warm):
        assert other.program == plain.program
        assert other.diagnostics == plain.diagnostics
        assert other.files == plain.files


def test_new_files_beside_a_filled_cache_are_parsed_in_shares(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache with results and some files new or edited (`parse_all`, shared): the
    same program and findings as a plain load, and the next run answers from the cache."""
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    cache = str(tmp_path / "cache")
    loading.load([str(tree)], jobs=1, cache_dir=cache)            # fills the empty cache
    for k in range(9):
        (tree / f"extra-{k}.intent").write_text(f'dataset extra-{k} {{ uri: "s3://x/{k}" }}\n')
    target = tree / "nlp" / "pretrain.intent"
    target.write_text(target.read_text().replace("duration 45m", "duration 50m"))
    plain = loading.load([str(tree)], jobs=1, use_cache=False)
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(loading, "_chunk_size", lambda count, participants: 2)
    shared = loading.load([str(tree)], jobs=2, cache_dir=cache)
    again = loading.load([str(tree)], jobs=2, cache_dir=cache)
    for other in (shared, again):
        assert other.program == plain.program and other.diagnostics == plain.diagnostics
        assert other.files == plain.files
