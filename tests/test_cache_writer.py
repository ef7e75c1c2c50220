"""The parse cache's writer: chunks stored as shipped, the parent's results pickled
once the parse is done (in a forked child under the `intentc` program), entries of
the old cache copied while enough of each pickle is still wanted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from intentc.frontend import FileResult
from intentc.frontend.cache import KEPT_SHARE, ParseCache
from intentc.ir import Program
from intentc.pipeline import loading
from tests.cache_support import deep, make_repo

ROOT = Path(__file__).parents[1]


def _entries(cache: Path, repo: Path) -> dict[bytes, object]:
    blobs = ParseCache(str(cache), [os.path.abspath(repo)])
    try:
        return {key: deep(blobs.entry(key)) for key in list(blobs.index._row)}
    finally:
        blobs.close()


def test_the_program_writes_a_first_run_s_cache_in_a_child_and_waits_for_it(tmp_path: Path) -> None:
    """Under the console entry point, when asked (`intentc check`), the parent's share
    of a first run is pickled and the cache written by a forked child while the parent
    goes on; the process ends only once the child has: the cache is whole, and equal
    to the one a process that writes it itself leaves."""
    repo = make_repo(tmp_path)
    inline = tmp_path / "inline"
    loading.load([str(repo)], jobs=1, cache_dir=str(inline))          # not the console: written in place
    script = textwrap.dedent("""
        import os, sys
        from intentc import collector
        from intentc.frontend import cache
        from intentc.pipeline import loading
        collector.hold_until_exit()
        forked = []
        real = os.fork
        def fork():
            pid = real()
            if pid:
                forked.append(pid)
            return pid
        os.fork = fork
        with loading.scan([sys.argv[1]], jobs=1, cache_dir=sys.argv[2]) as inputs:
            inputs.load()                   # not asked to: written in place
        print(len(forked), end=" ")
        with loading.scan([sys.argv[1]], jobs=1, cache_dir=sys.argv[3]) as inputs:
            inputs.load(behind=True)
        print(len(forked), len(cache._writers))
        collector.exit_held(0)
    """)
    in_place, behind = tmp_path / "in-place", tmp_path / "behind"
    run = subprocess.run([sys.executable, "-c", script, str(repo), str(in_place), str(behind)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "1", "1"]     # one child forked when asked, waited for at the exit
    assert _entries(in_place, repo) == _entries(inline, repo)
    written = _entries(behind, repo)
    assert written and written == _entries(inline, repo)
    assert all(isinstance(ParseCache(str(behind), [os.path.abspath(repo)]).entry(k), FileResult) for k in written)
    assert not list(behind.glob("*.tmp"))


def test_kept_entries_are_copied_while_enough_of_their_pickle_is_wanted(tmp_path: Path) -> None:
    """A pickle of four results: keeping two copies it whole (the other two stay in it,
    unnamed); keeping one of those re-pickles that one alone, so edits file by file
    never leave a cache holding mostly what nobody asks for."""
    import pickle

    cache = ParseCache(str(tmp_path), ["/repo"])
    results = [FileResult(Program(), ()) for _ in range(4)]
    keys = [bytes([k]) * 20 for k in range(4)]
    with cache.writer() as out:
        out.add(keys, pickle.dumps(results))
    cache.close()
    assert [cache.index.members(k) for k in keys] == [4] * 4

    with cache.writer() as out:
        out.keeping(keys[:2])
        for key in keys[:2]:
            out.keep(key, cache.entry(key))
    cache.close()
    assert len(cache.index) == 2 and {cache.index.members(k) for k in keys[:2]} == {4}   # the same pickle, copied
    assert [cache.index.span(k)[2] for k in keys[:2]] == [0, 1]
    assert 1 < KEPT_SHARE * 4 <= 2

    with cache.writer() as out:
        out.keeping(keys[1:2])
        out.keep(keys[1], cache.entry(keys[1]))
    cache.close()
    assert len(cache.index) == 1 and cache.index.span(keys[1])[2] == 0 and cache.index.members(keys[1]) == 1
    assert isinstance(cache.entry(keys[1]), FileResult)
    assert cache.index.span(keys[1])[1] < len(pickle.dumps(results))    # the other three are gone


def test_a_damaged_chunk_costs_a_parse_of_its_files_only(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    cache = tmp_path / "cache"
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    blobs = ParseCache(str(cache), [os.path.abspath(repo)])
    offset, length, _ = blobs.index.span(next(iter(blobs.index._row)))
    blobs.close()
    data = bytearray(blobs.file.read_bytes())
    data[offset:offset + length] = b"\0" * length                          # one pickle zeroed
    blobs.file.write_bytes(bytes(data))
    again = loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    assert deep((again.program, again.diagnostics)) == deep((plain.program, plain.diagnostics))
