"""Finding input files and turning bytes into text, with diagnostics instead of crashes.

Kept apart from the parsers so that every surface gets the same treatment
of unreadable paths, binary files and wrong encodings — and the same
defences, because a repository is written by people who may be hostile:

* a symbolic link is followed only when its target stays inside the
  repository (E0005): a link to ``~/.kube/config`` or a token file must not
  be read, let alone echoed into CI annotations;
* only regular files are read (E0006): a FIFO or ``/dev/zero`` named
  ``x.yaml`` would block or never end.  Files are opened non-blocking and
  checked with ``fstat`` on the open descriptor, so a swap between the check
  and the read changes nothing;
* a file larger than the limit (E0007; default 4 MiB, ``INTENTC_MAX_FILE_BYTES``)
  is refused before it is read, and never more than the limit is read;
* discovery skips hidden directories, what ``.intentcignore`` (gitignore
  syntax, at the repository root) and ``--exclude`` name, and intentc's own
  output (a ``manifests/`` directory that holds `OUTPUT_MARKER`).
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping, Sequence

from intentc.diagnostics import Diagnostic, Span, error

if TYPE_CHECKING:       # imported where patterns are compiled: most runs have none (a tenth of `check`'s start-up)
    import pathspec

DSL_SUFFIXES = (".intent",)
YAML_SUFFIXES = (".yaml", ".yml")
SOURCE_SUFFIXES = DSL_SUFFIXES + YAML_SUFFIXES

DEFAULT_MAX_FILE_BYTES = 4 * 2**20
MAX_FILE_BYTES_ENV = "INTENTC_MAX_FILE_BYTES"
IGNORE_FILE = ".intentcignore"
# Written by `intentc compile` into its output directory; discovery never reads
# the `manifests/` beside it, so `compile . -o build` can run twice.
OUTPUT_MARKER = ".intentc-output"
OUTPUT_MANIFESTS = "manifests"


@dataclass(frozen=True)
class SourceFile:
    path: str        # as shown to the user (relative when the input was relative)
    text: str

    @property
    def is_dsl(self) -> bool:
        return self.path.endswith(DSL_SUFFIXES)


def max_file_bytes() -> int:
    """The per-file size limit: `INTENTC_MAX_FILE_BYTES` (bytes) or 4 MiB.
    A value that is not a positive integer leaves the default in force."""
    raw = os.environ.get(MAX_FILE_BYTES_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_MAX_FILE_BYTES


def repository_root(directory: str) -> str:
    """The real path of the git work tree holding `directory` (the nearest
    ancestor with a `.git` entry), else of `directory` itself: what links may
    point into, and where `.intentcignore` is read."""
    return _repository_root(os.path.realpath(directory))    # cached by real path, not by "."


@functools.lru_cache(maxsize=256)
def _repository_root(start: str) -> str:
    here = start
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent


def root_of(path: str) -> str:
    """The repository root of a path given by the user (a directory or a file)."""
    return repository_root(path if os.path.isdir(path) else os.path.dirname(path) or ".")


def _ignore_file_spec(root: str) -> pathspec.PathSpec | None:
    """`.intentcignore` of a repository root, or None (re-read when it changes:
    the daemon and `watch` discover many times in one process)."""
    try:
        st = os.lstat(os.path.join(root, IGNORE_FILE))
    except OSError:
        return None
    return _parse_ignore_file(root, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _parse_ignore_file(root: str, mtime_ns: int, size: int) -> pathspec.PathSpec | None:
    """Read through the same guarded reader as inputs: a hostile ignore file is still only a file."""
    import pathspec

    data, _ = read_guarded(os.path.join(root, IGNORE_FILE), root)
    if data is None:
        return None
    return pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", errors="replace").splitlines())


@dataclass(frozen=True)
class Exclusions:
    """What discovery leaves out under one repository root besides hidden
    directories: the root's `.intentcignore` and the `--exclude` patterns,
    both gitignore syntax relative to the root."""

    root: str
    specs: tuple[pathspec.PathSpec, ...]

    @classmethod
    def of(cls, root: str, exclude: Sequence[str]) -> "Exclusions":
        specs = [_ignore_file_spec(root)]
        if exclude:
            import pathspec

            specs.append(pathspec.GitIgnoreSpec.from_lines(exclude))
        return cls(root, tuple(s for s in specs if s is not None))

    def relative(self, directory: str) -> str | None:
        """`directory` as the patterns see it ("" for the root, "a/b/" below
        it), or None when it lies outside the root."""
        rel = os.path.relpath(os.path.realpath(directory), self.root).replace(os.sep, "/")
        if rel == "..":
            return None
        return "" if rel == "." else None if rel.startswith("../") else rel + "/"

    def excluded(self, rel: str) -> bool:
        return any(s.match_file(rel) for s in self.specs)


def is_output_dir(files: Sequence[str]) -> bool:
    """Whether a directory holding `files` is intentc's output (its manifests/ is not input):
    the marker, or plan.json beside graph.json (the output of releases before the marker)."""
    return OUTPUT_MARKER in files or ("plan.json" in files and "graph.json" in files)


def walk(directory: str, suffixes: Sequence[str], exclude: Sequence[str] = ()) -> Iterator[str]:
    """Files under `directory` whose names end in one of `suffixes`, less hidden
    directories, what `.intentcignore` and `exclude` name, and intentc's output.
    The one walk `discover` and git's working-tree snapshots (`intentc diff`) share."""
    rules = Exclusions.of(root_of(directory), exclude)
    wanted = tuple(suffixes) or ("",)
    for here, dirs, files in os.walk(directory):
        if is_output_dir(files):
            dirs[:] = [d for d in dirs if d != OUTPUT_MANIFESTS]
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = rules.relative(here) if rules.specs else None
        if rel is not None:
            dirs[:] = [d for d in dirs if not rules.excluded(f"{rel}{d}/")]
        for name in sorted(files):
            if name.endswith(wanted) and not (rel is not None and rules.excluded(rel + name)):
                yield os.path.join(here, name)


