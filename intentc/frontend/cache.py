"""The parse cache on disk: what one run of the loader leaves for the next.

One set of files per set of input roots and compiler (`Store`), each file
replaced atomically (a concurrent or interrupted run reads the old file or
the new one, never half of one), each one ignored when it is missing or
unreadable — a cache only ever costs or saves time:

* `.cache` — each input file's parse result (a pickle) by content key
  (`ParseCache`);
* `.stat` — the stat index (`stat_index`): which files are unchanged
  without reading them;
* `.memo` — one result computed from all the inputs together (what
  `intentc check` reports after the global passes), with the digest of the
  inputs it was computed from (`Memo`);
* `.basis` — what the last full check found, per file, under the digest of
  the file list (`pipeline.basis`): a run with a few files edited in ways
  the global passes cannot see is checked from it.

They are pickles, so a file is read only when this user alone can have
written it (`intentc.cachetrust`); the folder is created private.  Beside
them, `compiler.fingerprint` keeps the fingerprint below (`fingerprint`).

Files of other roots or compilers not written for 30 days are removed
when a parse cache is written (`prune_stale`).

All are named by the compiler's fingerprint (`fingerprint`): the grammar,
the schemas, intentc's own code, the Python version and the versions of the
libraries that decide what a parse or a check finds.  Another compiler never
reads them.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import struct
import tempfile
import threading
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Sequence

from intentc import collector
from intentc.cachetrust import make_private_folder, open_trusted, read_trusted, write_private
from intentc.collector import After
from intentc.frontend.fingerprint import compiler_fingerprint
from intentc.frontend.stat_index import StatIndex

CACHE_ENV = "INTENTC_CACHE_DIR"
_PICKLE = pickle.HIGHEST_PROTOCOL
_TRAILER = struct.Struct("=Q")      # where the index starts


def default_cache_dir() -> str | None:
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        return explicit or None   # INTENTC_CACHE_DIR= (empty) disables the cache
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "intentc")


def _stem(directory: str, roots: Sequence[str]) -> Path:
    ident = hashlib.sha256(("\0".join(roots) + "\0" + compiler_fingerprint(directory)).encode())
    return Path(directory) / f"parse-{ident.hexdigest()[:24]}"


class BlobIndex:
    """Where each key's result is in the cache file: one dictionary from key to row,
    the rows' (offset, length, member, members) in one array: the pickle at offset
    holds the results of one chunk of files (`ParseCache`), `members` of them, the
    key's at `member`.
    As a dictionary of tuples it held two ints and a tuple per file more, for every
    file, held during every `check` that uses the cache (the daemon's git
    mode peaks there)."""

    __slots__ = ("_row", "_spans")
    WIDTH = 4

    def __init__(self) -> None:
        self._row: dict[bytes, int] = {}
        self._spans = array("Q")           # offset, length, member, members of row 0, then row 1, ...

    def add(self, key: bytes, offset: int, length: int, member: int = 0, members: int = 1) -> None:
        row = self._row.setdefault(key, len(self._row))
        w = self.WIDTH
        if row * w == len(self._spans):
            self._spans.extend((offset, length, member, members))
        else:
            self._spans[w * row:w * row + w] = array("Q", (offset, length, member, members))

    def span(self, key: bytes) -> tuple[int, int, int]:
        """(offset, length, member) of `key`'s result; KeyError when there is none."""
        row = self.WIDTH * self._row[key]
        return self._spans[row], self._spans[row + 1], self._spans[row + 2]

    def members(self, key: bytes) -> int:
        """How many results the pickle holding `key`'s holds."""
        return self._spans[self.WIDTH * self._row[key] + 3]

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def __len__(self) -> int:
        return len(self._row)

    def dump(self, out: BinaryIO) -> None:
        pickle.dump((list(self._row), pickle.PickleBuffer(memoryview(self._spans).toreadonly())), out, _PICKLE)

    @classmethod
    def loads(cls, data: bytes) -> BlobIndex:
        keys, spans = pickle.loads(data)
        if not isinstance(keys, list) or not all(type(k) is bytes for k in keys):
            raise TypeError("not a parse cache index")
        index = cls()
        index._spans.frombytes(spans)
        if len(index._spans) != cls.WIDTH * len(keys):
            raise ValueError("a parse cache index whose rows do not match its keys")
        index._row = dict(zip(keys, range(len(keys))))
        if len(index._row) != len(keys):
            raise ValueError("a parse cache index with a key twice")
        return index


