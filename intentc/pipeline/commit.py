"""The commit SHA a compile stamps on every object.

Kept apart from the stages: they take the SHA as a parameter (a compile is
pure given its inputs), and only the commands look it up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

_SHA = re.compile(r"^[0-9a-f]{40}$")


class CommitError(ValueError):
    """No usable commit SHA: not in a git repository and no --commit given, or a malformed one."""


def resolve_commit(paths: Sequence[str], explicit: str | None = None) -> str:
    """The SHA to stamp: `explicit` if given (validated), else git HEAD of the
    repository holding the first path."""
    if explicit is not None:
        sha = explicit.strip().lower()
        if not _SHA.match(sha):
            raise CommitError(f"--commit must be a full 40-hex commit SHA, got {explicit!r}")
        return sha
    from intentc.vcs.gitrepo import head_commit    # importing GitPython is start-up every run pays; CI passes --commit

    where = Path(paths[0]) if paths else Path(".")
    sha_found = head_commit(where if where.is_dir() else where.parent)
    if sha_found is None:
        raise CommitError(f"{where.as_posix()} is not inside a git repository with a commit; "
                          f"pass --commit SHA to say which commit these files are")
    return sha_found
