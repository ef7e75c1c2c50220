"""Git faults on the test bed (issue 39): the daemon follows a remote by URL and the remote misbehaves.

The remote is a bare repository reached by a `file://` URL, taken away by
renaming it (what a host that is down or a repository that moved looks like
to `git fetch`) and rewritten by a force-push.  The daemon runs in this
process against a real kube-apiserver + etcd; the test plays the
controller-manager where a rollout waits on health (tests/test_daemon_kube.py).
Waits are event-driven with generous deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from intentc.reconcile.inventory import inventory_ref
from tests.kube_env import KubeEnv
from tests.test_daemon_kube import (Running, commit_of, inventory, job_done, metrics, quarantined, sample, settle,
                                    wait_for)
from tests.test_drift_kube import DriftRepo

pytestmark = pytest.mark.kube


class Following(Running):
    """A daemon following `repo`'s branch through a bare remote, on its own thread."""

    def __init__(self, repo: DriftRepo, tmp: Path, **overrides: object) -> None:
        self.bare = tmp / "remote.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repo.dir), str(self.bare)], check=True)
        self.repo = repo
        super().__init__(repo, tmp, self.bare.as_uri(), "daemon", **overrides)

    def push(self, *args: str) -> None:
        self.repo.repo.git.push(*args, self.bare.as_uri(), "HEAD:main")


@pytest.fixture
def following(tmp_path: Path) -> Iterator[list[Following]]:
    started: list[Following] = []
    yield started
    for f in started:
        if f.thread.is_alive():
            f.stop()


def test_an_unreachable_remote_keeps_the_state_in_force_backs_off_and_catches_up(
        kube_env: KubeEnv, tmp_path: Path, following: list[Following], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="intentc.daemon")
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="heal")
    good = repo.head
    f = Following(repo, tmp_path, prune=True)
    following.append(f)
    c, web, job = f.client, repo.ref("Deployment", "web"), repo.ref("Job", "prep")
    settle(c, repo, good)
    wait_for("the first commit recorded", lambda: inventory(c, repo.target).commit == good)
    wait_for("the rollout finished", lambda: not f.daemon.state.busy)

    away = f.bare.with_name("moved-away.git")
    f.bare.rename(away)
    newer = repo.commit("new prep image", prep_image="busybox:1.1")
    repo.repo.git.push(away.as_uri(), "HEAD:main")           # on the remote the daemon cannot reach
    wait_for("four failed fetches in a row", lambda: f.daemon.fetch_failures >= 4, timeout=180)
    text = metrics(f.daemon)
    assert (sample(text, "intentc_git_fetch_failures") or 0) >= 4
    assert (sample(text, "intentc_errors_total", step="git-poll") or 0) >= 4
    delays = f.daemon.poll_delays[-4:]
    assert delays[-1] > 2 * f.daemon.config.interval and delays[-1] > delays[0], delays
    assert any("cannot be fetched" in r.getMessage() and f"keeping {good[:12]} in force" in r.getMessage()
               for r in caplog.records)
    # nothing applied, nothing pruned: what ran keeps running at the commit in force
    assert commit_of(c.get(web)) == good and commit_of(c.get(job)) == good
    assert inventory(c, repo.target).commit == good
    assert f.daemon.state.desired is not None and f.daemon.state.desired.commit == good
    assert f.daemon.rollouts == [("rollout", good)]

    away.rename(f.bare)                                      # the remote is back
    settle(c, repo, newer)
    wait_for("the newer commit recorded", lambda: inventory(c, repo.target).commit == newer, timeout=180)
    wait_for("the gauge back at 0", lambda: sample(metrics(f.daemon), "intentc_git_fetch_failures") == 0.0)
    assert f.daemon.poll_delays[-1] == f.daemon.config.interval
    assert f.stop() == 0


def test_a_rollback_target_force_pushed_away_is_refused_clearly(
        kube_env: KubeEnv, tmp_path: Path, following: list[Following], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="intentc.daemon")
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="report", prep_policy="rollback")
    good = repo.head
    f = Following(repo, tmp_path)
    following.append(f)
    c, job = f.client, repo.ref("Job", "prep")
    settle(c, repo, good)
    wait_for("last known-good = the first commit", lambda: inventory(c, repo.target).last_known_good == good)

    # history rewritten: a new root commit, the known-good one no longer on the branch
    repo.repo.git.checkout("--orphan", "rewritten")
    bad = repo.commit("rewritten, with a broken prep image", prep_image="busybox:2.0-broken")
    f.push("--force")
    wait_for("the rewritten commit's Job", lambda: commit_of(c.get(job)) == bad)
    job_done(c, job, failed=True)

    refused = wait_for("the refusal as an Event on the inventory", lambda: [
        e for e in c.events(inventory_ref(repo.target)) if e["reason"] == "RollbackRefused"])
    assert bad[:12] in refused[0]["message"] and good[:12] in refused[0]["message"]
    assert "no longer on branch main" in refused[0]["message"]
    assert any("not rolling back" in r.getMessage() for r in caplog.records)
    text = metrics(f.daemon)
    assert (sample(text, "intentc_errors_total", step="rollback") or 0) >= 1
    assert (sample(text, "intentc_rollbacks_total") or 0) == 0.0
    # no rollback to the commit that is gone: the failing one stays, watched, and is not quarantined
    assert ("rollback", bad) not in f.daemon.rollouts and commit_of(c.get(job)) == bad
    assert bad not in quarantined(c, repo.target)
    assert f.thread.is_alive() and f.daemon.state.desired is not None and f.daemon.state.desired.commit == bad
    polls = f.daemon.polls
    wait_for("three more polls", lambda: f.daemon.polls >= polls + 3)
    assert f.daemon.rollouts.count(("rollout", bad)) == 1, "the failed head is not retried by itself"

    fixed = repo.commit("fixed prep image", prep_image="busybox:3.0")
    f.push()
    settle(c, repo, fixed)
    wait_for("the fix recorded", lambda: inventory(c, repo.target).commit == fixed, timeout=180)
    assert f.stop() == 0