def discover(paths: Iterable[str], exclude: Sequence[str] = ()) -> tuple[list[Path], list[Diagnostic]]:
    """Expand directories into their source files, sorted, without duplicates.

    Hidden directories (``.git``), excluded paths and intentc's own output
    are skipped; a path given explicitly is taken whatever its suffix and
    whatever the exclusions, so ``intentc check notes.txt`` still reports.
    Works on strings, not Path objects, until the end: pathlib builds an object
    and parses the path again at every step of the walk.
    """
    named, diags = discover_named(paths, exclude)
    return [Path(path) for _, path in named], diags


def discover_named(paths: Iterable[str], exclude: Sequence[str] = ()) -> tuple[list[tuple[str, str]], list[Diagnostic]]:
    """`discover` as strings: (display path, path to open) of each file, in order.
    What the loader uses: a `Path` per file would be made for nothing."""
    found: dict[str, str] = {}
    diags: list[Diagnostic] = []
    for raw in paths:
        if os.path.isdir(raw):
            for f in walk(raw, SOURCE_SUFFIXES, exclude):
                found.setdefault(display_path(f), f)
        elif os.path.lexists(raw):
            found.setdefault(display_path(raw), raw)
        else:
            diags.append(no_such_path(raw))
    return [(k, found[k]) for k in sorted(found)], diags


def no_such_path(raw: str, where: str = "") -> Diagnostic:
    """E0001 for a path the user named that is not there (`where` says where it was
    looked for, when not the file system as it is): every command words it as `check`
    does, and exits 2 for it (`cli.app.exit_for`)."""
    return error("E0001", f"no such file or directory: {raw}{where}", Span.whole_file(raw))


def missing_paths(paths: Iterable[str]) -> list[Diagnostic]:
    """`no_such_path` for each of `paths` that does not exist (a dangling link exists:
    reading it reports why it cannot be read)."""
    return [no_such_path(raw) for raw in paths if not os.path.lexists(raw)]


def mark_output(directory: str | Path) -> None:
    """Mark a directory intentc writes so that discovery skips its manifests/."""
    marker = Path(directory) / OUTPUT_MARKER
    if not marker.is_file():
        marker.write_text("Written by intentc compile: intentc never reads this directory as input.\n",
                          encoding="utf-8")


def display_path(path: str | Path) -> str:
    """The path as diagnostics show it: normalised, with forward slashes."""
    return os.path.normpath(str(path)).replace(os.sep, "/")


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    head = data[:offset]
    line_start = head.rfind(b"\n") + 1
    return head.count(b"\n") + 1, len(head[line_start:].decode("utf-8", errors="replace")) + 1


