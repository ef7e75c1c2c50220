"""The one module that talks to git (GitPython).

Everything else receives plain data: SHAs, file contents, lists of commits.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import git

from intentc.frontend.sources import Exclusions, read_guarded, walk


def head_commit(path: str | Path = ".") -> str | None:
    """The 40-hex SHA of HEAD for the repository containing `path`, or None
    outside a repository / before the first commit."""
    try:
        with git.Repo(Path(path), search_parent_directories=True) as repo:
            return repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None


def uncommitted(repo_path: str | Path, prefixes: Sequence[str]) -> tuple[str, ...]:
    """Repository-relative paths under `prefixes` (repository-relative; "" is the whole
    tree) whose working-tree content is not HEAD's: modified or deleted, staged, or
    untracked and not ignored (`git status`, every untracked file listed on its own).
    Before the first commit every file is uncommitted.

    `--no-optional-locks`: a compile reading the status must not take the index lock
    from a `git commit` running beside it."""
    with _open(repo_path) as repo:
        spec = [p or "." for p in prefixes] or ["."]
        out = repo.git(no_optional_locks=True).status("--porcelain=v1", "-z", "--untracked-files=all",
                                                      "--no-renames", "--", *spec)
    # each record is "XY PATH" (with --no-renames there is never a second path)
    return tuple(sorted({record[3:] for record in out.split("\x00") if len(record) > 3}))


# --------------------------------------------------------------------------
# Reading revisions straight from the object database
# --------------------------------------------------------------------------
#
# `intentc diff` and `intentc schema-diff` compare two revisions without a
# checkout: the tree listing (path -> blob SHA) comes from `git ls-tree`, the
# bytes of a blob from the object database, and the working tree (rev None)
# is read from disk and hashed the way git hashes blobs.  Blob SHAs are what
# lets the diff skip unchanged files: equal SHA, equal bytes, equal parse.

FETCH_HINT = ("fetch more history: `git fetch --unshallow` (or `fetch-depth: 0` "
              "on actions/checkout), then `git fetch origin <branch>` for a remote branch")


class GitError(Exception):
    """A git problem the user must fix (not a bug): the CLI prints it and exits 2."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message + (f"\n  = hint: {self.hint}" if self.hint else "")


class NotARepository(GitError):
    pass


class RevisionError(GitError):
    """A revision that does not resolve to a commit, typically a base branch
    that a shallow CI clone never fetched."""

    def __init__(self, rev: str, shallow: bool) -> None:
        where = "this shallow clone" if shallow else "this repository"
        super().__init__(f"revision {rev!r} is not available in {where}", FETCH_HINT)
        self.rev = rev
        self.shallow = shallow


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    summary: str
    author: str
    authored_at: int        # seconds since the epoch, from the commit itself


