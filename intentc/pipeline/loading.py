"""The load stage: many files discovered, decoded, parsed, locally checked and merged — fast.

Each file is parsed (`intentc.frontend`) and the local passes run on it
(`intentc.passes.LOCAL_PASSES`) in one step, so their findings are cached with
the file's program and computed in the workers too; that is why this stage
lives in the pipeline, above both.  Per-file work is pure, so this module can
do three things the surfaces and the passes never need to know about:

* a content-hash cache (`intentc.frontend.cache`): a file whose path, bytes
  and compiler are unchanged is not parsed again, a file whose `lstat` is
  unchanged is not even read (`stat_index`), and a result computed from
  all the files together can be kept for a run with the very same inputs
  (`scan`, `Inputs.digest`; `pipeline.memo` keeps `intentc check`'s report);
* parallel parsing (`intentc.pipeline.parallel`): cold parses of large
  repositories use every core, the parent's included;
* the cyclic garbage collector is paused while the IR is built.  Parsing and
  unpickling allocate hundreds of thousands of small objects and no cycles;
  with the collector running, it walks them again and again for nothing,
  and unpickling cached files costs several times as much.

A worker's chunk of results travels as one pickle, and a first run stores
those very bytes in the cache: the parent unpickles them (it needs the
objects anyway), nobody pickles twice, and the parent's own results are
pickled for the cache only once the parse is done (`cache.CacheWriter`).
Cached, parallel and sequential runs give identical programs and
diagnostics (tests check this).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from typing import Iterator, Sequence, TypeVar

from intentc import collector
from intentc.collector import After
from intentc.compact import intern_strings
from intentc.diagnostics import Diagnostic, Span, capped, error
from intentc.frontend import FileResult, Loaded, merge, parse_source
from intentc.frontend.cache import CACHE_ENV, Memo, ParseCache, Store, default_cache_dir
from intentc.frontend.sources import SourceFile, discover_named, max_file_bytes, read_source
from intentc.frontend.stat_index import KEY_BYTES, UNVOUCHED, Observed, Row, index_of, observe, row_of
from intentc.ir import Program
from intentc.pipeline.parallel import shared_map
from intentc.progress import Progress, silent

__all__ = ["CACHE_ENV", "PARALLEL_THRESHOLD", "PARSING", "Inputs", "Loaded", "ParseCache", "default_cache_dir",
           "load", "parse_all", "scan"]

# Below this many files to parse, starting workers costs more than it saves, unless
# the files are large: a repository that keeps a team's intents in one file has few
# files and much source, and would be parsed by one process.  What counts then is the source's size: `PARALLEL_BYTES`,
# about the size of 400 files of one intent each.
PARALLEL_THRESHOLD = 400
PARALLEL_BYTES = 192 * 1024
# Sizes are looked at (one `lstat` each, when the texts are not in hand yet) only
# for fewer files than this: above it the count alone decides, and a stat of every
# file would only delay every worker.
SIZED_BELOW = 4000
CHUNK_BYTES = (12 * 1024, 48 * 1024)     # a chunk's bytes: about 25 to 100 files of one intent
PARSING = "parsing"      # what `progress` is told
_PICKLE = pickle.HIGHEST_PROTOCOL
T = TypeVar("T")


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


Reused = dict[bytes, FileResult]   # content key -> the result of the caller's last load (`load`'s `reuse`)
Parsed = tuple[FileResult, bytes | None]     # a result, and its pickle when a worker made one


def _parse_here(sources: list[SourceFile]) -> list[Parsed]:
    """The parent's share of `parse_all`: each result, strings interned as unpickling would."""
    out: list[Parsed] = []
    with collector.paused(After.FREEZE):
        for s in sources:
            result = _parse_guarded(s)
            intern_strings(result.program)
            out.append((result, None))
    return out


def _shipped(blobs: list[bytes]) -> list[Parsed]:
    return [(pickle.loads(blob), blob) for blob in blobs]


Record = tuple[str | None, tuple[Diagnostic, ...], FileResult | None, str | None]


