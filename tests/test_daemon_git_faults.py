"""Git faults the daemon must ride out (issue 39), on real repositories in temporary folders.

* an unreachable remote: the fetch fails with a `GitError` (what the reactor
  counts, logs and backs off on, `following.poll_delay`), the mirror keeps
  every commit it fetched, and the branch is caught up when the remote returns
  -- also when the remote is down before the first poll;
* a rollback target force-pushed away (`outcome.rollback_refusal`);
* a commit of many files followed with the memory the soak allows
  (benchmarks/bench_daemon_git_files.py has the 100,000-file run).

The reactor's side of each (nothing applied, the gauge, the Event) runs on
the test bed in tests/test_daemon_git_faults_kube.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import git
import pytest

from benchmarks.bench_daemon_git_files import FILES_AT_LIMIT, LIMIT_MB_AT_100K, measure
from intentc.daemon.following import POLL_BACKOFF_CAP, poll_delay
from intentc.daemon.outcome import rollback_refusal
from intentc.daemon.source import GitSource
from intentc.render.capabilities import KubeVersion
from intentc.vcs import gitrepo
from tests.git_support import commit_change, fixture_repo

# A CI-sized commit: the bound is the soak's, carried down per file (bench_daemon_git_files.bound_mb)
CI_FILES = 5_000


def test_polls_back_off_exponentially_with_a_cap_and_jitter() -> None:
    assert poll_delay(30.0, 0, 0.99) == 30.0, "a fetch that worked: the configured interval, no jitter"
    lows = [poll_delay(30.0, n, 0.0) for n in range(1, 12)]
    highs = [poll_delay(30.0, n, 0.999999) for n in range(1, 12)]
    assert lows[:3] == [30.0, 60.0, 120.0], "half the doubled interval at the least"
    assert all(b >= a for a, b in zip(lows, lows[1:])), "never shorter after another failure"
    assert max(highs) <= POLL_BACKOFF_CAP and lows[-1] == POLL_BACKOFF_CAP / 2, "capped"
    assert all(lo < hi for lo, hi in zip(lows, highs)), "jitter spreads every delay"
    assert poll_delay(1200.0, 5, 0.5) <= 1200.0, "an interval above the cap is its own cap"
    assert poll_delay(0.5, 1000, 0.5) <= POLL_BACKOFF_CAP, "no overflow after many failures"


def test_a_rollback_target_gone_from_the_branch_is_refused_with_the_reason() -> None:
    good = "a" * 40
    assert rollback_refusal(good, on_branch=True, in_repository=True, branch="main") == ""
    gone = rollback_refusal(good, on_branch=False, in_repository=True, branch="main")
    assert "no longer on branch main" in gone and good[:12] in gone
    unknown = rollback_refusal(good, on_branch=False, in_repository=False, branch="main")
    assert "not in the repository" in unknown
    assert "no last known-good" in rollback_refusal(None, on_branch=False, in_repository=False, branch="main")


@pytest.fixture
def remote(tmp_path: Path) -> tuple[git.Repo, Path]:
    """A working repository and the bare repository the daemon follows by URL."""
    work = tmp_path / "work-tree"
    repo = fixture_repo(work)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    repo.create_remote("origin", bare.as_uri())
    return repo, bare


def test_an_unreachable_remote_fails_the_fetch_keeps_the_mirror_and_is_caught_up(
        remote: tuple[git.Repo, Path], tmp_path: Path) -> None:
    repo, bare = remote
    src = GitSource(bare.as_uri(), "main", ("intents",), "clusters/small.yaml", tmp_path / "daemon", "device-plugin", 0)
    first = src.poll()
    away = bare.with_name("moved-away.git")
    bare.rename(away)                                   # the remote is gone (host down, repository moved)
    with pytest.raises(gitrepo.GitError, match="cannot fetch main"):
        src.poll()
    compiled = src.compile(first, KubeVersion(1, 37))   # what is in force can still be compiled (a rollback)
    assert compiled.ok and compiled.rendered is not None and compiled.rendered.commit == first
    second = commit_change(repo, "server:1.0", "server:1.1")
    repo.git.push(away.as_uri(), "main")                # committed while the daemon cannot see it
    away.rename(bare)
    assert src.poll() == second, "caught up once the remote answers"
    assert src.history(second).commits == (second, first)


def test_a_remote_down_at_start_is_a_failed_poll_not_a_crash(remote: tuple[git.Repo, Path], tmp_path: Path) -> None:
    _repo, bare = remote
    away = bare.with_name("not-yet.git")
    bare.rename(away)
    src = GitSource(bare.as_uri(), "main", ("intents",), "clusters/small.yaml", tmp_path / "daemon", "device-plugin", 0)
    with pytest.raises(gitrepo.GitError, match="cannot clone"):
        src.poll()
    away.rename(bare)
    assert src.poll() == _repo.head.commit.hexsha


def test_a_force_push_takes_the_old_commits_off_the_branch_history(
        remote: tuple[git.Repo, Path], tmp_path: Path) -> None:
    """What `Daemon._rollback_refused` reads: after a force-push the mirror's branch history
    no longer knows the old commit, though its objects may still be in the mirror."""
    repo, bare = remote
    src = GitSource(bare.as_uri(), "main", ("intents",), "clusters/small.yaml", tmp_path / "daemon", "device-plugin", 0)
    good = src.poll()
    repo.git.checkout("--orphan", "rewritten")
    repo.index.commit("history rewritten")
    rewritten = repo.head.commit.hexsha
    repo.git.push("--force", "origin", "rewritten:main")
    assert src.poll() == rewritten
    history = src.history(rewritten)
    assert not history.knows(good) and history.knows(rewritten)
    assert gitrepo.resolve(src.path, good) == good, "still in the mirror's objects: only the branch says it is gone"


def test_a_commit_of_many_files_is_followed_within_the_soaks_memory(tmp_path: Path) -> None:
    """The 100,000-file run takes minutes (benchmarks/bench_daemon_git_files.py, its result
    committed); here a 5,000-file commit, held to the same per-file bound: the soak's
    600 MB at 100,000 intents, less the same child's peak at two files, per file."""
    got = measure(CI_FILES, tmp_path, timeout=300)
    per_file_kb = (LIMIT_MB_AT_100K - got["baseline"]["peak_mb"]) * 1024 / FILES_AT_LIMIT
    assert got["run"]["objects"] > CI_FILES, got
    assert got["run"]["peak_mb"] <= got["bound_mb"], (
        f"{got['run']['peak_mb']} MB at {CI_FILES} files, over {got['bound_mb']} MB "
        f"({got['baseline']['peak_mb']} MB baseline + {per_file_kb:.2f} KB a file)")
