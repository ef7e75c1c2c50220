"""Partitions and crashes, counted by the API server (issue 39, item 3).

Leader election is argued in docs/daemon-ha.md; here it is measured.  The
API server runs with an audit log (`KubeEnv(audit=True)`), every daemon
process runs as its own ServiceAccount, so the log says which replica wrote
what and when by the server's clock, and `tests/audit.py` counts the
*acting* writes (to managed objects; Lease renewals and Events are not
acting).  The scenarios, each repeated `REPEATS` times (the environment
variable INTENTC_FAULT_REPEATS; `benchmarks/bench_faults.py` raises it):

* the leader cut off from the API server by a TCP proxy, its process alive
  (`tests/tcp_proxy.py`); the follower takes over and heals what drifted
  meanwhile; the partition heals and the old leader must only follow;
* the election Lease deleted by hand while drift is being made;
* the daemon SIGKILLed in the middle of a heal, and in the middle of a
  rollback, then started again.

Goals, each asserted: 0 windows in which two replicas wrote (the writers of
the acting writes, in the server's order, change once per takeover and
never back); every run converges to the commit in force; 0 inventory
entries lost.  Recovery times are taken from the audit log (the server's
timestamps), never from a daemon's log, printed, and appended as JSON lines
to $INTENTC_FAULT_RESULTS when set (the benchmark's summary).  Timings: a 6 s
lease, a 4 s renew deadline, a 1 s retry period, so a takeover costs
seconds, not the defaults' 15.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from intentc.daemon.election import election_ref
from intentc.kube.client import MERGE_PATCH, KubeClient
from intentc.reconcile.inventory import Inventory, inventory_ref
from intentc.reconcile.lock import lease_ref as apply_lock_ref
from intentc.objectmeta import ObjectRef
from tests import audit
from tests.conftest import _control_plane
from tests.daemon_proc import DaemonProc, holder
from tests.kube_env import KubeEnv
from tests.tcp_proxy import TcpProxy
from tests.test_daemon_kube import commit_of, deployment_available, job_done, wait_for
from tests.test_drift_kube import DriftRepo, edit_as

pytestmark = pytest.mark.kube
REPEATS = int(os.environ.get("INTENTC_FAULT_REPEATS", "2"))
LEASE = ("6s", "4s", "1s")          # lease duration, renew deadline, retry period
ELECTION = ("--leader-elect-lease-duration", LEASE[0], "--leader-elect-renew-deadline", LEASE[1],
            "--leader-elect-retry-period", LEASE[2])
NAMESPACE = "intentc-system"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """etcd + kube-apiserver with the audit log on: one control plane for the module."""
    yield from _control_plane(tmp_path_factory, (), audit=True)


def user_of(name: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{name}"


def identity(env: KubeEnv, name: str, tmp: Path, server: str | None = None) -> Path:
    """A kubeconfig for a ServiceAccount of its own (cluster-admin: the subject here is
    who wrote, not what it may write; tests/test_rbac.py holds the daemon's role), whose
    server is `server` (a proxy) or the API server itself."""
    env.kubectl_run("create", "namespace", NAMESPACE, check=False)
    env.kubectl_run("create", "serviceaccount", name, "-n", NAMESPACE)
    env.kubectl_run("create", "clusterrolebinding", f"fault-{name}", "--clusterrole=cluster-admin",
                    f"--serviceaccount={NAMESPACE}:{name}")
    token = env.kubectl_run("create", "token", name, "-n", NAMESPACE, "--duration=2h").stdout.strip()
    text = env.kubeconfig_text().replace(env.token, token)
    if server is not None:
        text = text.replace(env.server, f"https://{server}")
    path = tmp / f"kubeconfig-{name}"
    path.write_text(text)
    return path


class Daemon(DaemonProc):
    """One `intentc daemon` process, as its own ServiceAccount, optionally behind a proxy."""

    def __init__(self, name: str, repo: DriftRepo, env: KubeEnv, tmp: Path, proxy: TcpProxy | None = None) -> None:
        self.user, self.proxy = user_of(name), proxy
        kubeconfig = identity(env, name, tmp, proxy.address if proxy is not None else None)
        # no /metrics listener beside the probes (two replicas on one host)
        super().__init__(name, repo.dir, repo.target, kubeconfig, tmp, "--metrics-listen=",
                         "--rollout-timeout", "120", *ELECTION)

    def stop(self) -> int | None:
        code = super().stop()
        if self.proxy is not None:
            self.proxy.close()
        return code


def now() -> datetime:
    return datetime.now(timezone.utc)


def replicas_of(c: KubeClient, repo: DriftRepo) -> int:
    live = c.get(repo.ref("Deployment", "web")) or {}
    return int((live.get("spec") or {}).get("replicas") or 0)


def entries(c: KubeClient, target: str) -> set[tuple[str, str, str, str]]:
    inv = Inventory.from_configmap(c.get(inventory_ref(target)), target)
    return {(e.ref.api_version, e.ref.kind, e.ref.namespace, e.ref.name) for e in inv.entries}


def first_after(writes: list[audit.Write], user: str, since: datetime, resource: str | None = None,
                name: str | None = None) -> datetime | None:
    """When `user`'s first successful write (acting, or to `resource`/`name`) after `since` took effect."""
    for w in sorted(writes, key=lambda w: w.done):
        if w.user != user or not w.ok or w.done < since:
            continue
        if resource is None and w.acting or resource is not None and w.resource == resource and w.name == name:
            return w.done
    return None


def report(scenario: str, run: int, recovery: dict[str, float], counts: dict[str, Any]) -> None:
    line = {"scenario": scenario, "run": run, "recovery_s": recovery, **counts}
    print(f"\n{scenario} run {run}: " + json.dumps(line))
    out = os.environ.get("INTENTC_FAULT_RESULTS")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


def ready_pair(c: KubeClient, repo: DriftRepo, pair: dict[str, Daemon]) -> tuple[Daemon, Daemon]:
    """Wait for a leader that is ready and a follower that names it: (leader, follower)."""
    first = wait_for("a Lease holder", lambda: holder(c, repo.target), timeout=180)
    leader = pair[first.split("_", 1)[0]]
    follower = next(d for d in pair.values() if d is not leader)
    wait_for("the leader ready", lambda: leader.get("/readyz")[0] == 200, timeout=180)
    wait_for("the follower following", lambda: follower.get("/readyz") == (
        503, f"not ready: not leader (lease held by {first})\n"), timeout=180)
    return leader, follower


def healthy_repo(tmp: Path, env: KubeEnv, **kw: str) -> DriftRepo:
    """A repository applied and healthy (Job done, Deployment available): nothing to roll out."""
    repo = DriftRepo(tmp, env, **kw)
    repo.apply()
    c = repo.client()
    job_done(c, repo.ref("Job", "prep"))
    deployment_available(c, repo.ref("Deployment", "web"))
    return repo


def test_a_leader_cut_off_by_a_partition_never_writes_beside_its_successor(
        audited: KubeEnv, tmp_path: Path) -> None:
    """The leader's connection to the API server is cut while its process lives: the
    follower takes the Lease once it expires and heals the drift made during the
    partition; the partition heals and the old leader only follows."""
    repo = healthy_repo(tmp_path, audited, tenant_policy="heal")
    c = repo.client()
    web = repo.ref("Deployment", "web")
    for run in range(REPEATS):
        started = now()
        pair = {n: Daemon(n, repo, audited, tmp_path, TcpProxy(audited.api_port))
                for n in (f"cut{run}-a", f"cut{run}-b")}
        try:
            leader, follower = ready_pair(c, repo, pair)
            old = holder(c, repo.target)
            edit_as(c, web, {"spec": {"replicas": 4}}, "kubectl-edit")
            wait_for("the leader's heal", lambda: replicas_of(c, repo) == 2)
            assert leader.proxy is not None
            cut = now()
            leader.proxy.cut()
            edit_as(c, web, {"spec": {"replicas": 5}}, "kubectl-edit")      # drift while partitioned
            wait_for("the follower holding the Lease", lambda: holder(c, repo.target) not in ("", old), timeout=120)
            wait_for("the drift healed by the new leader", lambda: replicas_of(c, repo) == 2, timeout=120)
            new = holder(c, repo.target)
            assert new.startswith(follower.name + "_"), new
            assert leader.proc.poll() is None, "the cut-off leader's process lives on"
            leader.proxy.restore()
            wait_for("the old leader following the new one", lambda: leader.get("/readyz") == (
                503, f"not ready: not leader (lease held by {new})\n"), timeout=120)
            edit_as(c, web, {"spec": {"replicas": 6}}, "kubectl-edit")
            wait_for("the drift after the partition healed", lambda: replicas_of(c, repo) == 2, timeout=120)
        finally:
            for d in pair.values():
                d.stop()
        writes = audit.read(audited.audit_log, started)
        ordered = audit.acting(writes, (leader.user, follower.user))
        counts = audit.summary(writes, (leader.user, follower.user))
        took = first_after(writes, follower.user, cut, "leases", election_ref(repo.target).name)
        healed = first_after(writes, follower.user, cut)
        assert took is not None and healed is not None, counts
        report("partition", run, {"takeover": (took - cut).total_seconds(), "heal": (healed - cut).total_seconds()},
               counts)
        assert counts["acting_by_replica"][leader.user] >= 1 and counts["acting_by_replica"][follower.user] >= 1, \
            counts
        assert audit.overlapping_windows(ordered) == 0, [str(w) for w in ordered]
        assert audit.after_first(ordered, follower.user, leader.user) == [], [str(w) for w in ordered]
        assert commit_of(c.get(web)) == repo.head


def test_a_lease_deleted_by_hand_leaves_one_leader_and_no_two_writers(audited: KubeEnv, tmp_path: Path) -> None:
    """`kubectl delete lease` under two replicas while an editor keeps changing a managed
    object: afterwards exactly one replica leads, and the acting writes never interleave."""
    repo = healthy_repo(tmp_path, audited, tenant_policy="heal")
    c = repo.client()
    web, svc = repo.ref("Deployment", "web"), repo.ref("Service", "web")
    for run in range(REPEATS):
        started = now()
        pair = {n: Daemon(n, repo, audited, tmp_path) for n in (f"del{run}-a", f"del{run}-b")}
        try:
            leader, follower = ready_pair(c, repo, pair)
            edit_as(c, web, {"spec": {"replicas": 4}}, "kubectl-edit")
            wait_for("the leader's heal", lambda: replicas_of(c, repo) == 2)
            stop = threading.Event()

            def editor() -> None:       # drift on two objects while the Lease is gone and retaken
                n = 0
                while not stop.wait(0.3):
                    n += 1
                    try:
                        edit_as(c, web, {"spec": {"replicas": 3 + n % 5}}, "kubectl-edit")
                        edit_as(c, svc, {"metadata": {"labels": {"intentc.dev/tenant": f"x{n}"}}}, "kubectl-edit")
                    except Exception:           # noqa: BLE001 - an editor racing a heal may get a conflict
                        pass
            deleted = now()
            audited.kubectl_run("delete", "lease", election_ref(repo.target).name, "-n", NAMESPACE)
            fighter = threading.Thread(target=editor, daemon=True)
            fighter.start()
            wait_for("a holder again", lambda: holder(c, repo.target), timeout=60)
            time.sleep(6)       # the editor runs across the takeover (not an assertion: a span of drift)
            stop.set()
            fighter.join(10)
            wait_for("the last drift healed", lambda: replicas_of(c, repo) == 2, timeout=120)

            def one_leader() -> bool:
                h = holder(c, repo.target)
                states = {d.name: d.get("/readyz")[0] for d in pair.values()}
                return bool(h) and sorted(states.values()) == [200, 503] and states[h.split("_", 1)[0]] == 200
            wait_for("exactly one leader, ready, and the other following", one_leader, timeout=120)
            final = pair[holder(c, repo.target).split("_", 1)[0]].user
        finally:
            for d in pair.values():
                d.stop()
        users = (leader.user, follower.user)
        writes = audit.read(audited.audit_log, started)
        ordered = audit.acting(writes, users)
        counts = audit.summary(writes, users)
        retaken = min((w.done for w in writes if w.ok and w.user in users and w.resource == "leases"
                       and w.name == election_ref(repo.target).name and w.done >= deleted), default=None)
        # acting again: the first acting write by the leader that stayed (the old one, which
        # took the Lease back, or the new one, after its fence)
        healed = min((w.done for w in ordered if w.done >= deleted and w.user == final), default=None)
        assert retaken is not None and healed is not None, counts
        report("lease-deleted", run, {"retaken": (retaken - deleted).total_seconds(),
                                      "acting_again": (healed - deleted).total_seconds()},
               {**counts, "leader_after": final})
        assert audit.overlapping_windows(ordered) == 0, [str(w) for w in ordered]


class Controller:
    """Plays the Job and Deployment controllers for one repository: a Job of `good`
    succeeds, any other fails (a bad image); a Deployment becomes available."""

    def __init__(self, c: KubeClient, repo: DriftRepo, good: str) -> None:
        self.c, self.repo, self.good = c, repo, good
        self.hold = False           # the next Job it fails also gets a finalizer (its deletion waits)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        job, web = self.repo.ref("Job", "prep"), self.repo.ref("Deployment", "web")
        while not self._stop.wait(0.3):
            try:
                live = self.c.get(job)
                if live is not None and commit_of(live) and not (live.get("status") or {}).get("conditions"):
                    failed = commit_of(live) != self.good
                    if failed and self.hold:
                        hold(self.c, job, True)
                        self.hold = False
                    job_done(self.c, job, failed=failed)
                dep = self.c.get(web)
                if dep is not None and (dep.get("status") or {}).get("observedGeneration") != \
                        dep["metadata"].get("generation"):
                    deployment_available(self.c, web)
            except Exception:                   # noqa: BLE001 - racing the daemon's writes: next round
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def hold(c: KubeClient, ref: ObjectRef, on: bool) -> None:
    """Put a finalizer on the object (its deletion then waits), or take it off."""
    c.request("PATCH", c.resource(ref.api_version, ref.kind).path(ref.namespace, ref.name), (),
              {"metadata": {"finalizers": ["intentc.test/hold"] if on else None}}, MERGE_PATCH)


def converged(c: KubeClient, repo: DriftRepo, commit: str) -> bool:
    """The commit in force is on the cluster: the inventory says so, the Job (which every
    commit here changes) carries it, and the Deployment is there as desired (an object a
    commit does not change keeps the commit that last wrote it)."""
    inv = Inventory.from_configmap(c.get(inventory_ref(repo.target)), repo.target)
    return (inv.commit == commit and commit_of(c.get(repo.ref("Job", "prep"))) == commit
            and replicas_of(c, repo) == 2)


def wait_audit(env: KubeEnv, since: datetime, user: str, what: Any, timeout: float = 120.0,
               nth: int = 1) -> audit.Write:
    """Poll the audit log (every 20 ms) for `user`'s `nth` write after `since` matching `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [w for w in audit.read(env.audit_log, since) if w.user == user and w.ok and what(w)]
        if len(found) >= nth:
            return found[nth - 1]
        time.sleep(0.02)
    raise AssertionError(f"no matching write by {user} in the audit log within {timeout}s")


class Restarts:
    """A daemon for one repository, started again (as a new ServiceAccount) after each kill."""

    def __init__(self, prefix: str, repo: DriftRepo, env: KubeEnv, tmp: Path) -> None:
        self.prefix, self.repo, self.env, self.tmp, self.n = prefix, repo, env, tmp, 0
        self.daemon = self.start()

    def start(self) -> Daemon:
        self.n += 1
        self.daemon = Daemon(f"{self.prefix}{self.n}", self.repo, self.env, self.tmp)
        return self.daemon


def foreign_job(live: dict[str, Any], image: str) -> dict[str, Any]:
    """The live Job as someone else would create it again: another image, no intentc
    commit, a finalizer so that its deletion waits for the test (a heal that replaces it
    is then caught between its delete and its create)."""
    meta = live["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if "controller-uid" not in k and k != "job-name"
              and not k.startswith("batch.kubernetes.io/")}
    template = json.loads(json.dumps(live["spec"]["template"]))
    template["metadata"]["labels"] = {k: v for k, v in (template["metadata"].get("labels") or {}).items()
                                      if "controller-uid" not in k and k != "job-name"
                                      and not k.startswith("batch.kubernetes.io/")}
    template["spec"]["containers"][0]["image"] = image
    spec = {k: v for k, v in live["spec"].items() if k not in ("selector", "template")}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": labels,
                         "finalizers": ["intentc.test/hold"]},
            "spec": {**spec, "template": template}}


def test_a_daemon_killed_mid_heal_converges_when_restarted(audited: KubeEnv, tmp_path: Path) -> None:
    """The Job replaced by hand with another image (immutable: the heal must delete and
    create it again), held by a finalizer: the daemon is SIGKILLed once its delete is in
    the audit log, so the heal is half done; the finalizer goes, a daemon started again
    creates the Job of the commit in force, and the inventory keeps every entry."""
    repo = DriftRepo(tmp_path, audited, tenant_policy="heal")
    c = repo.client()
    job = repo.ref("Job", "prep")
    controller = Controller(c, repo, repo.head)
    daemons = Restarts("heal", repo, audited, tmp_path)
    try:
        wait_for("the first rollout converged", lambda: converged(c, repo, repo.head), timeout=180)
        for run in range(REPEATS):
            before = entries(c, repo.target)
            daemon = daemons.daemon
            wait_for("the daemon ready", lambda: daemon.get("/readyz")[0] == 200, timeout=180)
            since = now()
            daemon.proc.send_signal(signal.SIGSTOP)     # so it sees the replaced Job, not a missing one
            try:
                live = c.get(job)
                assert live is not None
                audited.kubectl_run("delete", "job", "prep", "-n", repo.tenant)
                c.create(foreign_job(live, f"busybox:foreign-{run}"))
            finally:
                daemon.proc.send_signal(signal.SIGCONT)
            wait_audit(audited, since, daemon.user, lambda w: w.resource == "jobs" and w.verb == "delete")
            daemon.kill()
            killed = now()
            held = c.get(job)
            assert held is not None and held["metadata"].get("deletionTimestamp"), "killed mid-heal"
            hold(c, job, False)
            daemon = daemons.start()
            wait_for("converged after the kill mid-heal", lambda: converged(c, repo, repo.head), timeout=180)
            writes = audit.read(audited.audit_log, since)
            back = first_after(writes, daemon.user, killed)
            assert back is not None
            after = entries(c, repo.target)
            report("kill-mid-heal", run, {"healed": (back - killed).total_seconds()},
                   {"writes_by_user": audit.by_user(writes), "inventory_entries": [len(before), len(after)],
                    "lost": len(before - after)})
            assert before - after == set(), before - after
    finally:
        controller.stop()
        daemons.daemon.stop()


def test_a_daemon_killed_mid_rollback_converges_when_restarted(audited: KubeEnv, tmp_path: Path) -> None:
    """A bad commit's Job fails and the daemon rolls back; it is SIGKILLed once the
    rollback deleted the bad Job (before the good one exists).  A daemon started again
    converges on the last good commit (the bad one quarantined), the inventory keeps
    every entry.  Its recovery includes the apply Lease the killed daemon left (15 s,
    `reconcile.lock.LEASE_SECONDS`)."""
    repo = DriftRepo(tmp_path, audited, tenant_policy="heal", prep_policy="rollback")
    good = repo.head
    c = repo.client()
    job = repo.ref("Job", "prep")
    controller = Controller(c, repo, good)
    daemons = Restarts("rollback", repo, audited, tmp_path)
    try:
        wait_for("the first rollout converged", lambda: converged(c, repo, good), timeout=180)
        for run in range(REPEATS):
            before = entries(c, repo.target)
            daemon = daemons.daemon
            # a Job's template is immutable: the rollout replaced the good Job (a delete), the
            # rollback replaces the bad one (the second delete), which the finalizer holds
            since = now()
            controller.hold = True
            bad = repo.commit(f"broken prep image {run}", prep_image=f"busybox:2.{run}-broken")
            wait_audit(audited, since, daemon.user, lambda w: w.resource == "jobs" and w.verb == "delete",
                       timeout=240, nth=2)
            daemon.kill()
            killed = now()
            held = c.get(job)
            assert held is not None and commit_of(held) == bad and held["metadata"].get("deletionTimestamp"), \
                "killed mid-rollback"
            hold(c, job, False)
            daemon = daemons.start()
            wait_for("converged after the kill mid-rollback", lambda: converged(c, repo, good), timeout=300)
            seen = now()
            writes = audit.read(audited.audit_log, since)
            back = first_after(writes, daemon.user, killed)
            assert back is not None
            after = entries(c, repo.target)
            report("kill-mid-rollback", run, {"first_write": (back - killed).total_seconds(),
                                              "converged": (seen - killed).total_seconds()},
                   {"writes_by_user": audit.by_user(writes), "inventory_entries": [len(before), len(after)],
                    "lost": len(before - after), "apply_lock": apply_lock_ref(repo.target).name})
            assert before - after == set(), before - after
            assert commit_of(c.get(job)) == good and bad != good
            # the next run starts from a good head again
            good = repo.commit(f"good again {run}", prep_image=f"busybox:1.{run + 1}")
            controller.good = good
            wait_for("the new good commit converged", lambda: converged(c, repo, good), timeout=300)
    finally:
        controller.stop()
        daemons.daemon.stop()