class ParseCache:
    """Each file's result by content key; adding or editing a file reparses only that file.

    The file holds pickles back to back, then an index (each key's pickle and its
    place in it: `BlobIndex`) and the index's offset.  A pickle holds the results of
    one chunk of files, as a list, or one file's result alone: the chunk a worker
    parsed is shipped to the parent as one pickle, and those very bytes are stored
    (a first run pickles nothing twice, and one pickle of a chunk is cheaper to
    make and to load than one per file).  The index is read when first needed (a
    run the memo answers never needs it, and one dictionary loads quickly); a pickle
    is read and loaded when one of its results is asked for (`entry`), and kept
    until another one is (files are asked for in the order they were stored).  A new
    cache is written as results arrive (`writer`): no run holds every pickle of a
    100,000-file repository at once."""

    def __init__(self, directory: str, roots: Sequence[str]) -> None:
        self.file = _stem(directory, roots).with_suffix(".cache")
        self._index: BlobIndex | None = None
        self._fd: int | None = None
        self._loaded: tuple[int, list[object] | None] | None = None     # the last pickle loaded, by offset

    @property
    def index(self) -> BlobIndex:
        if self._index is None:
            self._index = self._open()
        return self._index

    def _open(self) -> BlobIndex:
        fd = open_trusted(self.file)
        if fd is None:
            return BlobIndex()
        try:
            size = os.fstat(fd).st_size
            (start,) = _TRAILER.unpack(os.pread(fd, _TRAILER.size, size - _TRAILER.size))
            with collector.paused(After.FREEZE):
                index = BlobIndex.loads(os.pread(fd, size - _TRAILER.size - start, start))
        except (OSError, struct.error, pickle.UnpicklingError, EOFError, AttributeError, TypeError,
                ValueError, IndexError, ImportError, MemoryError, OverflowError):
            os.close(fd)
            return BlobIndex()
        self._fd = fd
        return index

    def read(self, offset: int, length: int) -> bytes:
        assert self._fd is not None
        return os.pread(self._fd, length, offset)

    def entry(self, key: bytes) -> object:
        """What is stored for `key` (the caller checks it is a result), or None when
        its pickle is damaged; KeyError when there is none."""
        offset, length, member = self.index.span(key)
        if self._loaded is None or self._loaded[0] != offset:
            self._loaded = (offset, _members(self.read(offset, length)))
        members = self._loaded[1]
        return members[member] if members is not None and member < len(members) else None

    def close(self) -> None:
        """Close the file and drop the index (an entry per file; a later use reads it again)."""
        self._index = None
        self._loaded = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def writer(self, behind: bool = False) -> Iterator[CacheWriter]:
        """A writer of the new cache; the file is replaced atomically when the block
        ends, so a concurrent or interrupted run never reads half a cache.  A cache
        that cannot be written only costs speed.  `behind`: the writer may finish in a
        forked child (see `CacheWriter`); a writer still running from an earlier load
        of this process is waited for first, so caches are replaced in order."""
        wait_for_writers()
        try:
            make_private_folder(self.file.parent)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
        except OSError:
            yield CacheWriter(None, self)
            return
        out = CacheWriter(os.fdopen(fd, "wb"), self, tmp, behind)
        try:
            yield out
            out.finish()
        finally:
            out.abandon()


def _members(blob: bytes) -> list[object] | None:
    """The results a pickle holds (a chunk's list, or one result), or None when damaged."""
    try:
        loaded = pickle.loads(blob)
    except Exception:       # whatever damaged bytes make the unpickler raise
        return None
    return loaded if type(loaded) is list else [loaded]


