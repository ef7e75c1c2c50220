"""Which input files are unchanged since the last run, known from `lstat` alone (git's index).

A warm `intentc check` read and hashed every file only to find the content
keys it already had.  The stat
index records, for each file a run read, what `lstat` said of it just
before it was read (size, mtime, ctime, inode, device) and its content key;
the next run takes a file whose `lstat` says exactly the same to have the
same content, and does not open it.  A `touch` changes the stat, not the
content: the file is read and hashed again, and its key still finds the
cached result.

Racily clean files (git's term, Documentation/technical/racy-git.txt): two
writes within one tick of the file system's clock leave the same
timestamps, so a file read between them could match in size, mtime and
ctime with other content.  The index therefore records the moment the run
that wrote it began — read off the file system's clock, as the
modification time of the index's own temporary file, created before any
input is looked at — and a file whose mtime or ctime is not strictly older
than that moment less `SLACK_NS` is read and hashed again whatever its stat
says.  The slack covers inputs on a file system with coarser timestamps than
the cache directory's (FAT keeps two seconds) and a clock that lags the
cache directory's by less than that; a network file system whose clock lags
by more is outside what a stat can vouch for (as it is for git).

Only what `sources.read_guarded` would read without a finding is vouched
for this way: a regular file within the size limit.  A symbolic link is
always read (its target can change under an unchanged link).

On disk: one pickle of a few flat byte strings (the names, three signed and
two unsigned 64-bit integers per file, the 20-byte keys); an unchanged
repository is recognised by comparing whole arrays, not file by file.
"""

from __future__ import annotations

import os
import pickle
import stat
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Sequence

from intentc.cachetrust import read_trusted

KEY_BYTES = 20                    # a content key: blake2b of the path and the text
SLACK_NS = 2_000_000_000
_FORMAT = 1
_TIMES = 3                        # size, mtime_ns, ctime_ns per file (-1 size: must be read)
_IDS = 2                          # inode, device per file
_NAMES = "surrogateescape"        # how names with undecodable bytes are stored
Row = tuple[int, int, int, int, int]      # size, mtime, ctime, inode, device
UNVOUCHED: Row = (-1, 0, 0, 0, 0)


def times_of(st: os.stat_result) -> tuple[int, int]:
    """(mtime, ctime) of a stat, as the index records them (tests stand in a clock that ticks slowly)."""
    return st.st_mtime_ns, st.st_ctime_ns


def row_of(st: os.stat_result | None, limit: int) -> Row:
    """What the index records of one file's `lstat`: `UNVOUCHED` for anything
    `sources.read_guarded` would not read without a finding (not a regular file,
    over the size limit, no stat)."""
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        return UNVOUCHED
    mtime, ctime = times_of(st)
    return st.st_size, mtime, ctime, st.st_ino, st.st_dev


@dataclass(frozen=True)
class Observed:
    """What `lstat` said of each file of a run, in order: (size, mtime, ctime) and
    (inode, device) per file; size -1 marks a file the index may not vouch for."""

    times: array   # array("q")
    ids: array     # array("Q")

    def row(self, i: int) -> tuple[array, array]:
        return self.times[_TIMES * i:_TIMES * (i + 1)], self.ids[_IDS * i:_IDS * (i + 1)]

    @classmethod
    def blank(cls, count: int) -> Observed:
        """`count` rows to be filled in (`put`) as the files are read, in any order."""
        return cls(array("q", UNVOUCHED[:_TIMES]) * count, array("Q", UNVOUCHED[_TIMES:]) * count)

    def put(self, i: int, row: Row) -> None:
        t, d = _TIMES * i, _IDS * i
        self.times[t:t + _TIMES] = array("q", row[:_TIMES])
        self.ids[d:d + _IDS] = array("Q", row[_TIMES:])


def observe(paths: Sequence[str], limit: int) -> Observed:
    """`lstat` every path (before any is read: a write after its stat makes the
    next run's stat differ, a write before is in what is read)."""
    times, ids = array("q"), array("Q")
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        row = row_of(st, limit)
        times.extend(row[:_TIMES])
        ids.extend(row[_TIMES:])
    return Observed(times, ids)


