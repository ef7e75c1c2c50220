"""The loader's cache and process pool are invisible: cold, warm, parallel and
sequential loads give the same program, spans included, and the same diagnostics."""

from __future__ import annotations

import os
import time
import shutil
from pathlib import Path

import pytest

from intentc.frontend.sources import display_path
from intentc.pipeline import loading
from tests.cache_support import aged, deep, spy_parses

ROOT = Path(__file__).parents[1]


def _fingerprint(loaded: loading.Loaded) -> object:
    return deep((loaded.program, loaded.diagnostics))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    (tree / "broken.intent").write_text("intent broken {\n  trigger on push\n}\n")
    return tree


def test_cache_and_pool_do_not_change_results(repo: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "binary.yaml").write_bytes(b"kind: \x00\n")      # unreadable: a reading diagnostic
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    cache = str(tmp_path / "cache")
    cold = loading.load([str(repo)], jobs=1, cache_dir=cache)
    warm = loading.load([str(repo)], jobs=1, cache_dir=cache)
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 1)
    parallel = loading.load([str(repo)], jobs=2, use_cache=False)
    assert len(plain.program.intents) == 17 and plain.diagnostics
    assert any(d.code == "E0003" for d in plain.diagnostics)
    for other in (cold, warm, parallel):
        assert _fingerprint(other) == _fingerprint(plain)
    # without a cache the workers read the files themselves: the same texts kept, the same files read
    assert parallel.sources == plain.sources and parallel.files == plain.files