def decode(path: str, data: bytes) -> tuple[str | None, list[Diagnostic]]:
    """UTF-8 (with or without BOM) or a diagnostic at the first bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return None, [error("E0002", "file is UTF-16 encoded; intentc reads UTF-8",
                            Span.point(path, 1, 1), hint="re-save the file as UTF-8")]
    if b"\x00" in data:
        line, col = _position(data, data.index(b"\x00"))
        return None, [error("E0003", "file is binary, not text (it contains NUL bytes)",
                            Span.point(path, line, col))]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        return None, [error("E0002", f"invalid UTF-8 byte 0x{data[exc.start]:02x}",
                            Span.point(path, line, col),
                            hint="re-save the file as UTF-8 (it looks like Latin-1 or another legacy encoding)")]
    return text.replace("\r\n", "\n").replace("\r", "\n"), []


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_guarded(path: str, root: str | None = None, folders: dict[str, str] | None = None,
                 lstats: list[os.stat_result | None] | None = None) -> tuple[bytes | None, list[Diagnostic]]:
    """The bytes of `path`, or the diagnostic that says why they are not read:
    a link leaving `root` (default: the repository holding `path`), anything
    but a regular file, a file over the size limit, an OS error.

    A plain file costs five system calls (lstat, the lstats of `realpath`,
    open, fstat, one read of the size fstat gave): going through `commonpath`,
    a second `stat` and a `read` of the whole size limit (a buffer that large
    allocated and shrunk per file) cost more than the system calls themselves.

    `folders` (folder -> its real path), when given, remembers each folder's
    real path across the calls of one batch of reads (a chunk of files read
    together): the real path of a plain file is its folder's plus its name,
    and resolving the folder again for each of its files was 4 of the 5
    system calls per file.

    `lstats`, when given, gets the `lstat` taken before the file was opened
    (None when there was none): a first run's stat index is built from it
    (`stat_index.row_of`) instead of a second `lstat` of every file."""
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if lstats is not None:
        lstats.append(st)
    if folders is not None and st is not None and stat.S_ISREG(st.st_mode):
        folder, name = os.path.split(path)
        real_folder = folders.get(folder)
        if real_folder is None:
            real_folder = folders[folder] = os.path.realpath(folder or ".")
        real = os.path.join(real_folder, name)
    else:
        real = os.path.realpath(path)
    if root is None:
        # The real path of a plain file is its folder's real path plus its name, so
        # one resolution serves both (`root_of` would resolve the folder again:
        # five system calls per file of a 100,000-file repository).
        plain = st is not None and stat.S_ISREG(st.st_mode)
        root = _repository_root(os.path.dirname(real)) if plain else root_of(path)
    if not _inside(real, root):
        shown = display_path(path)
        what = "is a symbolic link that points" if os.path.islink(path) else "lies"
        return None, [error("E0005", f"{shown} {what} outside the repository; it is not read",
                            Span.whole_file(shown),
                            hint="copy the file into the repository, or link to a file inside it")]
    if st is None or stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError as exc:
            return None, [_unreadable(path, exc)]
    if not stat.S_ISREG(st.st_mode):
        return None, [_not_regular(path, st.st_mode)]
    limit = max_file_bytes()
    if st.st_size > limit:
        shown = display_path(path)
        return None, [_too_large(shown, st.st_size, limit)]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        return None, [_unreadable(path, exc)]
    try:
        st = os.fstat(fd)      # what was opened, not what the path named a moment ago
        if not stat.S_ISREG(st.st_mode):
            return None, [_not_regular(path, st.st_mode)]
        data = _read_at_most(fd, min(st.st_size, limit), limit + 1)
    except OSError as exc:
        return None, [_unreadable(path, exc)]
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, [_too_large(display_path(path), len(data), limit)]
    return data, []


def _inside(real: str, root: str) -> bool:
    """Whether the real path `real` is `root` or lies below it (both absolute and normalised)."""
    return real == root or real.startswith(root if root.endswith(os.sep) else root + os.sep)


def _read_at_most(fd: int, size: int, cap: int) -> bytes:
    """The bytes of an open regular file whose size fstat gave as `size`, but
    never more than `cap`: one read asking for one byte more than `size`, and
    further reads only when that one came back short or the file grew."""
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < cap:
        chunk = os.read(fd, min(cap - got, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _unreadable(path: str, exc: OSError) -> Diagnostic:
    shown = display_path(path)
    return error("E0001", f"cannot read {shown}: {exc.strerror or exc}", Span.whole_file(shown))


def _not_regular(path: str, mode: int) -> Diagnostic:
    shown = display_path(path)
    return error("E0006", f"{shown} is {_kind(mode)}; only regular files are read", Span.whole_file(shown))


def _too_large(shown: str, size: int, limit: int) -> Diagnostic:
    more = "more than " if size == limit + 1 else ""
    return error("E0007", f"file is {more}{size} bytes, over the limit of {limit} bytes",
                 Span.whole_file(shown),
                 hint=f"split it into several files, or raise the limit with {MAX_FILE_BYTES_ENV}")


def read_text(path: str | Path) -> str | None:
    """The text of a file through the same guards, or None (for caret excerpts)."""
    source, _ = read_source(Path(path))
    return source.text if source is not None else None


def read_source(p: str | Path, root: str | None = None, folders: dict[str, str] | None = None,
                lstats: list[os.stat_result | None] | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """The decoded file, or None with the diagnostics saying why (`read_guarded`)."""
    shown = display_path(str(p))
    data, diags = read_guarded(str(p), root, folders, lstats)
    if data is None:
        return None, diags
    text, diags = decode(shown, data)
    if text is None:
        return None, diags
    return SourceFile(shown, text), diags


def texts_for_carets(diags: Sequence[Diagnostic], texts: Mapping[str, str]) -> dict[str, str]:
    """`texts` plus the text of every other file a diagnostic points into.

    The loader keeps only the texts of files whose parse reported something;
    a cross-file finding (an unknown tenant, a cycle) can point anywhere, so
    those few files are read again here rather than every text being kept."""
    out = dict(texts)
    named = {d.span.file for d in diags} | {r.span.file for d in diags for r in d.related}
    for f in sorted(named - out.keys()):
        if os.path.isfile(f):
            src, _ = read_source(f)
            if src is not None:
                out[f] = src.text
    return out
