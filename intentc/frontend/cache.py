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
  the file list (`intentc.basis`): a run with a few files edited in ways
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

import contextlib
import hashlib
import os
import pickle
import struct
import tempfile
import time
from array import array
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

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
    """Where each key's pickle is in the cache file: one dictionary from key to row,
    the rows' (offset, length) in one array.  As a dictionary of (offset, length)
    tuples it held two ints and a tuple per file more: 7 MB at 100,000 files, held
    during every `check` that uses the cache (the daemon's git mode peaks there)."""

    __slots__ = ("_row", "_spans")

    def __init__(self) -> None:
        self._row: dict[bytes, int] = {}
        self._spans = array("Q")           # offset, length of row 0, then row 1, ...

    def add(self, key: bytes, offset: int, length: int) -> None:
        row = self._row.setdefault(key, len(self._row))
        if row * 2 == len(self._spans):
            self._spans.extend((offset, length))
        else:
            self._spans[2 * row:2 * row + 2] = array("Q", (offset, length))

    def span(self, key: bytes) -> tuple[int, int]:
        """(offset, length) of `key`'s pickle; KeyError when there is none."""
        row = 2 * self._row[key]
        return self._spans[row], self._spans[row + 1]

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
        if len(index._spans) != 2 * len(keys):
            raise ValueError("a parse cache index whose rows do not match its keys")
        index._row = dict(zip(keys, range(len(keys))))
        if len(index._row) != len(keys):
            raise ValueError("a parse cache index with a key twice")
        return index


class ParseCache:
    """Each file's pickled result by content key; adding or editing a file
    reparses only that file.

    The file holds the pickles back to back, then an index (the keys, and the
    offset and length of each one's pickle: `BlobIndex`) and the index's
    offset.  The index is read when first needed (a run the memo answers
    never needs it; 100,000 entries load in 0.06 s);
    each pickle is read when its file is loaded (`read`) and dropped once
    unpickled, and a new cache is written pickle by pickle as results arrive
    (`writer`): no run holds every pickle of a 100,000-file repository at once
    (reading them all first had the cached run peak 120 MB above the cold one)."""

    def __init__(self, directory: str, roots: Sequence[str]) -> None:
        self.file = _stem(directory, roots).with_suffix(".cache")
        self._index: BlobIndex | None = None
        self._fd: int | None = None

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

    def read(self, key: bytes) -> bytes:
        offset, length = self.index.span(key)
        assert self._fd is not None
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        """Close the file and drop the index (20 MB at 100,000 files; a later use reads it again)."""
        self._index = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def writer(self) -> Iterator[Callable[[bytes, bytes], None]]:
        """`add(key, pickle)` for each entry of the new cache; the file is
        replaced atomically when the block ends, so a concurrent or interrupted
        run never reads half a cache.  A cache that cannot be written only costs speed."""
        try:
            make_private_folder(self.file.parent)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
        except OSError:
            yield lambda key, blob: None
            return
        fh = os.fdopen(fd, "wb")
        index = BlobIndex()
        failed = False

        def add(key: bytes, blob: bytes) -> None:
            nonlocal failed
            if not failed:
                try:
                    index.add(key, fh.tell(), len(blob))
                    fh.write(blob)
                except OSError:
                    failed = True

        try:
            yield add
            if not failed:
                with contextlib.suppress(OSError):
                    start = fh.tell()
                    index.dump(fh)
                    fh.write(_TRAILER.pack(start))
                    fh.close()
                    os.replace(tmp, self.file)
                    prune_stale(self.file.parent, keep=self.file.with_suffix("").name)
        finally:
            fh.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)


STALE_DAYS = 30
_STALE_SUFFIXES = (".cache", ".stat", ".memo", ".basis")


def prune_stale(folder: Path, keep: str) -> None:
    """Remove the cache files of other roots or compilers not written for `STALE_DAYS`:
    each intentc upgrade, and each repository checked once, left a parse cache behind
    for good (150 MB at 100,000 files).  A repository checked less often than that
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
        self.basis = Memo(stem.with_suffix(".basis"))     # `intentc.basis`: by the file list's digest
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
