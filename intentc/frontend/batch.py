"""Loading many files: discovery, decoding, parsing, merging — fast.

Per-file parsing is pure, so this module can do two things the surfaces
never need to know about:

* a content-hash cache: a file whose bytes, path and compiler version are
  unchanged is not parsed again (one pickle per input set, read in one go);
* a process pool: cold parses of large repositories use every core.

Both are invisible in the output: cached, parallel and sequential runs give
identical programs and diagnostics (tests check this).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

from intentc import __version__
from intentc.diagnostics import Diagnostic, Span, error
from intentc.frontend import FileResult, Loaded, merge, parse_source
from intentc.ir import Program
from intentc.sources import SourceFile, discover, read_source

# Below this many files to parse, starting workers costs more than it saves.
PARALLEL_THRESHOLD = 400
CACHE_ENV = "INTENTC_CACHE_DIR"


def _parse_guarded(source: SourceFile) -> FileResult:
    """A crash in a surface is a bug, but the user still gets a diagnostic, not a traceback."""
    try:
        return parse_source(source)
    except RecursionError:
        return FileResult(Program(), (error("E0203", "input nested too deeply to process",
                                            Span.point(source.path, 1, 1)),))


def _parse_chunk(sources: list[SourceFile]) -> list[FileResult]:
    return [_parse_guarded(s) for s in sources]


def _compiler_fingerprint() -> str:
    """Cache entries are only valid for the exact grammar, schemas and code that made them."""
    h = hashlib.sha256(__version__.encode())
    pkg = Path(__file__).resolve().parents[1]
    roots = [pkg, pkg.parent / "grammar", pkg.parent / "schemas"]
    for root in roots:
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


class ParseCache:
    """One pickle file per set of input roots (the paths given on the command line),
    holding the results of the last run; adding a file reparses only that file."""

    def __init__(self, directory: str, paths: Sequence[str]) -> None:
        ident = hashlib.sha256(("\0".join(paths) + "\0" + _compiler_fingerprint()).encode())
        self.file = Path(directory) / f"parse-{ident.hexdigest()[:24]}.pickle"
        self.entries: dict[str, FileResult] = {}
        try:
            with self.file.open("rb") as fh:
                loaded = pickle.load(fh)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, TypeError):
            self.entries = {}

    def save(self, fresh: dict[str, FileResult]) -> None:
        """Atomic replace, so a concurrent or interrupted run never reads half a cache."""
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(fresh, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)
        except OSError:
            pass  # a cache that cannot be written only costs speed


def default_cache_dir() -> str | None:
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        return explicit or None   # INTENTC_CACHE_DIR= (empty) disables the cache
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "intentc")


def parse_all(sources: list[SourceFile], jobs: int | None) -> list[FileResult]:
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers <= 1 or len(sources) < PARALLEL_THRESHOLD:
        return _parse_chunk(sources)
    size = max(len(sources) // (workers * 4), 50)
    chunks = [sources[i:i + size] for i in range(0, len(sources), size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [r for part in pool.map(_parse_chunk, chunks) for r in part]


def load(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
         use_cache: bool = True) -> Loaded:
    files, diags = discover(paths)
    sources: list[SourceFile] = []
    for f in files:
        src, read_diags = read_source(f)
        diags.extend(read_diags)
        if src is not None:
            sources.append(src)

    directory = (cache_dir or default_cache_dir()) if use_cache else None
    roots = sorted(os.path.abspath(p) for p in paths)
    cache = ParseCache(directory, roots) if directory else None
    keys = [_key(s) for s in sources]
    known = cache.entries if cache else {}
    todo = [s for s, k in zip(sources, keys) if k not in known]
    parsed = dict(zip((_key(s) for s in todo), parse_all(todo, jobs)))
    results = [known.get(k) or parsed[k] for k in keys]
    if cache is not None and todo:
        cache.save(dict(zip(keys, results)))

    program, parse_diags = merge(results)
    all_diags: list[Diagnostic] = diags + parse_diags
    return Loaded(program, tuple(all_diags), {s.path: s.text for s in sources})