# Pickles of results kept from the old cache (`CacheWriter.keep`) are copied whole while at
# least this share of what each holds is still wanted; below it, the wanted results are
# pickled again, so a cache edited file by file never grows past about twice its content.
KEPT_SHARE = 0.5
_GROUP = 100                # results pickled together, at most, when the writer pickles them


class CacheWriter:
    """The entries of a new parse cache, written to a temporary file as they come:

    * `add(keys, blob)` — a pickle already made (a worker's chunk, a parse): written now;
    * `later(keys, results)` — results this process holds, pickled when the writer
      finishes;
    * `keep(key, result)` — an entry of the old cache still wanted (all of them
      named first: `keeping`): its pickle copied now (once for all the keys it
      holds), or, when too little of what it holds is wanted, the result left to
      `later`.

    What `later` leaves is done when the block ends: in a forked child when the
    caller asks for it (`behind`: `intentc check`, whose process ends soon), the
    process ends through the console entry point (`collector.holding`) and nothing
    else runs in it, so the work runs on another core while the caller goes on (the
    global passes, the report; the child is waited for before the process exits:
    `wait_for_writers`); else right there (tests, the daemon, which must not double
    its memory for a while, a wrapper calling `main()`)."""

    def __init__(self, out: BinaryIO | None, old: ParseCache, tmp: str | None = None, behind: bool = False) -> None:
        self._behind = behind
        self._out = out
        self._old = old
        self._tmp = tmp
        self._index = BlobIndex()
        self._later: list[tuple[Sequence[bytes], Sequence[object]]] = []
        self._wanted: Counter[int] = Counter()     # old pickle (offset) -> how many of its keys are kept
        self._copied: dict[int, int] = {}          # old pickle (offset) -> where it is in the new file

    def add(self, keys: Sequence[bytes], blob: bytes) -> None:
        """`blob`: the pickle of the results of `keys`, in order (a list, or one result)."""
        if self._out is None:
            return
        try:
            offset = self._out.tell()
            self._out.write(blob)
        except OSError:
            self.abandon()
            return
        for member, key in enumerate(keys):
            self._index.add(key, offset, len(blob), member, len(keys))

    def later(self, keys: Sequence[bytes], results: Sequence[object]) -> None:
        if self._out is not None and keys:
            self._later.append((keys, results))

    def keeping(self, keys: Iterable[bytes]) -> None:
        """The keys of the old cache that `keep` will be given: what decides which pickles are copied."""
        self._wanted = Counter(self._old.index.span(key)[0] for key in keys)

    def keep(self, key: bytes, result: object) -> None:
        if self._out is None:
            return
        old = self._old.index
        offset, length, member = old.span(key)
        members = old.members(key)
        if self._wanted[offset] < KEPT_SHARE * members:
            self.later((key,), (result,))
            return
        if offset not in self._copied:
            try:
                self._copied[offset] = self._out.tell()
                self._out.write(self._old.read(offset, length))
            except OSError:
                self.abandon()
                return
        self._index.add(key, self._copied[offset], length, member, members)

    def finish(self) -> None:
        if self._out is None:
            return
        if self._later and self._behind and collector.holding() and _may_fork():
            try:
                self._out.flush()
                pid = os.fork()
            except OSError:
                pid = -1
            if pid == 0:            # the child: write the rest, replace the file, and end
                code = 1
                try:
                    self._complete()
                    code = 0
                finally:
                    self.abandon()      # interrupted: no temporary file left behind
                    os._exit(code)
            if pid > 0:
                if not _writers:
                    collector.before_exit(wait_for_writers)
                    atexit.register(wait_for_writers)
                _writers.append(pid)
                self._out.close()       # flushed before the fork: nothing more is written here
                self._out = None
                self._tmp = None        # the child's now
                return
        self._complete()

    def _complete(self) -> None:
        """Pickle what `later` left (single results together, up to `_GROUP` a pickle),
        write the index, replace the cache."""
        out = self._out
        if out is None:
            return
        singles: list[tuple[bytes, object]] = []
        for keys, results in self._later:
            if len(keys) == 1:
                singles.append((keys[0], results[0]))
            else:
                self.add(keys, pickle.dumps(list(results), _PICKLE))
        self._later = []
        for i in range(0, len(singles), _GROUP):
            group = singles[i:i + _GROUP]
            self.add([key for key, _ in group], pickle.dumps([result for _, result in group], _PICKLE))
        if self._out is None:
            return
        try:
            start = out.tell()
            self._index.dump(out)
            out.write(_TRAILER.pack(start))
            out.close()
            assert self._tmp is not None
            os.replace(self._tmp, self._old.file)
        except OSError:
            self.abandon()
            return
        self._out = None
        self._tmp = None
        prune_stale(self._old.file.parent, keep=self._old.file.with_suffix("").name)

    def abandon(self) -> None:
        """Close and remove the temporary file unless it became the cache (or a child has
        it): after a failed write no cache is written this run, the old one stays."""
        out, self._out = self._out, None
        if out is not None:
            with contextlib.suppress(OSError):
                out.close()
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


