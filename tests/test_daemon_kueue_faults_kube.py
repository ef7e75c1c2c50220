"""The API server, then etcd, restarted in the middle of a Kueue rollout (issue 39, item 3).

`intentc daemon --render-target kueue` follows a branch on the whole test
bed (controller-manager, scheduler, kwok, Kueue; fake GPU nodes) with the
audit log on.  Each run commits a new training intent; once the daemon's
rollout of it has written to the cluster (the audit log says so), the test
restarts kube-apiserver and then etcd (data kept) under it.  Goals: the
rollout converges on the commit in force (the inventory records it as
succeeded and Kueue ran the new Job to completion) and no inventory entry
is lost.  The recovery time is measured from the API server's side: from
the stop of the API server to the inventory's record of success (its
write in the audit log).  Runs: INTENTC_FAULT_REPEATS (2 in the suite).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import git
import pytest

from intentc.kube.client import KubeClient
from intentc.reconcile.inventory import Inventory, inventory_ref
from tests import audit
from tests.conftest import _control_plane
from tests.daemon_proc import DaemonProc
from tests.kube_env import KubeEnv, _stop
from tests.kube_nodes import add_topology
from tests.test_daemon_kube import wait_for
from tests.test_daemon_partition_kube import ELECTION, REPEATS, identity, report, user_of, wait_audit

pytestmark = pytest.mark.kube
TOPOLOGY = Path(__file__).parent / "fixtures" / "testbed" / "cluster.yaml"
TARGET = "kueue-faults"
TENANTS = "tenant tn-gold { tier: gold }\n"


def intent(name: str) -> str:
    return (f'intent {name} {{\n  trigger: on push\n  action: training image "busybox:1.36"\n'
            f'  context: tenant tn-gold\n  constraints: cpu 1, memory 1Gi, gpus 1 x "H100-80GB" within node, '
            f'sla P2\n}}\n')


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """The whole test bed with Kueue and the audit log, and the testbed's fake GPU nodes."""
    for env in _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok", "kueue"), audit=True):
        add_topology(env, str(TOPOLOGY))
        yield env


def inventory(c: KubeClient) -> Inventory:
    return Inventory.from_configmap(c.get(inventory_ref(TARGET)), TARGET)


def entries(c: KubeClient) -> set[tuple[str, str, str, str]]:
    return {(e.ref.api_version, e.ref.kind, e.ref.namespace, e.ref.name) for e in inventory(c).entries}


def converged(c: KubeClient, env: KubeEnv, commit: str, job: str) -> bool:
    """The inventory records `commit` as applied and succeeded, and Kueue ran its new Job."""
    inv = inventory(c)
    if inv.commit != commit or inv.last is None or inv.last.result != "succeeded":
        return False
    live = json.loads(env.kubectl_run("get", "job", job, "-n", "tn-gold", "-o", "json").stdout)
    return any(x["type"] == "Complete" and x["status"] == "True" for x in live.get("status", {}).get("conditions", []))


def test_api_server_then_etcd_restarted_mid_kueue_rollout_converge_without_losing_entries(
        bed: KubeEnv, tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    (repo_dir / "intents").mkdir(parents=True)
    (repo_dir / "clusters").mkdir()
    (repo_dir / "clusters" / "cluster.yaml").write_text(TOPOLOGY.read_text())
    (repo_dir / "intents" / "tenants.intent").write_text(TENANTS)
    (repo_dir / "intents" / "jobs.intent").write_text(intent("train0"))
    repo = git.Repo.init(repo_dir, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")

    def commit(message: str) -> str:
        repo.git.add(A=True)
        return str(repo.index.commit(message).hexsha)
    head = commit("one training job")
    c = KubeClient.connect(str(bed.kubeconfig))
    name = "kueue-daemon"
    kubeconfig = identity(bed, name, tmp_path)
    daemon = DaemonProc(name, repo_dir, TARGET, kubeconfig, tmp_path, "--render-target", "kueue", "--metrics-listen=",
                        "--rollout-timeout", "240", *ELECTION, topology="clusters/cluster.yaml")
    user = user_of(name)
    try:
        wait_for("the first rollout converged", lambda: converged(c, bed, head, "train0"), timeout=300)
        jobs = intent("train0")
        for run in range(REPEATS):
            before = entries(c)
            jobs += intent(f"train{run + 1}")
            (repo_dir / "intents" / "jobs.intent").write_text(jobs)
            since = datetime.now(timezone.utc)
            head = commit(f"training job {run + 1}")
            # the rollout's first write: the inventory, marked pending ahead of the objects
            wait_audit(bed, since, user, lambda w: w.resource == "configmaps" and w.name == inventory_ref(TARGET).name,
                       timeout=240)
            stopped = datetime.now(timezone.utc)
            bed.stop_apiserver()
            bed.start_apiserver()
            _stop(bed.etcd)
            bed.start_etcd()
            bed.wait_ready(120)
            back = datetime.now(timezone.utc)
            wait_for("the rollout converged after the restarts",
                     lambda: converged(c, bed, head, f"train{run + 1}"), timeout=400)
            seen = datetime.now(timezone.utc)
            writes = audit.read(bed.audit_log, since)
            recorded = max(w.done for w in writes if w.user == user and w.ok and w.resource == "configmaps")
            after = entries(c)
            counts: dict[str, Any] = {"writes_by_user": audit.by_user(writes),
                                      "inventory_entries": [len(before), len(after)], "lost": len(before - after)}
            report("kueue-restarts", run, {"outage": (back - stopped).total_seconds(),
                                           "inventory_recorded": (recorded - stopped).total_seconds(),
                                           "converged_seen": (seen - stopped).total_seconds()}, counts)
            assert before - after == set(), before - after
            assert (ref := ("batch/v1", "Job", "tn-gold", f"train{run + 1}")) in after, ref
    finally:
        daemon.stop()
