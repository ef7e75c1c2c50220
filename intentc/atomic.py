"""Writing intentc's output files: atomic where that is safe, through anything else.

The rule (issue #36): a file intentc writes never replaces something that is
not a regular file.  `--out /dev/stdout`, `--out /dev/null` (run as root), a
FIFO another process reads, or a symbolic link a user keeps in their tree
must stay what they are, as they do for `kubectl ... > PATH` or `cp x PATH`.

- A regular file, or a path where nothing is yet, is replaced atomically: a
  temporary file beside it, then `os.replace`, so readers see the old file or
  the new one, never half of one.
- A symbolic link is followed: its target is written (replaced atomically
  when that is a regular file, created when the link dangles); the link stays.
- A character device, a FIFO or a socket, or a path that reaches the process's
  own descriptors (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`), is opened
  and written in place: there is nothing to replace atomically.
- `-` (`STDOUT`), for a command that writes one file, is standard output.

Every command that writes a file goes through `write_atomic` / `write_output`,
and every output directory through `output_dir`, so the rule holds in one place.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from pathlib import Path

STDOUT = "-"

# Longer chains of links than this are a loop; the kernel's own limit is 40.
_MAX_LINKS = 40


def is_stdout(path: str | Path | None) -> bool:
    """Whether a single-file output names standard output (`--out -`)."""
    return path is not None and str(path) == STDOUT


def write_output(path: str | Path, text: str) -> None:
    """Write one output file (`--out FILE`): `-` is standard output, anything else
    goes through `write_atomic`."""
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomic(path, text)


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8, `\\n` line ends) to `path` by the rule above.

    Raises OSError (`IsADirectoryError` for a directory) for the caller to report."""
    name = os.fspath(path)
    try:
        st = os.stat(name)                   # follows links, /proc's magic ones too
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if st is not None and (not stat.S_ISREG(st.st_mode) or _reaches_proc(name)):
        _write_through(name, text, append=stat.S_ISREG(st.st_mode))
        return
    # a regular file, nothing yet, or a dangling link: the file itself is replaced, never a link to it
    _replace(Path(os.path.realpath(name)), text, st)


def output_dir(path: str | Path) -> Path:
    """An output directory (`compile`'s and `watch`'s), made when missing.

    A link to a directory is written into; a path that exists and is not a
    directory (a file, a device, a dangling link) raises NotADirectoryError with
    a message that says so, rather than the bare "File exists" of mkdir."""
    out = Path(path)
    if out.is_dir():                        # follows a link to a directory
        return out
    if os.path.lexists(out):
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", os.fspath(out))
    out.mkdir(parents=True, exist_ok=True)
    return out


def _write_through(name: str, text: str, append: bool) -> None:
    """Open what `name` reaches and write into it: a device, a FIFO (this blocks until
    a reader opens it, as a shell redirection does), a descriptor of this process.

    `append`: a regular file reached through this process's descriptor (`--out
    /dev/stdout` under `> file` or `>> file`) is written at its end, never truncated
    from the start: the shell already truncated it, or asked for appending."""
    flags = os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(name, flags)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def _replace(target: Path, text: str, st: os.stat_result | None) -> None:
    """The atomic write of a regular file (or a new one), keeping an existing file's mode."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, st.st_mode & 0o777 if st is not None else 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _reaches_proc(name: str) -> bool:
    """Whether `name`, following its links one at a time, passes through /proc:
    `/dev/stdout` and `/dev/fd/1` are links to `/proc/self/fd/1`, whose own target
    ("pipe:[123]", a terminal, or a file the shell opened for `>>`) is a descriptor
    this process holds, to write into, never a path to replace."""
    here = os.path.abspath(name)
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(os.path.dirname(here))
        here = os.path.join(folder, os.path.basename(here))
        if here == "/proc" or here.startswith("/proc/"):
            return True
        if not os.path.islink(here):
            return False
        here = os.path.normpath(os.path.join(folder, os.readlink(here)))
    return False
