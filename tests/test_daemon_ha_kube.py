"""Two `intentc daemon` processes on one target, against a real API server (issue 14).

Exactly one holds the Lease and acts: one heal and one Event (count 1) per
drift.  Killing the leader with SIGKILL (no release) hands the target to
the follower within about one lease duration, and the new leader heals the
next drift; stopping a leader with SIGTERM (a rolling update) hands over
at once, through the released Lease.  The failover time is printed; the only bound asserted on it is
a generous multiple of the lease duration (the machine is shared).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from intentc.daemon.election import election_ref
from intentc.kube.client import KubeClient
from tests.kube_env import KubeEnv, free_port
from tests.test_daemon_kube import deployment_available, inventory, job_done, sample, wait_for
from tests.test_drift_kube import DriftRepo, edit_as

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parent.parent
LEASE_SECONDS = 15          # the CLI's default, which this test runs with


class Replica:
    def __init__(self, name: str, repo: DriftRepo, env: KubeEnv, tmp: Path) -> None:
        self.name, self.port, self.log = name, free_port(), tmp / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo.dir), "--branch", "main",
             "-t", "clusters/small.yaml", "--kubeconfig", str(env.kubeconfig), "--target", repo.target,
             "--listen", f"127.0.0.1:{self.port}", "--no-metrics-secure", "--interval", "1", "--resync", "30",
             "--workdir", str(tmp / f"work-{name}"), "--log-format", "json"],
            cwd=ROOT, env=dict(os.environ, POD_NAME=name), stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def messages(self) -> list[str]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(str(json.loads(line)["msg"]))
            except (ValueError, KeyError):
                out.append(line)
        return out

    def heals(self) -> list[str]:
        return [m for m in self.messages() if m.startswith("healed ")]

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def holder(c: KubeClient, target: str) -> str:
    lease = c.get(election_ref(target)) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


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
        second = wait_for("a new Lease holder", lambda: (h := holder(c, repo.target)) != first and h,
                          timeout=6 * LEASE_SECONDS)
        failover = time.monotonic() - killed
        print(f"\nfailover after SIGKILL: {failover:.1f}s (lease duration {LEASE_SECONDS}s)")
        assert second.startswith(follower.name)
        assert failover < 3 * LEASE_SECONDS, failover
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
