"""The one module that talks to git (GitPython).

Everything else receives plain data: SHAs, file contents, lists of commits.
"""

from __future__ import annotations

from pathlib import Path

import git


def head_commit(path: str | Path = ".") -> str | None:
    """The 40-hex SHA of HEAD for the repository containing `path`, or None
    outside a repository / before the first commit."""
    try:
        repo = git.Repo(Path(path), search_parent_directories=True)
        return repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None