class StatIndex:
    """The index one run left: names, their stat rows, their keys, and its moment."""

    def __init__(self, names: list[str], seen: Observed, keys: bytes, moment: int | None) -> None:
        self.names, self.seen, self.keys, self.moment = names, seen, keys, moment

    @classmethod
    def empty(cls) -> StatIndex:
        return cls([], Observed(array("q"), array("Q")), b"", None)

    @classmethod
    def read(cls, file: Path) -> StatIndex:
        """The index in `file`, or an empty one when it is missing or not an index."""
        try:
            data = read_trusted(file)
            if data is None:
                return cls.empty()
            fmt, moment, names_blob, times_blob, ids_blob, keys = pickle.loads(data)
            if fmt != _FORMAT or not isinstance(moment, int):
                return cls.empty()
            names = names_blob.decode("utf-8", _NAMES).split("\0") if names_blob else []
            times, ids = array("q"), array("Q")
            times.frombytes(times_blob)
            ids.frombytes(ids_blob)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError,
                IndexError, ImportError, MemoryError, UnicodeDecodeError):
            return cls.empty()
        n = len(names)
        if len(times) != _TIMES * n or len(ids) != _IDS * n or not isinstance(keys, bytes) \
                or len(keys) != KEY_BYTES * n:
            return cls.empty()
        return cls(names, Observed(times, ids), keys, moment)

    def write(self, out: BinaryIO) -> None:
        """The index, pickled straight into `out` (framed: the daemon rewrites it at every
        commit, and the whole pickle held as one more copy would be a second index)."""
        names = "\0".join(self.names).encode("utf-8", _NAMES)
        times, ids = (pickle.PickleBuffer(memoryview(a).toreadonly()) for a in (self.seen.times, self.seen.ids))
        pickle.dump((_FORMAT, self.moment, names, times, ids, self.keys), out, pickle.HIGHEST_PROTOCOL)

    def vouched(self, names: list[str], seen: Observed) -> list[bytes | None]:
        """Each file's content key where the index vouches for it (same name and
        stat, not racily clean), else None: that file must be read."""
        if self.moment is None:
            return [None] * len(names)
        cutoff = self.moment - SLACK_NS
        times = seen.times
        same = names == self.names
        if (names and same and times == self.seen.times and seen.ids == self.seen.ids
                and min(times[0::_TIMES]) >= 0
                and max(max(times[1::_TIMES]), max(times[2::_TIMES])) < cutoff):
            keys = self.keys            # the common case, a repository nobody touched: whole arrays
            return [keys[k:k + KEY_BYTES] for k in range(0, len(keys), KEY_BYTES)]
        # the same files in the same order (a few edited, as in each commit the daemon follows):
        # row i is file i, no name -> row map (a dictionary entry per file)
        at = None if same else {name: j for j, name in enumerate(self.names)}
        out: list[bytes | None] = []
        for i, name in enumerate(names):
            j = i if at is None else at.get(name)
            t = _TIMES * i
            if (j is None or times[t] < 0 or max(times[t + 1], times[t + 2]) >= cutoff
                    or seen.row(i) != self.seen.row(j)):
                out.append(None)
            else:
                out.append(self.keys[KEY_BYTES * j:KEY_BYTES * (j + 1)])
        return out


class IndexBuilder:
    """The next index, row by row, as a run reads or vouches for its files."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.times, self.ids = array("q"), array("Q")
        self.keys = bytearray()

    def add(self, name: str, seen: Observed, i: int, key: bytes) -> None:
        times, ids = seen.row(i)
        self.names.append(name)
        self.times.extend(times)
        self.ids.extend(ids)
        self.keys += key

    def build(self, moment: int) -> StatIndex:
        return StatIndex(self.names, Observed(self.times, self.ids), bytes(self.keys), moment)


def index_of(names: list[str], seen: Observed, kept: list[int], keys: list[bytes], moment: int) -> StatIndex:
    """The index of the files at positions `kept` of `seen`, named `names`, keyed `keys`:
    when every file was kept (a readable repository: a first run, or a later one whose
    index is rewritten), `seen`'s arrays as they are, not copied row by row (a Python
    loop over every file)."""
    if len(kept) * _TIMES == len(seen.times):
        return StatIndex(names, seen, b"".join(keys), moment)
    builder = IndexBuilder()
    for name, i, key in zip(names, kept, keys):
        builder.add(name, seen, i, key)
    return builder.build(moment)
