"""`intentc rollback` by hand, against a real kube-apiserver + etcd."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.drift.quarantine import Quarantine
from intentc.kube.client import KubeClient
from intentc.reconcile.inventory import Inventory, inventory_ref
from intentc.render.model import COMMIT_ANNOTATION
from tests.kube_env import KubeEnv
from tests.test_daemon_kube import deployment_available, job_done
from tests.test_drift_kube import DriftRepo

pytestmark = pytest.mark.kube
runner = CliRunner()


def image(c: KubeClient, repo: DriftRepo) -> tuple[str, str]:
    live = c.get(repo.ref("Deployment", "web"))
    assert live is not None
    return live["spec"]["template"]["spec"]["containers"][0]["image"], live["metadata"]["annotations"][COMMIT_ANNOTATION]


def known_good(repo: DriftRepo) -> tuple[KubeClient, str]:
    """Apply the head, play the controllers (the Job done, the Deployment available) and
    apply it again, now healthy: the inventory records it as the last known-good.
    Returns a client and that commit."""
    c = repo.client()
    good = repo.head
    repo.apply()
    job_done(c, repo.ref("Job", "prep"))
    deployment_available(c, repo.ref("Deployment", "web"))
    repo.apply()
    return c, good


def test_rollback_by_hand_dry_run_then_for_real(tmp_path: Path, kube_env: KubeEnv) -> None:
    repo = DriftRepo(tmp_path, kube_env)
    c, good = known_good(repo)
    inv = Inventory.from_configmap(c.get(inventory_ref(repo.target)), repo.target)
    assert inv.last_known_good == good
    bad = repo.commit("new web image", web_image="nginx:9.9")
    repo.apply()
    assert image(c, repo) == ("nginx:9.9", bad)

    args = ["rollback", "--to", "last-good", "--repo", str(repo.dir), "--path", "intents",
            "-t", "clusters/small.yaml", "--kubeconfig", str(kube_env.kubeconfig), "--target", repo.target,
            "--no-wait", "--reason", "nginx 9.9 leaks memory"]
    dry = runner.invoke(app, args + ["--dry-run", "-o", "json"])
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.stdout)
    assert (doc["from"], doc["to"], doc["dryRun"], doc["quarantined"]) == (bad, good, True, False)
    assert {(o["kind"], o["name"]): o["action"] for o in doc["apply"]["objects"]}[("Deployment", "web")] == "update"
    assert image(c, repo) == ("nginx:9.9", bad), "a dry run writes nothing"
    assert bad not in Quarantine.from_configmap(c.get(inventory_ref(repo.target)))

    real = runner.invoke(app, args)
    assert real.exit_code == 0, real.output
    assert f"rollback from {bad[:12]} to {good[:12]}" in real.stdout
    assert image(c, repo) == ("nginx:1.0", good)
    entry = Quarantine.from_configmap(c.get(inventory_ref(repo.target))).get(bad)
    assert entry is not None and entry.reason == "nginx 9.9 leaks memory" and entry.rolled_back_to == good
    assert any(e["reason"] == "RolledBack" and "nginx 9.9 leaks memory" in e["message"]
               for e in c.events(inventory_ref(repo.target)))
    # the reconciler's inventory document survived next to the quarantine record
    inv = Inventory.from_configmap(c.get(inventory_ref(repo.target)), repo.target)
    assert inv.commit == good

    # back to a named revision: the bad one, on purpose
    again = runner.invoke(app, args[:2] + [bad] + args[3:])
    assert again.exit_code == 0, again.output
    assert image(c, repo) == ("nginx:9.9", bad)


def test_rollback_errors_exit_2(tmp_path: Path, kube_env: KubeEnv) -> None:
    repo = DriftRepo(tmp_path, kube_env)
    base = ["rollback", "--repo", str(repo.dir), "-t", "clusters/small.yaml",
            "--kubeconfig", str(kube_env.kubeconfig), "--target", repo.target]
    nothing = runner.invoke(app, base + ["--to", "last-good"])
    assert nothing.exit_code == 2 and "no last known-good commit" in nothing.output
    repo.apply()
    unknown = runner.invoke(app, base + ["--to", "no-such-branch"])
    assert unknown.exit_code == 2 and "no-such-branch" in unknown.output
    outside = runner.invoke(app, ["rollback", "--to", "last-good", "--repo", str(tmp_path), "-t", "x.yaml"])
    assert outside.exit_code == 2 and "not inside a git repository" in outside.output
