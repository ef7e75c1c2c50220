"""Which compiler made a cache: the fingerprint that names every cache file.

A cached result is valid only for the exact grammar, schemas, code and
libraries that made it, so the fingerprint hashes intentc's own sources (its
``.py`` files, the grammar, the schemas), the Python version and the
versions of the libraries whose behaviour shows in a result.  Computing it
reads and hashes every source of the compiler and asks `importlib.metadata`
for seven versions: a noticeable share of a cached `check` that has nothing
else to do.

So it is kept (`compiler.fingerprint` in the cache folder) under a *stamp*
that costs only `stat` calls and module lookups: the size, times, inode and
device of every source file, and, for each library, where its module is
found and the modification time of the folder it is installed in
(installing, upgrading or removing a distribution adds or removes its
``.dist-info`` folder there, which changes the folder's mtime).  Not every
`sys.path` folder: the first is the current directory or the script's, whose
mtime changes with every file written there.  A stamp that matches gives the
kept fingerprint back; anything else computes it again.  As in the stat
index (`stat_index`), a stamp is kept only when no source was written within
`SLACK_NS` of the moment it is written (read off the file system's clock, as
the mtime of the kept file's own temporary file): an edit in the same tick
of the clock as the stamp could otherwise leave the same stat.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

from intentc import __version__
from intentc.cachetrust import read_trusted, write_private
from intentc.frontend.stat_index import SLACK_NS

# Distributions whose behaviour shows in a result (the parsers, the schema validators,
# whose messages are reported, the graph algorithms: cycle order), with their modules.
LIBRARIES = (("lark", "lark"), ("lark-cython", "lark_cython"), ("PyYAML", "yaml"), ("ruamel.yaml", "ruamel.yaml"),
             ("jsonschema", "jsonschema"), ("jsonschema-rs", "jsonschema_rs"), ("networkx", "networkx"))
MEMO_NAME = "compiler.fingerprint"
_SUFFIXES = (".py", ".pyx", ".lark", ".json")
_STAMP_BYTES = 32


def _roots() -> tuple[Path, ...]:
    """The package and, in a checkout, the grammar and schemas beside it."""
    pkg = Path(__file__).resolve().parents[1]
    return pkg, pkg.parent / "grammar", pkg.parent / "schemas"


def _sources() -> list[tuple[str, str]]:
    """(name relative to its root, path) of every source that goes into the
    fingerprint, in a fixed order (byte code in ``__pycache__`` does not)."""
    found: list[tuple[str, str]] = []
    for k, root in enumerate(_roots()):
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            found += [(f"{k}:{os.path.relpath(os.path.join(folder, f), root)}", os.path.join(folder, f))
                      for f in files if f.endswith(_SUFFIXES)]
    return sorted(found)


def _installed_in(module: str) -> str | None:
    """The folder `module` is installed in (a `sys.path` entry), or None when it is not found."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not os.path.isabs(spec.origin):
        return None
    folder = os.path.dirname(spec.origin)              # the package's folder, or the module's
    for _ in range(module.count(".") + (1 if spec.submodule_search_locations is not None else 0)):
        folder = os.path.dirname(folder)
    return folder


def _stamp(sources: list[tuple[str, str]]) -> tuple[bytes, int]:
    """The digest of what `stat` says of the sources and of the folders the libraries
    are installed in, and the newest mtime or ctime among the sources (the stamp
    vouches only for older ones)."""
    h = hashlib.blake2b(f"{__version__}\0{sys.version}\0".encode(), digest_size=_STAMP_BYTES)
    newest = 0
    for name, path in sources:
        try:
            st = os.stat(path)
        except OSError:
            h.update(f"{name}\0-\0".encode())
            continue
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        h.update(f"{name}\0{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino} {st.st_dev}\0".encode())
    for _, module in LIBRARIES:
        folder = _installed_in(module)
        try:
            where = os.stat(folder) if folder is not None else None
        except OSError:
            where = None
        seen = f"{where.st_mtime_ns} {where.st_ino} {where.st_dev}" if where is not None else "-"
        h.update(f"{module}\0{folder}\0{seen}\0".encode())
    return h.digest(), newest


def _compute(sources: list[tuple[str, str]]) -> str:
    """The fingerprint itself: every source's bytes, Python's and the libraries' versions."""
    from importlib.metadata import PackageNotFoundError, version

    h = hashlib.sha256(__version__.encode())
    h.update(sys.version.encode())
    for dist, _ in LIBRARIES:
        with contextlib.suppress(PackageNotFoundError):
            h.update(f"\0{dist}={version(dist)}".encode())
    for _, path in sources:
        h.update(os.path.basename(path).encode())
        h.update(Path(path).read_bytes())
    return h.hexdigest()


@functools.cache
def compiler_fingerprint(folder: str | None = None) -> str:
    """The fingerprint of this compiler; with a cache `folder`, kept there under the stamp
    (see the module docstring).  Computed once per process (the daemon and `watch`
    load many times)."""
    sources = _sources()
    if folder is None:
        return _compute(sources)
    memo = os.path.join(folder, MEMO_NAME)
    stamp, newest = _stamp(sources)
    kept = read_trusted(memo)
    if kept is not None and kept[:_STAMP_BYTES] == stamp:
        with contextlib.suppress(UnicodeDecodeError):
            value = kept[_STAMP_BYTES:].decode("ascii")
            if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
                return value
    value = _compute(sources)
    # kept only when no source is too recent for its stat to vouch for it (then the
    # next run computes it again)
    write_private(memo, stamp + value.encode("ascii"), when=lambda moment: newest < moment - SLACK_NS)
    return value
