"""The commit stamp of `compile` and `apply`, and whether the working tree backs it.

Every rendered object carries the commit it was compiled from
(`intentc.dev/commit-sha`); drift attributes changes by it and rollback picks
its target by it.  Compiling a working tree with uncommitted edits to its
inputs and stamping HEAD's SHA would say that HEAD holds objects it does not
(issue #36).  So `stamp_for` refuses such a tree (`DirtyTree`, exit 2) unless
the user allows it, and then stamps `<sha>-dirty` — never a commit SHA — plus
the sha256 of the inputs read (`intentc.dev/content-digest`), so that two
dirty applies of different content can be told apart.

The inputs are what the compile reads: the files discovery finds under the
paths (exclusions and intentc's own output left out, as `check` leaves them),
the topology file and the repository's tag rules (`policies/`).  A change
anywhere else in the repository (the README, a build directory) is not one.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from intentc.frontend.sources import SOURCE_SUFFIXES, Exclusions, discover_named
from intentc.pipeline.commit import CommitError, resolve_commit
from intentc.pipeline.result import CompileResult
from intentc.render.model import dirty_stamp
from intentc.render.stamp import with_content_digest

# How many uncommitted files a refusal names; the rest are counted.
SHOWN_FILES = 5


class DirtyTree(CommitError):
    """Inputs with uncommitted changes, and no --allow-dirty: the stamp would lie."""


@dataclass(frozen=True)
class Stamp:
    """What `compile` / `apply` stamp on every object."""

    commit: str                     # the commit-sha annotation: a SHA, or `<sha>-dirty`
    digest: str | None = None       # "sha256:<hex>" of the inputs read, for a dirty tree
    dirty: tuple[str, ...] = ()     # the uncommitted inputs (repository-relative), when allowed


def stamp_for(paths: Sequence[str], also: Sequence[str | Path], explicit: str | None, allow_dirty: bool,
              exclude: Sequence[str] = ()) -> Stamp:
    """The stamp for compiling `paths` and the inputs `also` names apart from them (the
    topology file, a fleet's Cluster directory):
    `explicit` (--commit) or git HEAD, when the inputs are as that commit has them;
    with uncommitted input changes, `<sha>-dirty` and the inputs' digest when
    `allow_dirty`, else `DirtyTree`.  Outside a git repository with --commit there is
    nothing to compare with, and the SHA given is stamped as before."""
    sha = resolve_commit(paths, explicit)
    root = _repository_of(paths)
    if root is None:
        return Stamp(sha)
    prefixes = _prefixes(root, paths, also)
    changed = _uncommitted(root, prefixes)
    if not changed:                 # the common case costs one `git status`, no second discovery walk
        return Stamp(sha)
    files = input_files(paths, also, exclude)
    dirty = _inputs_among(root, changed, prefixes, files, exclude)
    if not dirty:
        return Stamp(sha)
    if not allow_dirty:
        shown = ", ".join(dirty[:SHOWN_FILES]) + (f" and {len(dirty) - SHOWN_FILES} more"
                                                   if len(dirty) > SHOWN_FILES else "")
        claimed = f"--commit {sha[:12]}" if explicit is not None else f"HEAD ({sha[:12]})"
        raise DirtyTree(f"uncommitted changes to the inputs ({shown}): the objects would be stamped with "
                        f"{claimed}, which does not hold them; commit the changes, or pass --allow-dirty "
                        f"to stamp {dirty_stamp(sha[:12])} and a digest of the content")
    return Stamp(dirty_stamp(sha), content_digest(files, root), tuple(dirty))


def input_files(paths: Sequence[str], also: Sequence[str | Path] = (), exclude: Sequence[str] = ()) -> list[str]:
    """The files a compile of `paths` reads, as paths to open: the sources discovery
    finds under `paths` and `also` (a file named is taken whatever its suffix), and the
    tag rule files of the nearest `policies/`."""
    from intentc.policy.load import find_policy_dir

    named, _ = discover_named([*paths, *(os.fspath(a) for a in also)], exclude)
    files = [path for _, path in named]
    rules = find_policy_dir(paths)
    if rules is not None:
        files += sorted(str(p) for p in list(rules.glob("*.yaml")) + list(rules.glob("*.yml")))
    return files


def content_digest(files: Sequence[str], root: Path) -> str:
    """"sha256:<hex>" over each input's sha256 and its path (repository-relative when
    inside `root`), in path order: the same inputs give the same digest wherever the
    command runs from."""
    lines = []
    for f in files:
        real = os.path.realpath(f)
        try:
            with open(real, "rb") as fh:
                data = fh.read()
        except OSError:
            continue                      # the compile reports it; the digest is of what was read
        lines.append(f"{hashlib.sha256(data).hexdigest()}  {_shown(real, root)}\n")
    whole = "".join(sorted(set(lines), key=lambda line: line.split("  ", 1)[1]))
    return "sha256:" + hashlib.sha256(whole.encode("utf-8")).hexdigest()


def _repository_of(paths: Sequence[str]) -> Path | None:
    """The working tree holding the first path (the one `resolve_commit` asks), or None."""
    from intentc.vcs import gitrepo

    where = Path(paths[0]) if paths else Path(".")
    try:
        return gitrepo.repo_root(where if where.is_dir() else where.parent)
    except gitrepo.GitError:
        return None


def _prefixes(root: Path, paths: Sequence[str], also: Sequence[str | Path]) -> list[str]:
    """Where the inputs are, repository-relative: the paths, `also`, the nearest `policies/`
    (what lies outside the working tree is no git's to judge)."""
    from intentc.policy.load import find_policy_dir

    rules = find_policy_dir(paths)
    named = [*paths, *(os.fspath(a) for a in also), *([str(rules)] if rules else [])]
    return sorted({p for p in (_inside(root, n) for n in named) if p is not None})


def _uncommitted(root: Path, prefixes: Sequence[str]) -> tuple[str, ...]:
    from intentc.vcs import gitrepo

    return gitrepo.uncommitted(root, prefixes) if prefixes else ()


def _inputs_among(root: Path, changed: Sequence[str], prefixes: Sequence[str], files: Sequence[str],
                  exclude: Sequence[str]) -> list[str]:
    """Of the files git reports as not HEAD's (`changed`), the inputs: changed, staged or
    new files that are read, and deleted files that would have been (a source under the
    paths that no exclusion leaves out, the topology, a tag rule file)."""
    read = {os.path.realpath(f) for f in files}
    exclusions = Exclusions.of(str(root), exclude)
    whole_files = {p for p in prefixes if not (root / p).is_dir()}     # the topology, a file named as a path
    dirty = []
    for rel in changed:
        full = root / rel
        if os.path.lexists(full):
            if os.path.realpath(full) in read:
                dirty.append(rel)
        elif rel in whole_files or (rel.endswith(SOURCE_SUFFIXES) and not exclusions.excluded(rel)
                                    and not any(part.startswith(".") for part in rel.split("/"))):
            dirty.append(rel)
    return dirty


def _inside(root: Path, path: str) -> str | None:
    """`path` relative to the working tree `root` ("" for the root itself), or None outside it."""
    try:
        rel = Path(os.path.realpath(path)).relative_to(root).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel


def _shown(real: str, root: Path) -> str:
    rel = _inside(root, real)
    return rel if rel is not None else Path(real).as_posix()


def stamped(result: CompileResult, stamp: Stamp) -> CompileResult:
    """`result` with the dirty tree's content digest on every object (`stamp.digest`;
    the `<sha>-dirty` commit stamp is already there, as `result` was compiled with it)."""
    if stamp.digest is None or result.rendered is None:
        return result
    return replace(result, rendered=with_content_digest(result.rendered, stamp.digest))
