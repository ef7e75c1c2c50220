"""Two `intentc daemon` processes on one target, against a real API server (issue 14).

Exactly one holds the Lease and acts: one heal and one Event (count 1) per
drift.  Killing the leader with SIGKILL (no release) hands the target to
the follower within about one lease duration, and the new leader heals the
next drift; stopping a leader with SIGTERM (a rolling update) hands over
at once, through the released Lease.  The failover time is printed; the test waits for the
new holder at most a generous multiple of the lease duration (3x: the machine is shared).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from intentc.daemon.election import election_ref
from intentc.kube.client import KubeClient
from tests.daemon_proc import DaemonProc, holder
from tests.kube_env import KubeEnv
from tests.test_daemon_kube import deployment_available, inventory, job_done, sample, wait_for
from tests.test_drift_kube import DriftRepo, edit_as

pytestmark = pytest.mark.kube
LEASE_SECONDS = 15          # the CLI's default, which this test runs with


class Replica(DaemonProc):
    """One replica, as the cluster admin, with plain /metrics beside its probes."""

    def __init__(self, name: str, repo: DriftRepo, env: KubeEnv, tmp: Path) -> None:
        super().__init__(name, repo.dir, repo.target, env.kubeconfig, tmp, "--no-metrics-secure")

    def heals(self) -> list[str]:
        return [m for m in self.messages() if m.startswith("healed ")]


def healed_events(c: KubeClient, repo: DriftRepo) -> list[dict[str, Any]]:
    return [e for e in c.events(repo.ref("Deployment", "web")) if e["reason"] == "DriftHealed"]


def test_two_daemons_one_leader_one_heal_and_failover_after_kill(kube_env: KubeEnv, tmp_path: Path) -> None:
    repo = DriftRepo(tmp_path, kube_env, tenant_policy="heal")
    repo.apply()                    # the commit is on the cluster: both daemons adopt it, nothing to roll out
    c = repo.client()
    web = repo.ref("Deployment", "web")
    job_done(c, repo.ref("Job", "prep"))        # wave 0 done, so a heal of wave 1 may run
    deployment_available(c, web)
    replicas = {name: Replica(name, repo, kube_env, tmp_path) for name in ("daemon-a", "daemon-b")}
    try:
        first = wait_for("a Lease holder", lambda: holder(c, repo.target), timeout=120)
        leader = replicas[first.split("_", 1)[0]]
        follower = next(r for r in replicas.values() if r is not leader)
        wait_for("the leader ready", lambda: leader.get("/readyz")[0] == 200, timeout=180)
        wait_for("the follower watching", lambda: follower.get("/healthz")[0] == 200)
        said = f"not ready: not leader (lease held by {first})"
        wait_for("the follower naming the leader", lambda: follower.get("/readyz") == (503, said + "\n"))
        assert sample(leader.get("/metrics")[1], "intentc_leader") == 1.0
        assert sample(follower.get("/metrics")[1], "intentc_leader") == 0.0
        lease = c.get(election_ref(repo.target))
        assert lease is not None
        spec = lease["spec"]
        assert spec["leaseDurationSeconds"] == LEASE_SECONDS and spec["acquireTime"] and spec["renewTime"]
        transitions = int(spec.get("leaseTransitions") or 0)

        # one drift: exactly one heal, by the leader, and one Event with count 1
        edit_as(c, web, {"spec": {"replicas": 4}}, "kubectl-edit")
        wait_for("the heal", lambda: c.get(web)["spec"]["replicas"] == 2)
        wait_for("its Event", lambda: healed_events(c, repo))
        time.sleep(5)               # room for a second (wrong) heal to show up
        assert len(leader.heals()) == 1 and follower.heals() == [], (leader.heals(), follower.heals())
        events = healed_events(c, repo)
        assert [e["count"] for e in events] == [1], events
        assert holder(c, repo.target) == first

        # kill -9 the leader: no release; the follower waits out the lease, then acts
        killed = time.monotonic()
        leader.proc.send_signal(signal.SIGKILL)
        leader.proc.wait(timeout=30)
        second = wait_for(f"a new Lease holder within 3 lease durations ({3 * LEASE_SECONDS}s)",
                          lambda: (h := holder(c, repo.target)) != first and h, timeout=3 * LEASE_SECONDS)
        print(f"\nfailover after SIGKILL: {time.monotonic() - killed:.1f}s (lease duration {LEASE_SECONDS}s)")
        assert second.startswith(follower.name)
        lease = c.get(election_ref(repo.target))
        assert lease is not None and int(lease["spec"]["leaseTransitions"]) == transitions + 1
        wait_for("the new leader ready", lambda: follower.get("/readyz")[0] == 200, timeout=120)
        assert sample(follower.get("/metrics")[1], "intentc_leader") == 1.0

        edit_as(c, web, {"spec": {"replicas": 7}}, "kubectl-edit")
        wait_for("the heal by the new leader", lambda: c.get(web)["spec"]["replicas"] == 2)
        wait_for("the new leader's heal in its log", lambda: follower.heals())
        assert len(follower.heals()) == 1
        # the same drift again (spec.replicas by kubectl-edit): the same Event, one more count per heal
        counts = [e["count"] for e in healed_events(c, repo)]
        assert counts == [2], counts
        assert inventory(c, repo.target).commit == repo.head

        # a rolling update: a new replica follows, the leader gets SIGTERM and releases the Lease,
        # and the new replica takes over at its next retry, not a lease duration later
        third = replicas["daemon-c"] = Replica("daemon-c", repo, kube_env, tmp_path)
        wait_for("daemon-c following", lambda: third.get("/readyz") == (
            503, f"not ready: not leader (lease held by {second})\n"), timeout=120)
        stopped = time.monotonic()
        assert follower.stop() == 0
        wait_for("daemon-c holding the Lease", lambda: holder(c, repo.target).startswith("daemon-c_"), timeout=60)
        print(f"handover after SIGTERM: {time.monotonic() - stopped:.1f}s")
        assert any("released the leader Lease" in m for m in follower.messages())
        wait_for("daemon-c ready", lambda: third.get("/readyz")[0] == 200, timeout=120)
    finally:
        for r in replicas.values():
            r.stop()
