"""Which cache files may be unpickled: those only this user can have written.

Every cache intentc keeps (parse results, the stat index, check's memo, the
diff's blob cache, lark's analysed grammar) is a pickle, and unpickling runs
whatever the bytes say.  Whoever can write a cache file, or swap files in
its folder, can therefore run code in the next `intentc` run of its owner.
So, as ssh does with `~/.ssh` and git with `safe.directory`, a cache file is
read only when

* the file is owned by the effective user and not writable by group or
  others (checked on the open descriptor, `fstat`, so that the file checked
  is the file read), and it is not a symbolic link (`O_NOFOLLOW`);
* its folder is owned by the effective user (or by root) and not writable
  by everyone (unless sticky, as /tmp is).  A folder its group may write
  (umask 002) is accepted: another user could rename files in it, but not
  make a file owned by this user, so what passes the file's check was
  written as this user.

Anything else is a cache miss — the run parses instead, slower but with the
same output — and one warning per folder says why.  Cache folders are
created private (0700).  What this cannot protect against is a writer acting
as the same user: a CI job restoring a cache that an untrusted job saved
(README, "Caching in CI").
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("intentc.cache")

_warned: set[str] = set()


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _why_not(st: os.stat_result, what: str) -> str | None:
    """Why a cache file with this status may not be unpickled, or None."""
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        return f"{what} belongs to user id {st.st_uid}, not to this user ({euid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _distrust(folder: str, why: str) -> None:
    if folder not in _warned:
        _warned.add(folder)
        log.warning("intentc: not using the cache in %s: %s (a cache is unpickled: "
                    "keep it private, e.g. chmod 700)", folder, why)


def folder_trusted(folder: str | Path) -> bool:
    """Whether files in `folder` may be read; False (with a warning) when not."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    euid = _euid()
    why = None
    if euid is not None and st.st_uid not in (euid, 0):
        why = f"the folder belongs to user id {st.st_uid}, not to this user ({euid})"
    elif st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        why = f"the folder is writable by every user (mode {stat.S_IMODE(st.st_mode):04o})"
    if why is not None:
        _distrust(str(folder), why)
        return False
    return True


def open_trusted(path: str | Path) -> int | None:
    """A read-only descriptor of `path` when it may be unpickled, else None (a
    missing file says nothing; an untrusted one also warns once per folder)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        why = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else _why_not(st, os.path.basename(path))
        if why is None and folder_trusted(folder):
            return fd
        if why is not None:
            _distrust(folder, why)
    except OSError:
        pass
    os.close(fd)
    return None


def read_trusted(path: str | Path) -> bytes | None:
    """The bytes of `path` when it may be unpickled, else None."""
    fd = open_trusted(path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def make_private_folder(folder: str | Path) -> None:
    """Create `folder` (and missing parents) readable and writable by this user only;
    an existing folder is left as it is (`folder_trusted` judges it).  Raises OSError."""
    os.makedirs(folder, mode=0o700, exist_ok=True)


def write_private(path: str | Path, data: bytes, when: Callable[[int], bool] | None = None) -> None:
    """Replace the cache file `path` with `data` atomically, in a private folder; a cache
    that cannot be written only costs speed, so nothing is raised.  `when(moment)`, when
    given, decides whether to write at all from the file system's clock at the write
    (the temporary file's mtime, in nanoseconds)."""
    folder = os.path.dirname(os.fspath(path))
    tmp = None
    try:
        make_private_folder(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            if when is not None and not when(os.fstat(fh.fileno()).st_mtime_ns):
                return
            fh.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
