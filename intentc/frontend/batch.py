"""Loading many files: discovery, decoding, parsing, merging — fast.

Per-file parsing is pure, so this module can do three things the surfaces
never need to know about:

* a content-hash cache: a file whose path, bytes and compiler are unchanged
  is not parsed again;
* a process pool: cold parses of large repositories use every core;
* the cyclic garbage collector is paused while the IR is built.  Parsing and
  unpickling allocate hundreds of thousands of small objects and no cycles;
  with the collector running, unpickling 10,000 cached files took 4.6 s
  instead of 0.9 s on the development machine.

Each file's result travels and is stored as its own pickle: a worker pickles
its results once, the parent unpickles them (it needs the objects anyway)
and stores the very same bytes in the cache, so a cold run never pickles
twice.  Cached, parallel and sequential runs give identical programs and
diagnostics (tests check this).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import struct
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Sequence

from intentc import collector
from intentc.collector import After
from intentc import __version__
from intentc.diagnostics import Diagnostic, Span, capped, error
from intentc.frontend import FileResult, Loaded, merge, parse_source
from intentc.ir import Program
from intentc.progress import Progress, silent
from intentc.sources import SourceFile, discover, read_source

# Below this many files to parse, starting workers costs more than it saves.
PARALLEL_THRESHOLD = 400
CACHE_ENV = "INTENTC_CACHE_DIR"
PARSING = "parsing"      # what `progress` is told
_PICKLE = pickle.HIGHEST_PROTOCOL


def _parse_guarded(source: SourceFile) -> FileResult:
    """Parse one file and run the local passes on it (so their findings are
    cached and computed in the workers too).  A crash in a surface is a bug,
    but the user still gets a diagnostic, not a traceback."""
    from intentc.passes import LOCAL_PASSES, run_passes
    try:
        parsed = parse_source(source)
        _, local = run_passes(parsed.program, LOCAL_PASSES)
        return FileResult(parsed.program, capped(parsed.diagnostics + tuple(local)))
    except RecursionError:
        return FileResult(Program(), (error("E0203", "input nested too deeply to process",
                                            Span.point(source.path, 1, 1)),))


def _parse_to_pickles(sources: list[SourceFile]) -> list[bytes]:
    with collector.paused(After.FREEZE):
        return [pickle.dumps(_parse_guarded(s), _PICKLE) for s in sources]


def _read_and_parse(paths: list[str]) -> bytes:
    """A worker's share of a run without a cache: read each file too, so the parent
    neither reads nor holds any text.  Per file: (name, reading diagnostics, result
    or None when unreadable, the text when it reported something), the chunk's
    records pickled together: nothing needs one file's pickle on its own here (no
    cache to fill), and one pickle shares what files repeat (the IR's classes, the
    same image or tenant within one string) where per-file pickles named each
    again.  Shipping 10,000 files: 62 -> 40 us per file to pickle, 55 -> 40 us to
    unpickle (the parent's share, serial)."""
    out = []
    with collector.paused(After.FREEZE):
        # all of the chunk read first: reading between parses cost 10-20% more CPU
        # (measured in one process, alternating), the parser's tables evicted each time
        read = [read_source(Path(path)) for path in paths]
        for src, read_diags in read:
            result = _parse_guarded(src) if src is not None else None
            text = src.text if src is not None and result is not None and result.diagnostics else None
            out.append((src.path if src is not None else None, tuple(read_diags), result, text))
        return pickle.dumps(out, _PICKLE)


@functools.cache
def _compiler_fingerprint() -> str:
    """Cache entries are only valid for the exact grammar, schemas and code that made them
    (computed once per process: the daemon and `watch` load many times)."""
    h = hashlib.sha256(__version__.encode())
    pkg = Path(__file__).resolve().parents[1]
    for root in (pkg, pkg.parent / "grammar", pkg.parent / "schemas"):
        if not root.is_dir():
            continue
        for f in sorted(root.rglob("*")):
            if f.suffix in (".py", ".lark", ".json") and "__pycache__" not in f.parts:
                h.update(f.name.encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def _key(source: SourceFile) -> str:
    return hashlib.blake2b(source.path.encode() + b"\0" + source.text.encode(),
                           digest_size=20).hexdigest()


_TRAILER = struct.Struct("=Q")      # where the index starts


class ParseCache:
    """One file per set of input roots (the paths given on the command line),
    mapping a file's content key to its pickled result; adding or editing a
    file reparses only that file.

    The file holds the pickles back to back, then an index (key -> offset,
    length) and the index's offset.  Opening a cache reads only the index;
    each pickle is read when its file is loaded (`read`) and dropped once
    unpickled, and a new cache is written pickle by pickle as results arrive
    (`writer`): no run holds every pickle of a 100,000-file repository at once
    (reading them all first had the cached run peak 120 MB above the cold one)."""

    def __init__(self, directory: str, roots: Sequence[str]) -> None:
        ident = hashlib.sha256(("\0".join(roots) + "\0" + _compiler_fingerprint()).encode())
        self.file = Path(directory) / f"parse-{ident.hexdigest()[:24]}.cache"
        self.index: dict[str, tuple[int, int]] = {}
        self._fd: int | None = None
        try:
            fd = os.open(self.file, os.O_RDONLY)
        except OSError:
            return
        try:
            size = os.fstat(fd).st_size
            (start,) = _TRAILER.unpack(os.pread(fd, _TRAILER.size, size - _TRAILER.size))
            with collector.paused(After.FREEZE):
                index = pickle.loads(os.pread(fd, size - _TRAILER.size - start, start))
            if not isinstance(index, dict):
                raise TypeError("not a parse cache index")
            self.index, self._fd = index, fd
        except (OSError, struct.error, pickle.UnpicklingError, EOFError, AttributeError, TypeError,
                ValueError, MemoryError):
            os.close(fd)

    def read(self, key: str) -> bytes:
        offset, length = self.index[key]
        assert self._fd is not None
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def writer(self) -> Iterator[Callable[[str, bytes], None]]:
        """`add(key, pickle)` for each entry of the new cache; the file is
        replaced atomically when the block ends, so a concurrent or interrupted
        run never reads half a cache.  A cache that cannot be written only costs speed."""
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
        except OSError:
            yield lambda key, blob: None
            return
        fh = os.fdopen(fd, "wb")
        index: dict[str, tuple[int, int]] = {}
        failed = False

        def add(key: str, blob: bytes) -> None:
            nonlocal failed
            if not failed:
                try:
                    index[key] = (fh.tell(), len(blob))
                    fh.write(blob)
                except OSError:
                    failed = True

        try:
            yield add
            if not failed:
                with contextlib.suppress(OSError):
                    start = fh.tell()
                    pickle.dump(index, fh, _PICKLE)
                    fh.write(_TRAILER.pack(start))
                    fh.close()
                    os.replace(tmp, self.file)
        finally:
            fh.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def default_cache_dir() -> str | None:
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        return explicit or None   # INTENTC_CACHE_DIR= (empty) disables the cache
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "intentc")


def _chunk_size(count: int, workers: int) -> int:
    """Files per task handed to a worker: a few dozen tasks per worker, so the
    workers finish together (with four 1,250-file tasks each at 10,000 files,
    one core could sit idle for most of a task's 0.4 s at the end) and the
    parent unpickles as results arrive, not in bursts; never under 50 files,
    so the per-task cost stays small."""
    return max(50, min(count // (workers * 4), 250))


def _workers(n_sources: int, jobs: int | None) -> int:
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    return 1 if n_sources < PARALLEL_THRESHOLD else max(workers, 1)


def parse_all(sources: list[SourceFile], jobs: int | None) -> Iterator[bytes]:
    """Each source's FileResult, pickled, in order; in parallel when it pays off.

    A generator, so the caller can unpickle each result as it arrives and drop
    the bytes: holding every pickle of a 100,000-file repository at once cost
    some 150 MB of peak memory for nothing when there is no cache to fill."""
    workers = _workers(len(sources), jobs)
    if workers == 1:
        with collector.paused(After.FREEZE):
            for s in sources:
                yield pickle.dumps(_parse_guarded(s), _PICKLE)
        return
    size = _chunk_size(len(sources), workers)
    chunks = [sources[i:i + size] for i in range(0, len(sources), size)]
    del sources       # the caller hands its list over: each text now goes with its chunk
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_parse_to_pickles, chunks)
        del chunks    # the pool holds each chunk until it is parsed, no longer
        for part in parts:
            yield from part


def load(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
         use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = ()) -> Loaded:
    """Every file under `paths` (less `exclude`, gitignore patterns), parsed, with the
    diagnostics of reading, parsing and the local passes; the global passes are the
    caller's.  `progress` hears how many of the files are parsed (cached ones count at once).

    Memory is what a 100,000-file repository is checked within, so nothing is
    kept longer than needed: a text is dropped once its file is parsed, or
    once hashed when the cache has its result (`Loaded.sources` keeps the
    texts it still has of files that reported something; `intentc.pipeline`
    reads back any other a diagnostic points into), and each pickle once it
    is unpickled and, when the cache changed, written."""
    directory = (cache_dir or default_cache_dir()) if use_cache else None
    cache = ParseCache(directory, sorted(os.path.abspath(p) for p in paths)) if directory else None
    try:
        return _load(paths, jobs, cache, progress, exclude)
    finally:
        if cache is not None:
            cache.close()


def _load(paths: Sequence[str], jobs: int | None, cache: ParseCache | None, progress: Progress,
          exclude: Sequence[str]) -> Loaded:
    files, diags = discover(paths, exclude)
    if cache is None and _workers(len(files), jobs) > 1:
        return _load_in_workers(files, diags, jobs, progress)
    keys: list[str] = []
    pending: dict[int, SourceFile] = {}     # read, not parsed yet (texts of cached files are not kept)
    for f in files:
        src, read_diags = read_source(f)
        diags.extend(read_diags)
        if src is None:
            continue
        i = len(keys)
        keys.append(_key(src) if cache is not None else "")
        cached = cache is not None and keys[i] in cache.index
        pending[i] = SourceFile(src.path, "") if cached else src
    read = tuple(pending[i].path for i in range(len(keys)))
    count = len(keys)
    todo = [i for i in range(count) if cache is None or keys[i] not in cache.index]
    todo_set = set(todo)
    # An unchanged cache is not written again.
    rewrite = cache is not None and (bool(todo) or len(cache.index) != count)
    texts: dict[str, str] = {}
    parsed: dict[int, FileResult] = {}

    finished = count - len(todo)          # cached results count at once
    progress(PARSING, finished, count)

    def done(i: int, result: FileResult) -> FileResult:
        nonlocal finished
        src = pending.pop(i)
        if result.diagnostics and src.text:
            texts[src.path] = src.text
        if i in todo_set:
            finished += 1
            if finished % 50 == 0 or finished == count:
                progress(PARSING, finished, count)
        return result

    with contextlib.ExitStack() as stack:
        stack.enter_context(collector.paused(After.FREEZE))
        if cache is None and _workers(len(todo), jobs) == 1:   # nothing to store or ship: no pickles
            return _loaded([done(i, _parse_guarded(pending[i])) for i in todo], diags, texts, read)
        add = stack.enter_context(cache.writer()) if cache is not None and rewrite else None
        for i, blob in zip(todo, parse_all([pending[i] for i in todo], jobs)):
            parsed[i] = done(i, pickle.loads(blob))
            if add is not None:
                add(keys[i], blob)
        results: list[FileResult] = []
        for i in range(count):
            if i in parsed:
                results.append(parsed.pop(i))
                continue
            assert cache is not None
            blob = cache.read(keys[i])
            results.append(done(i, pickle.loads(blob)))
            if add is not None:
                add(keys[i], blob)
    return _loaded(results, diags, texts, read)


def _load_in_workers(files: list[Path], diags: list[Diagnostic], jobs: int | None, progress: Progress) -> Loaded:
    """No cache to consult: the workers read the files as well as parse them.  Reading
    10,000 files was a third of a second of the parent's time before any worker
    started, and the parent held every text of the repository at once."""
    workers = _workers(len(files), jobs)
    count = len(files)
    size = _chunk_size(count, workers)
    chunks = [[str(f) for f in files[i:i + size]] for i in range(0, count, size)]
    results: list[FileResult] = []
    texts: dict[str, str] = {}
    read: list[str] = []
    processed = 0
    progress(PARSING, 0, count)
    with collector.paused(After.FREEZE), ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_read_and_parse, chunks):
            for name, read_diags, result, text in pickle.loads(part):
                processed += 1
                diags.extend(read_diags)
                if name is None or result is None:
                    continue
                read.append(name)
                results.append(result)
                if text is not None:
                    texts[name] = text
            progress(PARSING, processed, count)
    return _loaded(results, diags, texts, tuple(read))


def _loaded(results: list[FileResult], diags: list[Diagnostic], texts: dict[str, str],
            files: tuple[str, ...]) -> Loaded:
    program, parse_diags = merge(results)
    return Loaded(program, tuple(diags + parse_diags), texts, files)
