"""How the daemon follows a branch: a local repository read in place, a URL mirrored
and fetched (real repositories in temporary folders, a `file://` URL as the remote)."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from intentc.daemon.source import GitSource
from intentc.render.capabilities import KubeVersion
from intentc.vcs import gitrepo
from tests.git_support import commit_change, fixture_repo


@pytest.fixture
def upstream(tmp_path: Path) -> git.Repo:
    return fixture_repo(tmp_path / "upstream")


def test_url_is_mirrored_and_fetched(upstream: git.Repo, tmp_path: Path) -> None:
    url = Path(upstream.working_tree_dir or "").as_uri()
    assert not gitrepo.is_local_repository(url)
    src = GitSource(url, "main", ("intents",), "clusters/small.yaml", tmp_path / "work", "device-plugin", 0)
    assert not src.local and Path(src.path).name.endswith(".git")
    first = src.poll()
    assert first == upstream.head.commit.hexsha
    second = commit_change(upstream, "server:1.0", "server:1.1")
    assert src.poll() == second                      # fetched
    assert src.history(second).commits == (second, first)
    compiled = src.compile(first, KubeVersion(1, 37))  # from the mirror's object database
    assert compiled.ok and compiled.rendered is not None and compiled.rendered.commit == first
    # a second GitSource on the same work directory reuses the mirror
    again = GitSource(url, "main", ("intents",), "clusters/small.yaml", tmp_path / "work", "device-plugin", 0)
    assert again.path == src.path and again.poll() == second


def test_local_repository_is_read_in_place_without_touching_it(upstream: git.Repo, tmp_path: Path) -> None:
    root = Path(upstream.working_tree_dir or "")
    src = GitSource(str(root), "main", ("intents",), "clusters/small.yaml", tmp_path / "work", "device-plugin", 0)
    assert src.local and src.path == str(root)
    head = src.poll()
    (root / "intents" / "pipeline.intent").write_text("not even close to an intent {")   # dirty tree
    compiled = src.compile(head, KubeVersion(1, 37))
    assert compiled.ok
    assert upstream.is_dirty() and upstream.head.commit.hexsha == head
    assert not (root / ".git" / "FETCH_HEAD").exists()


def test_unknown_branch_is_a_git_error(upstream: git.Repo, tmp_path: Path) -> None:
    src = GitSource(str(upstream.working_tree_dir), "nope", ("intents",), "clusters/small.yaml",
                    tmp_path / "work", "device-plugin", 0)
    with pytest.raises(gitrepo.GitError):
        src.poll()
    with pytest.raises(gitrepo.GitError):
        gitrepo.mirror((tmp_path / "missing").as_uri(), tmp_path / "work")
