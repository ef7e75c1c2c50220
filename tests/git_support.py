"""Real git repositories for tests (GitPython, temporary folders)."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

ACTOR = git.Actor("Test", "test@example.com")
FIXTURE = Path(__file__).parent / "fixtures" / "repo"


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


def fixture_repo(root: Path) -> git.Repo:
    """tests/fixtures/repo copied to `root`, made a repository on branch main and
    committed there as "first" (by user t)."""
    shutil.copytree(FIXTURE, root)
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    repo.git.add(A=True)
    repo.index.commit("first")
    return repo


def commit_change(repo: git.Repo, old: str, new: str, message: str | None = None) -> str:
    """Replace `old` by `new` in a fixture repository's intents/pipeline.intent and commit
    it (as "OLD -> NEW" unless `message`); returns the new commit's SHA."""
    p = Path(repo.working_tree_dir or "") / "intents" / "pipeline.intent"
    p.write_text(p.read_text().replace(old, new))
    repo.git.add(A=True)
    return str(repo.index.commit(message or f"{old} -> {new}").hexsha)