def _open(path: str | Path) -> git.Repo:
    """The repository containing `path`; open it in a `with` (a `Repo` closes on the way
    out): GitPython keeps `git cat-file` processes per open `Repo` until it is closed or
    collected, and a daemon reading every commit must not leave that to the collector."""
    try:
        return git.Repo(Path(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise NotARepository(f"not inside a git repository: {path}",
                             "run from a clone of the repository, or pass --repo") from exc


def repo_root(path: str | Path = ".") -> Path:
    """The top of the working tree that contains `path`."""
    with _open(path) as repo:
        if repo.working_tree_dir is None:
            raise NotARepository(f"{path} is a bare repository; a working tree is needed")
        return Path(repo.working_tree_dir).resolve()


def is_shallow(repo_path: str | Path = ".") -> bool:
    with _open(repo_path) as repo:
        return (Path(repo.git_dir) / "shallow").exists()


def resolve(repo_path: str | Path, rev: str) -> str:
    """The 40-hex commit SHA of any revision expression (`main`, `origin/main`,
    `HEAD~3`, a short SHA); `RevisionError` when it does not resolve."""
    with _open(repo_path) as repo:
        try:
            # git itself, not GitPython's parser: it honours the shallow boundary
            # (`HEAD~1` of a depth-1 clone must fail, not name a missing object).
            return str(repo.git.rev_parse("--verify", "--quiet", "--end-of-options", rev + "^{commit}")).strip()
        except git.GitCommandError as exc:
            raise RevisionError(rev, (Path(repo.git_dir) / "shallow").exists()) from exc


def blob_sha(data: bytes) -> str:
    """The id git gives `data` as a blob (`git hash-object`), computed locally."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def repo_relative(root: Path, paths: Sequence[str]) -> tuple[str, ...]:
    """User paths (relative to the current directory, or absolute) as
    repository-relative POSIX prefixes; "" stands for the whole tree."""
    out = []
    for p in paths:
        full = Path(p).resolve()
        try:
            rel = full.relative_to(root).as_posix()
        except ValueError as exc:
            raise GitError(f"{p} is outside the repository at {root}") from exc
        out.append("" if rel == "." else rel)
    return tuple(sorted(set(out)))


def exists_at(repo_path: str | Path, rev: str | None, prefix: str) -> bool:
    """Whether the repository-relative `prefix` (a file or a folder; "" is the whole tree)
    is there at `rev` (a commit SHA; None: the working tree).  `list_tree` lists nothing
    for a path that is not there, which a diff must tell from a path that is empty."""
    if prefix == "":
        return True
    if rev is None:
        return os.path.lexists(repo_root(repo_path) / prefix)
    with _open(repo_path) as repo:
        try:
            repo.git.cat_file("-e", f"{rev}:{prefix}")
        except git.GitCommandError:
            return False
        return True


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(pre == "" or path == pre or path.startswith(pre + "/") for pre in prefixes)


def list_tree(repo_path: str | Path, rev: str | None, paths: Sequence[str] = ("",),
              suffixes: Sequence[str] = (), exclude: Sequence[str] = ()) -> dict[str, str]:
    """Repository-relative path -> blob SHA of the files under `paths`
    (repository-relative prefixes) whose names end in one of `suffixes`
    (all files when empty), at `rev` or, for None, in the working tree.

    A path that does not exist at the revision simply lists nothing: a
    directory added by the pull request is an empty base, not an error.
    """
    wanted = tuple(suffixes)
    if rev is None:
        root = repo_root(repo_path)
        return {p: blob_sha(data) for p, data in _walk_worktree(root, paths, wanted, exclude).items()}
    with _open(repo_path) as repo:
        sha = resolve(repo_path, rev)
        spec = ["."] if "" in paths or not paths else list(paths)
        out = repo.git.ls_tree("-r", "-z", "--full-tree", sha, "--", *spec)
        # the working tree's .intentcignore applies to every revision (a bare mirror has none)
        rules = Exclusions.of(os.path.realpath(repo.working_tree_dir), exclude) if repo.working_tree_dir else None
        listing: dict[str, str] = {}
        for record in out.split("\x00"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            _mode, kind, obj = meta.split()
            if kind == "blob" and path.endswith(wanted or ("",)) and _under(path, paths) \
                    and not (rules is not None and rules.excluded(path)):
                listing[path] = obj
        return dict(sorted(listing.items()))


def _walk_worktree(root: Path, paths: Sequence[str], suffixes: Sequence[str],
                   exclude: Sequence[str] = ()) -> dict[str, bytes]:
    """Files of the working tree as `intentc check` finds them: hidden directories,
    `.intentcignore` and intentc's own output skipped, links out of the repository,
    FIFOs and oversized files refused (GitError)."""
    found: dict[str, bytes] = {}
    real_root = os.path.realpath(root)

    def read(full: Path) -> bytes:
        # the guards of `intentc check`: no link out of the repository, no FIFO, a size cap
        data, diags = read_guarded(str(full), real_root)
        if data is None:
            raise GitError(f"{diags[0].span.file}: {diags[0].message}", diags[0].hint)
        return data

    for pre in paths:
        base = root / pre if pre else root
        if os.path.lexists(base) and not base.is_dir():
            found[pre] = read(base)
            continue
        for name in walk(str(base), suffixes, exclude):      # what `intentc check` would read, nothing else
            full = Path(name)
            found[full.relative_to(root).as_posix()] = read(full)
    return dict(sorted(found.items()))


def read_blobs(repo_path: str | Path, shas: Iterable[str]) -> dict[str, bytes]:
    """Blob contents by SHA, from the object database (no checkout)."""
    with _open(repo_path) as repo:
        out: dict[str, bytes] = {}
        for sha in sorted(set(shas)):
            try:
                out[sha] = repo.odb.stream(bytes.fromhex(sha)).read()
            except (git.BadObject, ValueError) as exc:
                raise GitError(f"blob {sha} is missing from the object database", FETCH_HINT) from exc
        return out


def read_tree(repo_path: str | Path, rev: str | None, paths: Sequence[str] = ("",),
              suffixes: Sequence[str] = ()) -> dict[str, bytes]:
    """Repository-relative path -> bytes of the files under `paths` at `rev`
    (None: the working tree).  Nothing is checked out or written."""
    if rev is None:
        return _walk_worktree(repo_root(repo_path), paths, tuple(suffixes))
    listing = list_tree(repo_path, rev, paths, suffixes)
    blobs = read_blobs(repo_path, listing.values())
    return {p: blobs[sha] for p, sha in listing.items()}


def merge_base(repo_path: str | Path, a: str, b: str) -> str:
    """The best common ancestor of two revisions: what a pull request is
    compared against, so commits that landed on the base branch meanwhile
    do not show up as reverted."""
    with _open(repo_path) as repo:
        sha_a, sha_b = resolve(repo_path, a), resolve(repo_path, b)
        bases = repo.merge_base(sha_a, sha_b)
        if not bases:
            raise GitError(f"{a} and {b} have no common ancestor in this clone", FETCH_HINT)
        return bases[0].hexsha


def is_ancestor(repo_path: str | Path, ancestor: str, descendant: str) -> bool:
    with _open(repo_path) as repo:
        return bool(repo.is_ancestor(repo.commit(resolve(repo_path, ancestor)),
                                     repo.commit(resolve(repo_path, descendant))))


def commits_on(repo_path: str | Path, rev: str = "HEAD", paths: Sequence[str] = (),
               since: str | None = None, max_count: int | None = None) -> list[CommitInfo]:
    """Commits reachable from `rev` (and not from `since`) that touch `paths`,
    newest first."""
    with _open(repo_path) as repo:
        target = resolve(repo_path, rev)
        spec = f"{resolve(repo_path, since)}..{target}" if since else target
        commits = (repo.iter_commits(spec, list(paths)) if max_count is None
                   else repo.iter_commits(spec, list(paths), max_count=max_count))
        return [CommitInfo(c.hexsha, str(c.summary), str(c.author.name), int(c.authored_date)) for c in commits]


@dataclass(frozen=True)
class Snapshot:
    """The files of one side of a diff: path -> blob SHA, and their bytes on demand."""

    repo: Path
    rev: str | None                       # commit SHA, None for the working tree
    listing: dict[str, str]
    worktree_data: dict[str, bytes]       # the working tree's bytes (already read to hash them)

    def read(self, paths: Sequence[str]) -> dict[str, bytes]:
        if self.rev is None:
            return {p: self.worktree_data[p] for p in paths}
        blobs = read_blobs(self.repo, [self.listing[p] for p in paths])
        return {p: blobs[self.listing[p]] for p in paths}


def snapshot(repo_path: str | Path, rev: str | None, paths: Sequence[str] = ("",),
             suffixes: Sequence[str] = (), exclude: Sequence[str] = ()) -> Snapshot:
    root = repo_root(repo_path)
    if rev is None:
        data = _walk_worktree(root, paths, tuple(suffixes), exclude)
        return Snapshot(root, None, {p: blob_sha(b) for p, b in data.items()}, data)
    return Snapshot(root, resolve(root, rev), list_tree(root, rev, paths, suffixes, exclude), {})


# --------------------------------------------------------------------------
# Following a branch (the drift daemon)
# --------------------------------------------------------------------------
#
# The daemon never checks anything out: a remote repository is kept as a
# bare mirror in the daemon's work directory, a local one is only read, and
# every revision it compiles is read from the object database
# (`read_tree`).  A local repository given by path is not fetched into —
# that would move the user's refs under them.

def is_local_repository(source: str) -> bool:
    """True when `source` is a path to an existing git repository (not a URL)."""
    path = Path(source).expanduser()
    if "://" in source or (":" in source and not path.exists()):
        return False
    try:
        git.Repo(path, search_parent_directories=False).close()
        return True
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return False


def mirror_path(url: str, workdir: str | Path) -> Path:
    """Where `mirror` keeps the bare clone of `url` under `workdir`."""
    name = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return Path(workdir) / f"repo-{name}.git"


def mirror(url: str, workdir: str | Path) -> Path:
    """A bare clone of `url` under `workdir` (reused when already there)."""
    dest = mirror_path(url, workdir)
    if (dest / "HEAD").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        git.Repo.clone_from(url, dest, bare=True)
    except git.GitCommandError as exc:
        raise GitError(f"cannot clone {url}: {str(exc.stderr or exc).strip()}") from exc
    return dest


def fetch_branch(repo_path: str | Path, branch: str, remote: str = "origin") -> str:
    """Fetch `branch` from `remote` into the mirror's own branch ref; its new SHA."""
    with _open(repo_path) as repo:
        try:
            repo.git.fetch("--quiet", "--no-tags", remote, f"+refs/heads/{branch}:refs/heads/{branch}")
        except git.GitCommandError as exc:
            raise GitError(f"cannot fetch {branch} from {remote}: {str(exc.stderr or exc).strip()}") from exc
        return resolve(repo_path, f"refs/heads/{branch}")


def branch_head(repo_path: str | Path, branch: str) -> str:
    """The SHA `branch` points at (a local branch, or a remote-tracking one)."""
    for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}", branch):
        try:
            return resolve(repo_path, ref)
        except RevisionError:
            continue
    raise RevisionError(branch, is_shallow(repo_path))


def newer_than(repo_path: str | Path, rev: str, max_count: int = 10_000) -> tuple[str, ...]:
    """SHAs of the commits on any branch or tag that `rev` does not reach (`git rev-list --all ^rev`):
    commits the repository has that are not behind the checked-out one — e.g. the branch
    head after `git checkout` of an older commit."""
    with _open(repo_path) as repo:
        out = repo.git.rev_list("--all", "--max-count", str(max_count), "^" + resolve(repo_path, rev))
        return tuple(line for line in out.splitlines() if line)


def rev_list(repo_path: str | Path, rev: str, max_count: int | None = None) -> tuple[str, ...]:
    """SHAs of the commits reachable from `rev`, newest first (`git rev-list`)."""
    with _open(repo_path) as repo:
        args = ["--max-count", str(max_count)] if max_count is not None else []
        out = repo.git.rev_list(*args, resolve(repo_path, rev))
        return tuple(line for line in out.splitlines() if line)