def test_warm_load_parses_only_changed_files(repo: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cache = str(tmp_path / "cache")
    loading.load([str(repo)], cache_dir=cache)
    parsed = spy_parses(monkeypatch)
    target = repo / "nlp" / "pretrain.intent"
    target.write_text(target.read_text().replace("duration 45m", "duration 50m"))
    again = loading.load([str(repo)], cache_dir=cache)
    assert parsed == [display_path(target)]
    intent = next(i for i in again.program.intents if i.name == "tokenize-corpus")
    assert intent.constraints.duration == "50m"


def test_unreadable_cache_is_ignored(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = loading.load([str(repo)], cache_dir=str(cache))
    for f in cache.iterdir():
        f.write_bytes(b"not a pickle")
    assert _fingerprint(loading.load([str(repo)], cache_dir=str(cache))) == _fingerprint(first)


def test_cache_is_written_per_entry_and_only_when_it_changes(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = loading.load([str(repo)], cache_dir=str(cache))
    blobs = loading.ParseCache(str(cache), [os.path.abspath(repo)])
    store, entries = blobs.file, blobs.index
    assert sorted(f.suffix for f in cache.iterdir()) == [".cache", ".fingerprint", ".stat"]   # no memo: load() keeps none
    assert len(entries) == len(list(repo.rglob("*.intent"))) + len(list(repo.rglob("*.yaml")))
    before = store.stat().st_mtime_ns
    os.utime(store, ns=(before - 10**9, before - 10**9))          # a rewrite would move it forward
    again = loading.load([str(repo)], cache_dir=str(cache))
    assert store.stat().st_mtime_ns == before - 10**9
    assert _fingerprint(again) == _fingerprint(first)
    (repo / "extra.intent").write_text('dataset extra { uri: "s3://x/extra" }\n')
    loading.load([str(repo)], cache_dir=str(cache))
    assert len(loading.ParseCache(str(cache), [os.path.abspath(repo)]).index) == len(entries) + 1


def test_carets_of_cached_and_cross_file_findings_read_their_text(tmp_path: Path) -> None:
    """The loader keeps no texts of files the cache answered or that parsed
    cleanly; a diagnostic pointing into one still shows its source line."""
    from intentc.diagnostics import format_text
    from intentc.pipeline import check

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "t.intent").write_text("tenant a { tier: gold }\n")
    (tree / "j.intent").write_text('intent j {\n  trigger: on push\n  action: batch image "b:1"\n'
                                   "  context: tenant nope\n}\n")
    (tree / "bad.intent").write_text("tenant b {\n  tier gold\n}\n")
    cache = str(tmp_path / "cache")
    outputs = []
    for _ in range(2):                      # cold, then answered by the cache
        result = check([str(tree)], jobs=1, cache_dir=cache)
        outputs.append(format_text(list(result.diagnostics), result.sources))
    assert outputs[0] == outputs[1]
    assert "   4 |   context: tenant nope" in outputs[0]
    assert "   2 |   tier gold" in outputs[0]


def test_results_of_many_small_chunks_come_back_in_order(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of three files, each pickled as one: the same program, diagnostics, texts and file order."""
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(loading, "_chunk_size", lambda count, workers: 3)
    chunked = loading.load([str(repo)], jobs=2, use_cache=False)
    assert len(plain.files) > 3 * 2
    assert _fingerprint(chunked) == _fingerprint(plain)
    assert chunked.sources == plain.sources and chunked.files == plain.files


def test_chunks_stay_between_25_and_100_files() -> None:
    assert loading._chunk_size(100, 2) == 25
    assert loading._chunk_size(1_000, 2) == 62
    assert loading._chunk_size(100_000, 2) == 100


def test_a_few_large_files_are_parsed_in_shares() -> None:
    """100 files of 100 intents each (4.7 MB) were one process's work: under 400
    files.  Their size decides now, and the chunks hold bytes, not file counts."""
    assert loading._participants(100, 100 * 47_000, 2) == 2
    assert loading._participants(100, 100 * 470, 2) == 1        # small files: the count decides
    assert loading._participants(400, None, 2) == 2
    assert loading._participants(1, 10**9, 2) == 1              # one file cannot be shared
    big = loading._chunks(list(range(100)), 2, [47_000] * 100)
    assert [len(c) for c in big] == [2] * 50                  # two files reach the 48 KiB budget
    small = list(range(10_000))
    assert loading._chunks(small, 2, [470] * 10_000) == loading._chunks(small, 2)   # 100 files a chunk, as before
    uneven = loading._chunks(list(range(7)), 2, [1, 60_000, 1, 1, 60_000, 1, 1])
    assert [x for c in uneven for x in c] == list(range(7)) and [len(c) for c in uneven] == [2, 3, 2]


def test_large_files_in_uneven_shares_come_back_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of unequal length (sized by bytes), cold with a cache and without one:
    every result lands at its own file's position."""
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    for k in range(6):
        body = "".join(f'dataset big-{k}-{j} {{ uri: "s3://x/{k}/{j}" }}\n' for j in range(40 * (k % 3 + 1)))
        (tree / f"big-{k}.intent").write_text(body)
    plain = loading.load([str(tree)], jobs=1, use_cache=False)
    monkeypatch.setattr(loading, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(loading, "CHUNK_BYTES", (1, 3000))
    shapes: list[list[int]] = []
    share = loading.shared_map

    def spy(local, remote, decode, chunks, participants):  # type: ignore[no-untyped-def]
        shapes.append([len(c) for c in chunks])
        return share(local, remote, decode, chunks, participants)

    monkeypatch.setattr(loading, "shared_map", spy)
    for loaded in (loading.load([str(tree)], jobs=2, use_cache=False),
                   loading.load([str(tree)], jobs=2, cache_dir=str(tmp_path / "cache"))):
        assert _fingerprint(loaded) == _fingerprint(plain)
        assert loaded.files == plain.files and loaded.sources == plain.sources
    assert len(shapes) == 2 and all(len(set(shape)) > 1 for shape in shapes)     # unequal chunks, both paths


def test_stale_caches_of_other_roots_or_compilers_are_pruned(repo: Path, tmp_path: Path) -> None:
    """Each upgrade left a parse cache behind for good: those not written for 30 days go
    when a cache is written; recent ones, other files and the run's own stay."""
    cache = tmp_path / "cache"
    cache.mkdir()
    old = [cache / f"parse-{'a' * 24}{suffix}" for suffix in (".cache", ".stat", ".memo", ".basis")]
    recent = cache / f"parse-{'b' * 24}.cache"
    foreign = cache / "notes.txt"
    month_ago = time.time() - 31 * 86400
    for f in old + [recent, foreign]:
        f.write_bytes(b"x")
    for f in old + [foreign]:
        os.utime(f, (month_ago, month_ago))
    loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    assert not any(f.exists() for f in old)
    assert recent.exists() and foreign.exists()
    own = loading.ParseCache(str(cache), [os.path.abspath(repo)]).file
    os.utime(own, (month_ago, month_ago))
    (repo / "extra.intent").write_text('dataset extra { uri: "s3://x/extra" }\n')
    loading.load([str(repo)], jobs=1, cache_dir=str(cache))      # rewrites its own cache, keeps it
    assert own.exists()


def test_an_empty_cache_is_filled_in_one_pass_as_a_reading_pass_would_fill_it(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first run reads, keys, parses and pickles each file where it is parsed (workers
    included) instead of reading and hashing every file first.  It leaves what the
    reading pass left: the same results, a cache entry and a stat-index row per readable
    file, and the input named the same way, so the next run is answered without parsing
    and a memo it keeps is found again."""
    (repo / "binary.yaml").write_bytes(b"kind: \x00\n")      # unreadable: a reading diagnostic
    plain = loading.load([str(repo)], jobs=1, use_cache=False)
    aged(monkeypatch)           # no file racily clean: the stat index vouches for every one it lists
    monkeypatch.setattr(loading, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(loading, "_chunk_size", lambda count, workers: 3)
    shipped: list[int] = []
    real_records = loading._keyed_records

    def records(blob: bytes) -> loading.KeyedShare:
        out = real_records(blob)
        shipped.append(len(out[0]))
        return out

    monkeypatch.setattr(loading, "_keyed_records", records)
    cache = str(tmp_path / "cache")
    with loading.scan([str(repo)], jobs=2, cache_dir=cache) as inputs:
        assert inputs.digest is None and not inputs.keys        # nothing read yet
        reused: loading.Reused = {b"stale": loading.FileResult(loading.Program(), ())}
        fresh = inputs.load(reused)
        named, files, keys = (inputs.digest, inputs.names_digest), inputs.files, inputs.keys
    assert shipped, "no worker's share came back"
    assert _fingerprint(fresh) == _fingerprint(plain)
    assert fresh.sources == plain.sources and fresh.files == plain.files == files
    assert len(keys) == len(files) == len(set(keys)) and "binary.yaml" not in " ".join(files)
    assert len(loading.ParseCache(cache, [os.path.abspath(repo)]).index) == len(files)
    assert list(reused) == list(keys)       # the next load of the same caller (git mode) takes them from here
    parsed = spy_parses(monkeypatch)
    read: list[str] = []
    real_read = loading.read_source

    def reading(path: str, *args: object, **kwargs: object) -> object:
        read.append(str(path))
        return real_read(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loading, "read_source", reading)
    with loading.scan([str(repo)], jobs=2, cache_dir=cache) as again:     # the stat index vouches for each file
        assert (again.digest, again.names_digest) == named and again.files == files and again.keys == keys
        assert _fingerprint(again.load()) == _fingerprint(plain)
    assert parsed == [] and read == [str(repo / "binary.yaml")]      # only the file it could not list


def test_the_blob_index_round_trips_and_rejects_what_is_not_one(tmp_path: Path) -> None:
    import io
    import pickle

    from intentc.frontend.cache import BlobIndex

    index = BlobIndex()
    index.add(b"k" * 20, 0, 10)
    index.add(b"j" * 20, 10, 2**40, 3, 5)       # offsets and lengths past 32 bits; the fourth of five
    index.add(b"i" * 20, 10, 2**40, 4, 5)
    index.add(b"k" * 20, 99, 7)                 # a key added again: the last place wins
    out = io.BytesIO()
    index.dump(out)
    back = BlobIndex.loads(out.getvalue())
    assert len(back) == 3 and b"k" * 20 in back and b"x" not in back
    assert back.span(b"k" * 20) == (99, 7, 0) and back.span(b"j" * 20) == (10, 2**40, 3)
    assert back.members(b"j" * 20) == 5 and back.members(b"k" * 20) == 1
    with pytest.raises(KeyError):
        back.span(b"x")
    for bad in ({b"k": (0, 1)}, ([b"k"], b"\0" * 24), (["k"], b"\0" * 32), ([b"k", b"k"], b"\0" * 64)):
        with pytest.raises((TypeError, ValueError)):
            BlobIndex.loads(pickle.dumps(bad))
