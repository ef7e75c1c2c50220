"""Parse results keyed by git blob id, shared by both sides of a diff and across runs.

Why blob ids: git already knows which files changed between two trees
(`ls-tree` gives each file's blob SHA), so a file whose blob is the same on
both sides is parsed at most once per run, and a file seen by an earlier run
(the base of a pull request does not move between pushes) is not parsed at
all.  The key also holds the path (spans name the file, and the suffix picks
the surface) and a fingerprint of the front end, so an entry can never be
stale: a new grammar, schema or parser version simply misses.

The same file keeps the dependency-graph view of each of the last run's
trees, keyed by a digest of the tree listing: the base of a pull request does
not move between pushes, so its graph is built once.

One pickle per front-end fingerprint, holding the entries of the last run's
two trees; it is replaced atomically, so concurrent runs can only lose speed.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from intentc import __version__
from intentc import collector
from intentc.cachetrust import make_private_folder, read_trusted
from intentc.frontend import FileResult

BlobKey = tuple[str, str]          # (repository-relative path, blob SHA)

# What a cached result depends on: the surfaces, the IR, decoding, the grammar /
# schemas they load, and (for the graph views) the graph module and its consumer.
_FRONTEND_FILES = ("frontend", "ir/__init__.py", "ir/quantity.py", "diagnostics/__init__.py", "diagnostics/codes.py",
                   "graph/digraph.py", "diff/graph_diff.py")


def frontend_fingerprint() -> str:
    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(__version__.encode())
    files: list[Path] = []
    for name in _FRONTEND_FILES:
        p = pkg / name
        files.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.exists() else [])
    for data_dir, suffix in ((pkg.parent / "grammar", ".lark"), (pkg.parent / "schemas", ".json"),
                             (pkg / "grammar", ".lark"), (pkg / "schemas", ".json")):
        if data_dir.is_dir():
            files.extend(sorted(data_dir.glob("*" + suffix)))
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def listing_digest(listing: Mapping[str, str]) -> str:
    """Identifies a tree by its files' paths and blob ids (its git tree id, in effect)."""
    h = hashlib.sha256()
    for path, sha in sorted(listing.items()):
        h.update(f"{path}\0{sha}\n".encode())
    return h.hexdigest()


class BlobCache:
    """A directory per front-end fingerprint: ``main.pickle`` plus small
    ``delta-*.pickle`` files.  A run that parsed a handful of new blobs (the
    next push of a pull request) writes only those, so saving costs what
    changed, not the size of the repository; when the deltas grow past
    `COMPACT_RATIO` of the main file, or `MAX_DELTAS` files, they are folded
    into a new main file holding only what the current run uses."""

    COMPACT_RATIO = 0.25
    MAX_DELTAS = 16

    def __init__(self, directory: str | None) -> None:
        self.entries: dict[BlobKey, FileResult] = {}
        self.views: dict[str, Any] = {}
        self.dir: Path | None = None
        self.new_entries: dict[BlobKey, FileResult] = {}
        self.new_views: dict[str, Any] = {}
        self.main_size = 0
        self.deltas: list[Path] = []
        if directory is None:
            return
        self.dir = Path(directory) / f"diff-blobs-{frontend_fingerprint()[:24]}"
        # Unpickling a few hundred thousand small IR objects triggers the cyclic
        # collector over and over, for nothing: none of them form cycles.
        with collector.paused():
            main = self._load(self.dir / "main.pickle")
            self.main_size = len(main)
            self.deltas = sorted(self.dir.glob("delta-*.pickle")) if self.dir.is_dir() else []
            for part in self.deltas:
                self._load(part)

    def _load(self, path: Path) -> dict[BlobKey, FileResult]:
        data = read_trusted(path)
        if data is None:
            return {}
        try:
            loaded = pickle.loads(data)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError,
                ImportError, IndexError):
            return {}
        if not (isinstance(loaded, dict) and isinstance(loaded.get("blobs"), dict)):
            return {}
        self.entries.update(loaded["blobs"])
        self.views.update(loaded.get("views") or {})
        return loaded["blobs"]

    def get(self, key: BlobKey) -> FileResult | None:
        return self.entries.get(key)

    def put(self, key: BlobKey, result: FileResult) -> None:
        self.entries[key] = result
        self.new_entries[key] = result

    def view(self, digest: str) -> Any:
        return self.views.get(digest)

    def put_view(self, digest: str, view: Any) -> None:
        self.views[digest] = view
        self.new_views[digest] = view

    def save(self, keep: Iterable[BlobKey], keep_views: Iterable[str] = ()) -> None:
        if self.dir is None or not (self.new_entries or self.new_views):
            return
        beyond_main = len(self.entries) - self.main_size      # entries living in delta files, old and new
        compact = (self.main_size == 0 or len(self.deltas) >= self.MAX_DELTAS
                   or beyond_main > self.COMPACT_RATIO * max(self.main_size, 1))
        try:
            make_private_folder(self.dir)
            if compact:
                kept = {k: self.entries[k] for k in sorted(set(keep)) if k in self.entries}
                views = {d: self.views[d] for d in sorted(set(keep_views)) if d in self.views}
                self._write(self.dir / "main.pickle", {"blobs": kept, "views": views})
                for part in self.deltas:
                    part.unlink(missing_ok=True)
            else:
                payload = {"blobs": self.new_entries, "views": self.new_views}
                body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
                name = f"delta-{hashlib.sha256(body).hexdigest()[:20]}.pickle"
                self._write(self.dir / name, body)
        except OSError:
            pass   # a cache that cannot be written only costs speed

    @staticmethod
    def _write(path: Path, payload: object) -> None:
        """Atomic replace, so a concurrent or interrupted run never reads half a file."""
        body = payload if isinstance(payload, bytes) else pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(body)
        os.replace(tmp, path)