def _parsed(paths: list[str], lstats: list[os.stat_result | None] | None = None
            ) -> Iterator[tuple[SourceFile | None, list[Diagnostic], FileResult | None]]:
    """Each file of a share read, then parsed: (the source or None when unreadable, the
    reading diagnostics, the result or None); `lstats` gets each file's `lstat`
    (`read_guarded`).  The caller pauses the collector."""
    # all of the chunk read first: reading between parses evicts the parser's tables
    # from the CPU's caches each time
    folders: dict[str, str] = {}
    read = [read_source(path, folders=folders, lstats=lstats) for path in paths]
    for src, read_diags in read:
        yield src, read_diags, _parse_guarded(src) if src is not None else None


def _read_and_parse(paths: list[str]) -> list[Record]:
    """A share of a run without a cache: read each file too, so the parent neither
    reads nor holds any text it does not parse itself.  Per file: (name, reading
    diagnostics, result or None when unreadable, the text when it reported something)."""
    with collector.paused(After.FREEZE):
        return [(src.path if src is not None else None, tuple(read_diags), result,
                 src.text if src is not None and result is not None and result.diagnostics else None)
                for src, read_diags, result in _parsed(paths)]


def _read_and_parse_here(paths: list[str]) -> list[Record]:
    """The parent's `_read_and_parse`: what a worker's results get by being unpickled
    (`intentc.compact`), repeated strings shared, these get by `intern_strings`
    (without it, the parent would hold a copy of each repeated string per file)."""
    records = _read_and_parse(paths)
    for _, _, result, _ in records:
        if result is not None:
            intern_strings(result.program)
    return records


def _read_and_parse_pickled(paths: list[str]) -> bytes:
    """A worker's `_read_and_parse`, its records pickled together: nothing needs one
    file's pickle on its own here (no cache to fill), and one pickle shares what files
    repeat (the IR's classes, the same image or tenant within one string) where
    per-file pickles named each again, so it is quicker to make and to load."""
    return pickle.dumps(_read_and_parse(paths), _PICKLE)


# A file of a first run's share (`Inputs._load_fresh`): as in `Record`, but its content key
# in place of the result (which comes in the share's list of results, one for each file with
# a key) and what the stat index is to record of it (`stat_index.row_of` of the `lstat` its
# read took).  A share: those, its results, and the pickle of the results when a worker
# shipped them (the very bytes the cache stores).
Keyed = tuple[str | None, tuple[Diagnostic, ...], bytes | None, str | None, Row]
KeyedShare = tuple[list[Keyed], list[FileResult], bytes | None]
Held = tuple[str | None, tuple[Diagnostic, ...], bytes | None, str | None, FileResult | None]   # the row's place taken by the result


def _read_parse_keyed(paths: list[str], here: bool = False) -> tuple[list[Keyed], list[FileResult]]:
    """`_read_and_parse`, each file's key and stat row added; `here` (the parent's share)
    interns strings as unpickling would."""
    out: list[Keyed] = []
    results: list[FileResult] = []
    lstats: list[os.stat_result | None] = []
    limit = max_file_bytes()
    with collector.paused(After.FREEZE):
        for i, (src, read_diags, result) in enumerate(_parsed(paths, lstats)):
            if src is None or result is None:
                out.append((None, tuple(read_diags), None, None, UNVOUCHED))
                continue
            if here:
                intern_strings(result.program)
            out.append((src.path, tuple(read_diags), _key(src), src.text if result.diagnostics else None,
                        row_of(lstats[i], limit)))
            results.append(result)
    return out, results


def _read_parse_keyed_here(paths: list[str]) -> KeyedShare:
    return (*_read_parse_keyed(paths, here=True), None)


def _read_parse_keyed_pickled(paths: list[str]) -> bytes:
    """A worker's share: its records, and its results pickled together, once, for the
    parent to load and the cache to store (one pickle per chunk names the IR's classes
    once, so it is quicker to make and to load than a pickle per file)."""
    records, results = _read_parse_keyed(paths)
    return pickle.dumps((records, pickle.dumps(results, _PICKLE)), _PICKLE)


def _keyed_records(shipped: bytes) -> KeyedShare:
    records, blob = pickle.loads(shipped)
    return records, pickle.loads(blob), blob