_writers: list[int] = []            # forked writers not waited for yet


def _may_fork() -> bool:
    """A fork is safe to write from: this platform has one and no other thread runs
    (a thread holding a lock at the fork would leave it held in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def wait_for_writers() -> None:
    """Wait for the cache writers forked by this process (a later run must find the cache whole)."""
    atexit.unregister(wait_for_writers)
    while _writers:
        pid = _writers.pop()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


STALE_DAYS = 30
_STALE_SUFFIXES = (".cache", ".stat", ".memo", ".basis")


def prune_stale(folder: Path, keep: str) -> None:
    """Remove the cache files of other roots or compilers not written for `STALE_DAYS`:
    each intentc upgrade, and each repository checked once, left a parse cache behind
    for good, as large as its repository's results.  A repository checked less often than that
    only loses its cache once.  Run when a parse cache is written, so at most once a run."""
    cutoff = time.time() - STALE_DAYS * 86400
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if not name.startswith("parse-") or name.startswith(keep + ".") or not name.endswith(_STALE_SUFFIXES):
                continue
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)


class Memo:
    """One result computed from a whole run's inputs, kept with the digest of
    those inputs (`batch.Inputs.digest`): `recall` gives it back only for the same digest."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def recall(self, digest: bytes) -> bytes | None:
        data = read_trusted(self.file)
        if data is None:
            return None
        return data[len(digest):] if data[:len(digest)] == digest else None

    def remember(self, digest: bytes, blob: bytes) -> None:
        write_private(self.file, digest + blob)


class Store:
    """The cache files of one set of input roots: the parse results, the stat
    index and the memo.  Opening it creates the next stat index's temporary
    file, whose mtime is this run's `moment` (see `stat_index`); it becomes the
    index (`save_stat_index`) or is removed (`close`)."""

    def __init__(self, directory: str, roots: Sequence[str]) -> None:
        self.blobs = ParseCache(directory, roots)
        stem = self.blobs.file.with_suffix("")
        self.stat_file = stem.with_suffix(".stat")
        self.memo = Memo(stem.with_suffix(".memo"))
        self.basis = Memo(stem.with_suffix(".basis"))     # `pipeline.basis`: by the file list's digest
        self._next: tuple[int, str] | None = None       # the next index's temporary file
        self.moment: int | None = None
        try:
            make_private_folder(self.stat_file.parent)
            fd, tmp = tempfile.mkstemp(dir=self.stat_file.parent, suffix=".tmp")
        except OSError:
            return
        self._next = (fd, tmp)
        try:
            self.moment = os.fstat(fd).st_mtime_ns       # the file system's clock, now
        except OSError:
            self.close()

    def stat_index(self) -> StatIndex:
        return StatIndex.read(self.stat_file)

    def save_stat_index(self, index: StatIndex) -> None:
        """Replace the stat index (its moment must be this run's `moment`)."""
        if self._next is None:
            return
        fd, tmp = self._next
        self._next = None
        try:
            with os.fdopen(fd, "wb") as fh:
                index.write(fh)
            os.replace(tmp, self.stat_file)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def close(self) -> None:
        self.blobs.close()
        if self._next is not None:
            fd, tmp = self._next
            self._next = None
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
