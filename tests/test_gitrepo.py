"""Reading revisions straight from the object database, on real temporary repositories."""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest
from git_support import commit

from intentc.vcs import gitrepo


@pytest.fixture()
def repo(tmp_path: Path) -> git.Repo:
    r = git.Repo.init(tmp_path / "repo")
    commit(r, {"intents/a.intent": "one\n", "intents/sub/b.yaml": "b: 1\n", "README.md": "x\n"}, "first")
    commit(r, {"intents/a.intent": "two\n", "intents/c.yml": "c: 1\n"}, "second")
    return r


def test_resolve_rev_expressions(repo: git.Repo) -> None:
    root = repo.working_tree_dir
    head = repo.head.commit.hexsha
    assert gitrepo.resolve(root, "HEAD") == head
    assert gitrepo.resolve(root, head[:8]) == head
    assert gitrepo.resolve(root, "HEAD~1") == repo.head.commit.parents[0].hexsha
    assert gitrepo.resolve(root, repo.active_branch.name) == head


def test_unknown_rev_is_a_typed_error_with_fetch_hint(repo: git.Repo) -> None:
    with pytest.raises(gitrepo.RevisionError) as info:
        gitrepo.resolve(repo.working_tree_dir, "origin/main")
    assert info.value.rev == "origin/main"
    assert not info.value.shallow
    assert "fetch-depth: 0" in str(info.value) and "--unshallow" in str(info.value)


def test_read_tree_at_revision_and_working_tree(repo: git.Repo) -> None:
    root = Path(repo.working_tree_dir or ".")
    old = gitrepo.read_tree(root, "HEAD~1", ("intents",), (".intent", ".yaml", ".yml"))
    assert old == {"intents/a.intent": b"one\n", "intents/sub/b.yaml": b"b: 1\n"}
    (root / "intents/a.intent").write_text("three\n")
    (root / "intents/.hidden").mkdir()
    (root / "intents/.hidden/x.intent").write_text("hidden\n")
    work = gitrepo.read_tree(root, None, ("intents",), (".intent",))
    assert work == {"intents/a.intent": b"three\n"}
    # reading a revision never touches the working tree
    assert (root / "intents/a.intent").read_text() == "three\n"


def test_working_tree_is_read_as_check_reads_it(repo: git.Repo, tmp_path: Path) -> None:
    """`intentc diff` with the working tree as head: intentc's output and .intentcignore'd paths
    are not read; a link out of the repository or a FIFO is a GitError, not a read."""
    root = Path(repo.working_tree_dir or ".")
    (root / "intents/build/manifests").mkdir(parents=True)
    (root / "intents/build/manifests/00-x.yaml").write_text("kind: Namespace\n")
    (root / "intents/build/.intentc-output").write_text("")
    (root / "intents/vendor").mkdir()
    (root / "intents/vendor/v.yaml").write_text("v: 1\n")
    (root / ".intentcignore").write_text("vendor/\n")
    work = gitrepo.read_tree(root, None, ("intents",), (".intent", ".yaml", ".yml"))
    assert sorted(work) == ["intents/a.intent", "intents/c.yml", "intents/sub/b.yaml"]
    (root / ".intentcignore").write_text("vendor/\nsub/\n")      # revisions are listed by the same rule
    assert sorted(gitrepo.read_tree(root, "HEAD", ("intents",), (".intent", ".yaml", ".yml"))) == \
        ["intents/a.intent", "intents/c.yml"]
    assert sorted(gitrepo.snapshot(root, "HEAD", ("intents",), (".intent", ".yml"), ["*.yml"]).listing) == \
        sorted(gitrepo.snapshot(root, None, ("intents",), (".intent", ".yml"), ["*.yml"]).listing) == \
        ["intents/a.intent"]                                        # --exclude, both sides alike
    (tmp_path / "token").write_text("secret\n")
    (root / "intents/leak.yaml").symlink_to(tmp_path / "token")
    with pytest.raises(gitrepo.GitError, match="outside the repository"):
        gitrepo.read_tree(root, None, ("intents",), (".yaml",))
    (root / "intents/leak.yaml").unlink()
    os.mkfifo(root / "intents/pipe.yaml")
    with pytest.raises(gitrepo.GitError, match="FIFO"):
        gitrepo.read_tree(root, None, ("intents",), (".yaml",))


def test_listing_uses_git_blob_ids(repo: git.Repo) -> None:
    root = repo.working_tree_dir
    listing = gitrepo.list_tree(root, "HEAD", ("",), (".yml",))
    assert listing == {"intents/c.yml": repo.head.commit.tree["intents/c.yml"].hexsha}
    assert gitrepo.list_tree(root, None, ("",), (".yml",)) == listing   # hash-object of the worktree file
    assert gitrepo.list_tree(root, "HEAD", ("nothing-here",)) == {}


def test_read_blobs_by_sha(repo: git.Repo) -> None:
    root = repo.working_tree_dir
    listing = gitrepo.list_tree(root, "HEAD~1", ("intents",))
    blobs = gitrepo.read_blobs(root, listing.values())
    assert blobs[listing["intents/a.intent"]] == b"one\n"


def test_commits_ancestry_and_merge_base(repo: git.Repo) -> None:
    root = repo.working_tree_dir
    commits = gitrepo.commits_on(root, "HEAD")
    assert [c.summary for c in commits] == ["second", "first"]
    assert [c.summary for c in gitrepo.commits_on(root, "HEAD", paths=["intents/c.yml"])] == ["second"]
    assert [c.summary for c in gitrepo.commits_on(root, "HEAD", since="HEAD~1")] == ["second"]
    assert [c.summary for c in gitrepo.commits_on(root, "HEAD", max_count=1)] == ["second"]
    assert gitrepo.is_ancestor(root, "HEAD~1", "HEAD")
    assert not gitrepo.is_ancestor(root, "HEAD", "HEAD~1")
    assert gitrepo.merge_base(root, "HEAD", "HEAD~1") == commits[1].sha


def test_head_commit_unchanged(repo: git.Repo, tmp_path: Path) -> None:
    assert gitrepo.head_commit(repo.working_tree_dir) == repo.head.commit.hexsha
    assert gitrepo.head_commit(tmp_path) is None


def test_shallow_clone_reports_missing_history(repo: git.Repo, tmp_path: Path) -> None:
    clone = git.Repo.clone_from(f"file://{repo.working_tree_dir}", tmp_path / "shallow", depth=1)
    root = clone.working_tree_dir
    assert gitrepo.is_shallow(root)
    with pytest.raises(gitrepo.RevisionError) as info:
        gitrepo.resolve(root, "HEAD~1")
    assert info.value.shallow
    assert "shallow clone" in str(info.value) and "git fetch --unshallow" in str(info.value)


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(gitrepo.NotARepository):
        gitrepo.repo_root(tmp_path)


def test_paths_outside_the_repository(repo: git.Repo, tmp_path: Path) -> None:
    root = gitrepo.repo_root(repo.working_tree_dir)
    assert gitrepo.repo_relative(root, [str(root / "intents"), str(root)]) == ("", "intents")
    with pytest.raises(gitrepo.GitError):
        gitrepo.repo_relative(root, [str(tmp_path)])
