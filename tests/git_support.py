"""Real git repositories for tests (GitPython, temporary folders)."""

from __future__ import annotations

from pathlib import Path

import git

ACTOR = git.Actor("Test", "test@example.com")


def commit(repo: git.Repo, files: dict[str, str | None], message: str) -> str:
    """Write (or, for None, delete) files in the work tree, stage them, commit;
    returns the new commit's SHA."""
    root = Path(repo.working_tree_dir or ".")
    for rel, text in files.items():
        p = root / rel
        if text is None:
            if p.exists():
                repo.index.remove([rel], working_tree=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        repo.index.add([rel])
    return repo.index.commit(message, author=ACTOR, committer=ACTOR).hexsha
