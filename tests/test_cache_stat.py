"""The stat index (intentc/frontend/stat_index.py): a warm load does not read a
file whose `lstat` is what it was, reads it again when the stat changed or the
file is racily clean, and always gives what a load without a cache gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from intentc.frontend import stat_index
from intentc.frontend.sources import display_path, max_file_bytes
from intentc.pipeline import loading
from tests.cache_support import EDITED, HOUR_NS, aged, deep, edit_same_size, make_repo, one_tick, spy_parses


def _same(a: loading.Loaded, b: loading.Loaded) -> bool:
    return deep((a.program, a.diagnostics)) == deep((b.program, b.diagnostics)) and a.files == b.files


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture()
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "cache")


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the loader opens (texts read back for carets are not the loader's)."""
    seen: list[str] = []
    real = loading.read_source

    def spy(path: str, root: str | None = None, folders: dict[str, str] | None = None,
            lstats: list[os.stat_result | None] | None = None
            ) -> tuple[loading.SourceFile | None, list[loading.Diagnostic]]:
        seen.append(display_path(path))
        return real(path, root, folders, lstats)

    monkeypatch.setattr(loading, "read_source", spy)
    return seen


@pytest.fixture()
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return spy_parses(monkeypatch)


def _duration(loaded: loading.Loaded) -> str | None:
    return next(i for i in loaded.program.intents if i.name == "tokenize-corpus").constraints.duration


def test_unchanged_files_are_not_read(repo: Path, cache: str, reads: list[str], parses: list[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    reads.clear()
    parses.clear()
    warm = loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert reads == [] and parses == []
    assert _same(warm, plain) and len(warm.files) == len(plain.files) > 10


def test_touch_reads_the_file_again_and_still_hits(repo: Path, cache: str, reads: list[str], parses: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    first = loading.load([str(repo)], jobs=1, cache_dir=cache)
    target = repo / EDITED
    os.utime(target)                                    # new mtime and ctime, same bytes
    reads.clear()
    parses.clear()
    again = loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert reads == [display_path(target)] and parses == []
    assert _same(again, first)
    reads.clear()
    loading.load([str(repo)], jobs=1, cache_dir=cache)    # the index took the new stat
    assert reads == []


def test_same_size_edit_within_one_clock_tick_is_caught_as_racily_clean(
        repo: Path, cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written, loaded and written again within one tick of the file system's
    clock: size, mtime, ctime, inode all as recorded.  The run that recorded them
    began within that tick, so the file is racily clean and is read again."""
    one_tick(monkeypatch, time.time_ns())
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "45m"
    edit_same_size(repo)
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "50m"
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "50m"


def test_an_old_unchanged_stat_is_trusted(repo: Path, cache: str, reads: list[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The counterpart of the test above: the same edit, the clock an hour behind
    the run.  The index vouches for the file (that is what makes a warm run fast),
    so it is the racy rule, not anything else, that caught the edit above."""
    one_tick(monkeypatch, time.time_ns() - HOUR_NS)
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    edit_same_size(repo)
    reads.clear()
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "45m"
    assert reads == []


def test_same_size_edit_with_mtime_put_back_is_seen(repo: Path, cache: str) -> None:
    """The real clock: the edit moves ctime (or the file is racily clean)."""
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "45m"
    target = edit_same_size(repo)
    assert _duration(loading.load([str(repo)], jobs=1, cache_dir=cache)) == "50m"
    assert target.stat().st_size == (repo / EDITED).stat().st_size


def test_files_added_removed_and_renamed(repo: Path, cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    loading.load([str(repo)], jobs=1, cache_dir=cache)

    def check() -> loading.Loaded:
        warm = loading.load([str(repo)], jobs=1, cache_dir=cache)
        assert _same(warm, loading.load([str(repo)], jobs=1, use_cache=False))
        return warm

    (repo / "extra.intent").write_text('dataset extra { uri: "s3://x/extra" }\n')
    assert "extra" in {d.name for d in check().program.datasets}
    (repo / "extra.intent").rename(repo / "moved.intent")
    assert display_path(repo / "moved.intent") in check().files
    (repo / "moved.intent").unlink()
    (repo / EDITED).unlink()
    loaded = check()
    assert "extra" not in {d.name for d in loaded.program.datasets}
    assert display_path(repo / EDITED) not in loaded.files


def test_symbolic_links_are_always_read(repo: Path, cache: str, reads: list[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The index vouches for regular files only: a link's target can change under the same link."""
    aged(monkeypatch)
    (repo / "link.intent").symlink_to(repo / EDITED)
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    reads.clear()
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert reads == [display_path(repo / "link.intent")]


def test_a_lower_size_limit_is_applied_to_unchanged_files(repo: Path, cache: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    size = (repo / EDITED).stat().st_size
    monkeypatch.setenv("INTENTC_MAX_FILE_BYTES", str(size - 1))
    warm = loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert any(d.code == "E0007" and d.span.file == display_path(repo / EDITED) for d in warm.diagnostics)
    assert _same(warm, loading.load([str(repo)], jobs=1, use_cache=False))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_stat_index_is_ignored(repo: Path, cache: str, damage: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    (index,) = Path(cache).glob("*.stat")
    data = index.read_bytes()
    index.write_bytes({"garbage": b"\x80\x05not an index" + data[20:], "truncated": data[:len(data) // 2],
                       "empty": b""}[damage])
    assert _same(loading.load([str(repo)], jobs=1, cache_dir=cache), plain)
    assert _same(loading.load([str(repo)], jobs=1, cache_dir=cache), plain)


def test_the_index_is_rewritten_only_when_it_changes(repo: Path, cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    (repo / "binary.yaml").write_bytes(b"kind: \x00\n")      # never listed: read (and reported) every run
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    (index,) = Path(cache).glob("*.stat")
    before = index.stat().st_mtime_ns - 10**9
    os.utime(index, ns=(before, before))                      # a rewrite would move it forward
    warm = loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert index.stat().st_mtime_ns == before
    assert any(d.code == "E0003" for d in warm.diagnostics)
    (repo / "bad.yaml").unlink()
    loading.load([str(repo)], jobs=1, cache_dir=cache)
    assert index.stat().st_mtime_ns != before


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_first_run_records_what_observe_would(repo: Path, cache: str, jobs: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A first run takes each file's stat row from the `lstat` its read took (in the
    worker that read it), not from a pass of its own: the same rows, links unvouched."""
    aged(monkeypatch)
    (repo / "link.intent").symlink_to(repo / EDITED)
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 2)
    loading.load([str(repo)], jobs=jobs, cache_dir=cache)
    (file,) = Path(cache).glob("*.stat")
    index = stat_index.StatIndex.read(file)
    paths = [str(repo / name) if not os.path.isabs(name) else name for name in index.names]
    assert len(paths) > 10 and all(os.path.exists(p) for p in paths)
    assert index.seen == stat_index.observe(paths, max_file_bytes())
    assert index.seen.row(index.names.index(display_path(repo / "link.intent")))[0].tolist() == [-1, 0, 0]