def _records(blob: bytes) -> list[Record]:
    records: list[Record] = pickle.loads(blob)
    return records


def _key(source: SourceFile) -> bytes:
    return hashlib.blake2b(source.path.encode("utf-8", "surrogateescape") + b"\0" + source.text.encode(),
                           digest_size=KEY_BYTES).digest()


def _chunk_size(count: int, participants: int) -> int:
    """Files per chunk handed out (`intentc.pipeline.parallel`): some eight chunks per
    participant, so that they finish together (a participant waits at most about
    one chunk for the others at the end), never over 100 files (a short wait at the
    end) nor under 25, so the cost per chunk stays small."""
    return max(25, min(count // (participants * 8), 100))


def _participants(count: int, size: int | None, jobs: int | None) -> int:
    """Processes parsing, the parent included: one per core by default, when there
    are enough files, or (`size`, in bytes, when known) enough source."""
    wanted = jobs if jobs is not None else (os.cpu_count() or 1)
    if count < 2 or (count < PARALLEL_THRESHOLD and (size is None or size < PARALLEL_BYTES)):
        return 1
    return max(wanted, 1)


def _chunks(items: list[T], participants: int, sizes: Sequence[int] | None = None) -> list[list[T]]:
    """Consecutive runs of `items`, each closed at `_chunk_size` files or, when the
    `sizes` are known, once it holds its share of the bytes (some eight chunks per
    participant, within `CHUNK_BYTES`): files of many intents each are as many
    chunks as the same intents one per file, not 25 large files to a chunk."""
    size = _chunk_size(len(items), participants)
    if sizes is None:
        return [items[i:i + size] for i in range(0, len(items), size)]
    low, high = CHUNK_BYTES
    budget = max(low, min(sum(sizes) // (participants * 8), high))
    chunks: list[list[T]] = []
    start, held = 0, 0
    for i, n in enumerate(sizes):
        held += n
        if i + 1 - start >= size or held >= budget:
            chunks.append(items[start:i + 1])
            start, held = i + 1, 0
    if start < len(items):
        chunks.append(items[start:])
    return chunks


def _sizes(paths: list[str]) -> list[int] | None:
    """Each file's size for `_chunks`, or None when there are too many to stat for it."""
    if len(paths) >= SIZED_BELOW:
        return None
    out: list[int] = []
    for path in paths:
        try:
            out.append(os.lstat(path).st_size)
        except OSError:
            out.append(0)
    return out


def parse_all(sources: list[SourceFile], jobs: int | None) -> Iterator[tuple[int, FileResult, bytes | None]]:
    """(position in `sources`, that source's FileResult, its pickle when a worker parsed
    it, else None), in the order they are parsed; in parallel when it pays off.

    A generator, so the caller can store each pickle as it arrives and drop it:
    holding every pickle of a repository at once would add them all to the peak
    memory for nothing."""
    sizes = [len(s.text) for s in sources]
    participants = _participants(len(sources), sum(sizes), jobs)
    chunks = _chunks(sources, participants, sizes)
    starts = [0]
    for chunk in chunks:
        starts.append(starts[-1] + len(chunk))
    del sources       # the caller hands its list over: each text now goes with its chunk
    for c, done in shared_map(_parse_here, _parse_to_pickles, _shipped, chunks, participants):
        chunks[c] = []    # parsed: its texts can go
        for k, (result, blob) in enumerate(done):
            yield starts[c] + k, result, blob


def load(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
         use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = (),
         reuse: Reused | None = None) -> Loaded:
    """Every file under `paths` (less `exclude`, gitignore patterns), parsed, with the
    diagnostics of reading, parsing and the local passes; the global passes are the
    caller's.  `progress` hears how many of the files are parsed (cached ones count at once).

    Memory is what a 100,000-file repository is checked within, so nothing is
    kept longer than needed: a text is dropped once its file is parsed, or
    once hashed when the cache has its result (`Loaded.sources` keeps the
    texts it still has of files that reported something; `intentc.pipeline`
    reads back any other a diagnostic points into), and each pickle once it
    is unpickled and, when the cache changed, written.

    `reuse`, kept by a caller that loads the same repository again and again
    (the daemon's git mode), maps content keys to the results of its last load:
    a file unchanged since then gets that very result, not an unpickled copy,
    so the programs of two commits share their unchanged declarations instead
    of holding them twice (the whole program, once more), and nothing is
    unpickled for them.  It is refilled with this load's results."""
    with scan(paths, jobs, cache_dir, use_cache, progress, exclude) as inputs:
        return inputs.load(reuse)


@contextlib.contextmanager
def scan(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
         use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = ()) -> Iterator[Inputs]:
    """The files under `paths`, found and (with a cache) identified by content, not
    parsed yet: see `Inputs`.  The cache's files stay open for the block."""
    directory = (cache_dir or default_cache_dir()) if use_cache else None
    store = Store(directory, sorted(os.path.abspath(p) for p in paths)) if directory else None
    try:
        named, diags = discover_named(paths, exclude)
        inputs = Inputs(named, diags, jobs, progress) if store is None else _identify(named, diags, jobs, progress, store)
        del named           # `inputs.load()` lets go of the file list: a string per file
        yield inputs
    finally:
        if store is not None:
            store.close()


class Inputs:
    """One run's input files, found but not parsed.  With a cache they are also
    identified: each file's content key (from the stat index when it vouches for
    the file, else by reading and hashing it) and `digest`, which names the whole
    input (the files, their contents, the findings of discovery and reading) so
    that a result computed from all of it can be remembered (`remember`) and
    given back to a later run with the same input (`recall`) without loading
    anything: unpickling every result grows with the repository."""

    def __init__(self, named: list[tuple[str, str]], diags: list[Diagnostic], jobs: int | None,
                 progress: Progress, store: Store | None = None, keys: list[bytes] | None = None,
                 texts: dict[int, SourceFile] | None = None, fresh: bool = False) -> None:
        self._named = named             # (display name, path) of each file; with a cache, of each file read
        self._diags = diags
        self._jobs = jobs
        self._progress = progress
        self._store = store
        self._keys = keys or []
        self._texts = texts or {}       # read and not in the cache: what is left to parse
        self._fresh = fresh             # an empty cache: nothing read or stat'ed yet
        self.digest: bytes | None = None
        self.names_digest: bytes | None = None     # of the file list alone: names the `basis`
        if store is not None and not fresh:
            self._name_input()

    def _name_input(self) -> None:
        """`digest` and `names_digest`, from the files read, their keys and what reading found."""
        listing = "\0".join(name for name, _ in self._named).encode("utf-8", "surrogateescape")
        self.names_digest = hashlib.blake2b(listing, digest_size=32).digest()
        h = hashlib.blake2b(repr(self._diags).encode("utf-8", "surrogateescape"), digest_size=32)
        h.update(listing)
        h.update(b"".join(self._keys))
        self.digest = h.digest()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file read or vouched for, in discovery order (without a cache, or an empty
        one before the load reads them: every file found); empty once loaded (`Loaded.files`
        then), except after a load that filled an empty cache: the files it read."""
        return tuple(name for name, _ in self._named)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """What discovery and (with a cache) reading found."""
        return tuple(self._diags)

    def _slot(self, basis: bool) -> tuple[Memo, bytes] | None:
        """The memo's file and name (the digest of the whole input), or the basis's
        (the digest of the file list); None without a cache."""
        if self._store is None or self.digest is None or self.names_digest is None:
            return None
        return (self._store.basis, self.names_digest) if basis else (self._store.memo, self.digest)

    def recall(self, basis: bool = False) -> bytes | None:
        """What `remember` kept for this very input (with `basis`: for this very file
        list, `pipeline.basis`), or None."""
        slot = self._slot(basis)
        return slot[0].recall(slot[1]) if slot is not None else None

    def remember(self, blob: bytes, basis: bool = False) -> None:
        slot = self._slot(basis)
        if slot is not None:
            slot[0].remember(slot[1], blob)

    @property
    def keys(self) -> tuple[bytes, ...]:
        """Each file's content key, in `files` order (empty without a cache, or once loaded;
        an empty cache's are known once the load has read the files)."""
        return tuple(self._keys)

    def cached_result(self, key: bytes) -> FileResult | None:
        """The cache's result for a content key, or None (not there, or damaged)."""
        if self._store is None or key not in self._store.blobs.index:
            return None
        return _cached(self._store.blobs, key)

    def results_of(self, positions: Sequence[int]) -> list[FileResult] | None:
        """The results of a few files (positions in `files`), parsed or from the cache,
        without loading the rest; None when one of them cannot be had (not read this
        run and not in the cache).  The files stay for `load`."""
        out: list[FileResult] = []
        for i in positions:
            src = self._texts.get(i)
            result = _parse_guarded(src) if src is not None else self.cached_result(self._keys[i])
            if result is None:
                return None
            out.append(result)
        return out

    def load(self, reuse: Reused | None = None, behind: bool = False) -> Loaded:
        """Parse what the cache does not have, unpickle what it has (see `load`).  Once:
        the file list, the keys and the texts are handed over, so that they are
        gone before the caller's global passes build their own structures.
        `behind`: the cache may be finished by a forked child while the caller goes
        on (`cache.CacheWriter`; `intentc check`)."""
        named, keys, texts = self._named, self._keys, self._texts
        self._named, self._keys, self._texts = [], [], {}
        if self._store is None:
            return _load_uncached(named, list(self._diags), self._jobs, self._progress)
        if self._fresh:
            return self._load_fresh(named, self._store, reuse, behind)
        return _load_cached(named, list(self._diags), keys, texts, self._store, self._jobs, self._progress, reuse,
                            behind)

    def _load_fresh(self, named: list[tuple[str, str]], store: Store, reuse: Reused | None,
                    behind: bool = False) -> Loaded:
        """Fill an empty cache: every file read, keyed and parsed where it is parsed, a
        worker's share stored as the one pickle it arrives in, the parent's own pickled
        once it is done (`CacheWriter.later`: by then, on the core the workers leave
        idle while the global passes run, when `intentc` is the process); then the
        input named (`digest`, the files, their keys) and the stat index written as
        a run that had read and hashed every file first would have left them, from
        the `lstat` each read took before opening its file (a separate pass of
        `lstat`s is serial work, alone, before any worker starts).
        `reuse` (see `load`) is refilled with the results; nothing in it could be
        used, as no file's key was known before it was parsed."""
        self._fresh = False
        paths = [path for _, path in named]
        sizes = _sizes(paths)
        participants = _participants(len(paths), sum(sizes) if sizes is not None else None, self._jobs)
        chunks = _chunks(paths, participants, sizes)
        del paths
        starts = [0]
        for chunk in chunks:
            starts.append(starts[-1] + len(chunk))
        parts: list[list[Held]] = [[] for _ in chunks]
        seen = Observed.blank(len(named))    # each file's stat row, put in as its chunk arrives
        processed = 0
        self._progress(PARSING, 0, len(named))
        with collector.paused(After.FREEZE), store.blobs.writer(behind) as cache:
            for c, (records, share, blob) in shared_map(_read_parse_keyed_here, _read_parse_keyed_pickled,
                                                        _keyed_records, chunks, participants):
                chunks[c] = []
                keys = [key for _, _, key, _, _ in records if key is not None]
                if blob is not None:
                    cache.add(keys, blob)       # a worker's: the bytes it shipped
                else:
                    cache.later(keys, share)    # the parent's: pickled when the writer finishes
                given = iter(share)
                held: list[Held] = []
                for j, (name, diags, key, text, row) in enumerate(records):
                    seen.put(starts[c] + j, row)        # the row goes into `seen`, the result in its place
                    held.append((name, diags, key, text, next(given) if key is not None else None))
                parts[c] = held
                processed += len(records)
                self._progress(PARSING, processed, len(named))
        kept: list[int] = []                 # positions in `named` of the files read
        results: list[FileResult] = []
        texts: dict[str, str] = {}
        for c, part in enumerate(parts):
            for j, (name, read_diags, key, text, result) in enumerate(part):
                self._diags.extend(read_diags)
                if name is None or key is None or result is None:
                    continue
                i = starts[c] + j
                kept.append(i)
                self._named.append(named[i])
                self._keys.append(key)
                results.append(result)
                if text is not None:
                    texts[name] = text
            parts[c] = []
        if store.moment is not None:
            store.save_stat_index(index_of([n for n, _ in self._named], seen, kept, self._keys, store.moment))
        if reuse is not None:
            reuse.clear()
            reuse.update(zip(self._keys, results))
        self._name_input()
        return _loaded(results, list(self._diags), texts, self.files)


def _identify(named: list[tuple[str, str]], diags: list[Diagnostic], jobs: int | None, progress: Progress,
              store: Store) -> Inputs:
    """Each file's content key: the stat index's where it vouches for the file, else
    read and hashed (and the text kept when the cache has no result for it).  The
    stat index is rewritten when it is not what this run saw."""
    old = store.stat_index()
    if not old.names and not store.blobs.index:
        # Nothing cached (a first run, a fresh CI runner): nothing to look up before
        # parsing, so each file is read, keyed and parsed in one pass, in parallel
        # (`Inputs._load_fresh`), not read and hashed here first, alone, while no worker
        # has started (serial work that grows with the repository).
        return Inputs(named, diags, jobs, progress, store, fresh=True)
    seen = observe([path for _, path in named], max_file_bytes())
    vouched = old.vouched([name for name, _ in named], seen)
    kept: list[int] = []                 # positions in `named` of the files read or vouched for
    keys: list[bytes] = []
    texts: dict[int, SourceFile] = {}
    fresh = 0                            # files read and hashed
    for i, (name, path) in enumerate(named):
        key = vouched[i]
        if key is None:
            fresh += 1
            src = _read_into(path, diags)
            if src is None:
                continue
            key = _key(src)
            if key not in store.blobs.index:
                texts[len(keys)] = src
        kept.append(i)
        keys.append(key)
    # Rewritten when this run read a file the index is to list (its stat changed, it was racily
    # clean, it is new) or a listed file is gone; not for a file that cannot be read (a binary
    # file), which it never lists.  Every file kept and vouched for, as many as it lists: the same.
    if store.moment is not None and (fresh > len(named) - len(kept) or len(kept) != len(old.names)):
        store.save_stat_index(index_of([named[i][0] for i in kept], seen, kept, keys, store.moment))
    return Inputs([named[i] for i in kept], diags, jobs, progress, store, keys, texts)


def _load_uncached(named: list[tuple[str, str]], diags: list[Diagnostic], jobs: int | None,
                   progress: Progress) -> Loaded:
    paths = [path for _, path in named]
    sizes = _sizes(paths)
    participants = _participants(len(paths), sum(sizes) if sizes is not None else None, jobs)
    if participants > 1:
        return _load_in_workers(paths, sizes, participants, diags, progress)
    del paths
    results: list[FileResult] = []
    texts: dict[str, str] = {}
    read: list[str] = []
    with collector.paused(After.FREEZE):
        sources = []
        for _, path in named:
            src = _read_into(path, diags)
            if src is not None:
                sources.append(src)
        progress(PARSING, 0, len(sources))
        for n, src in enumerate(sources, 1):
            result = _parse_guarded(src)
            results.append(result)
            read.append(src.path)
            if result.diagnostics:
                texts[src.path] = src.text
            if n % 50 == 0 or n == len(sources):
                progress(PARSING, n, len(sources))
        del sources
    return _loaded(results, diags, texts, tuple(read))


def _load_cached(named: list[tuple[str, str]], diags: list[Diagnostic], keys: list[bytes],
                 pending: dict[int, SourceFile], store: Store, jobs: int | None, progress: Progress,
                 reuse: Reused | None = None, behind: bool = False) -> Loaded:
    blobs = store.blobs
    count = len(keys)
    missing = [i for i in range(count) if keys[i] not in blobs.index]
    dropped: set[int] = set()
    for i in missing:
        if i not in pending:            # vouched for by its stat, but the cache lost its result: read it now
            src = _read_into(named[i][1], diags)
            if src is None:
                dropped.add(i)
                continue
            keys[i] = _key(src)
            pending[i] = src
    todo = [i for i in missing if i not in dropped]
    todo_set = set(todo)
    rewrite = bool(todo) or len(blobs.index) != count - len(dropped)    # an unchanged cache is not written again
    texts: dict[str, str] = {}
    parsed: dict[int, FileResult] = {}
    finished = count - len(missing)     # cached results count at once
    progress(PARSING, finished, count)

    def done(i: int, result: FileResult) -> FileResult:
        nonlocal finished
        if i in todo_set:
            src = pending.pop(i)
            if result.diagnostics:
                texts[src.path] = src.text
            finished += 1
            if finished % 50 == 0 or finished == count:
                progress(PARSING, finished, count)
        return result

    with contextlib.ExitStack() as stack:
        stack.enter_context(collector.paused(After.FREEZE))
        cache = stack.enter_context(blobs.writer(behind)) if rewrite else None
        if cache is not None:
            cache.keeping(keys[i] for i in range(count) if i not in todo_set and i not in dropped)
        for j, result, blob in parse_all([pending[i] for i in todo], jobs):
            i = todo[j]
            parsed[i] = done(i, result)
            if cache is not None:
                if blob is not None:
                    cache.add((keys[i],), blob)
                else:
                    cache.later((keys[i],), [result])
        results: list[FileResult] = []
        kept: Reused = {}
        for i in range(count):
            if i in dropped:
                continue
            if i in parsed:
                results.append(parsed.pop(i))
                kept[keys[i]] = results[-1]
                continue
            same = reuse.get(keys[i]) if reuse is not None else None
            if same is not None:
                results.append(done(i, same))
                kept[keys[i]] = same
                if cache is not None:
                    cache.keep(keys[i], same)
                continue
            cached = _cached(blobs, keys[i])
            if cached is None:          # a damaged entry: parse the file again
                src = _read_into(named[i][1], diags)
                if src is None:
                    dropped.add(i)
                    continue
                cached = _parse_guarded(src)
                if cached.diagnostics:
                    texts[src.path] = src.text
                if cache is not None:
                    cache.later((keys[i],), [cached])
            elif cache is not None:
                cache.keep(keys[i], cached)
            results.append(done(i, cached))
            kept[keys[i]] = cached
    if reuse is not None:
        reuse.clear()
        reuse.update(kept)
    files = tuple(named[i][0] for i in range(count) if i not in dropped)
    return _loaded(results, diags, texts, files)


def _cached(blobs: ParseCache, key: bytes) -> FileResult | None:
    """The cache's result for `key` (which it has), or None when its entry is damaged:
    a damaged cache only costs a parse."""
    entry = blobs.entry(key)
    return entry if isinstance(entry, FileResult) else None


def _read_into(path: str, diags: list[Diagnostic]) -> SourceFile | None:
    """`read_source`, its findings added to `diags`: the file, or None when it cannot be used."""
    src, read_diags = read_source(path)
    diags.extend(read_diags)
    return src


def _load_in_workers(files: list[str], sizes: list[int] | None, participants: int, diags: list[Diagnostic],
                     progress: Progress) -> Loaded:
    """No cache to consult: the workers read the files as well as parse them.  Reading
    10,000 files was a third of a second of the parent's time before any worker
    started, and the parent held every text of the repository at once."""
    count = len(files)
    chunks = _chunks(files, participants, sizes)
    parts: list[list[Record]] = [[] for _ in chunks]
    processed = 0
    progress(PARSING, 0, count)
    with collector.paused(After.FREEZE):
        for c, records in shared_map(_read_and_parse_here, _read_and_parse_pickled, _records, chunks,
                                     participants):
            parts[c] = records
            processed += len(records)
            progress(PARSING, processed, count)
    results: list[FileResult] = []
    texts: dict[str, str] = {}
    read: list[str] = []
    for records in parts:
        for name, read_diags, result, text in records:
            diags.extend(read_diags)
            if name is None or result is None:
                continue
            read.append(name)
            results.append(result)
            if text is not None:
                texts[name] = text
    return _loaded(results, diags, texts, tuple(read))


def _loaded(results: list[FileResult], diags: list[Diagnostic], texts: dict[str, str],
            files: tuple[str, ...]) -> Loaded:
    program, parse_diags = merge(results)
    return Loaded(program, tuple(diags + parse_diags), texts, files)
