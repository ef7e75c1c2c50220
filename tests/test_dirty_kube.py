"""Issue #36 on a real kube-apiserver: an apply from a dirty tree, as a user types it.

Refused without --allow-dirty (nothing written); with it, the objects carry
`<sha>-dirty` and a content digest, the inventory never takes it for the last
known-good commit, `drift` says where the objects came from once the tree is
clean again, and `rollback --to last-good` goes back to the commit without
quarantining a stamp that is no commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.drift.quarantine import Quarantine
from intentc.reconcile.inventory import Inventory, inventory_ref
from intentc.render.model import CONTENT_DIGEST_ANNOTATION
from tests.kube_env import KubeEnv
from tests.test_drift_kube import DriftRepo
from tests.test_rollback_kube import image, known_good

pytestmark = pytest.mark.kube
runner = CliRunner()


def test_a_dirty_apply_is_said_as_such_and_never_rolled_back_to(tmp_path: Path, kube_env: KubeEnv) -> None:
    repo = DriftRepo(tmp_path, kube_env)
    c, good = known_good(repo)
    where = ["-t", str(repo.dir / "clusters" / "small.yaml"), "--kubeconfig", str(kube_env.kubeconfig),
             "--target", repo.target]
    apply = ["apply", str(repo.dir / "intents"), *where, "--no-wait", "--binding", "preview"]

    repo.write(web_image="nginx:9.9")               # an edit, not committed
    refused = runner.invoke(app, apply)
    assert refused.exit_code == 2, refused.output
    assert "uncommitted changes to the inputs (intents/team.intent)" in refused.stderr
    assert image(c, repo) == ("nginx:1.0", good), "a refused apply writes nothing"

    allowed = runner.invoke(app, [*apply, "--allow-dirty"])
    assert allowed.exit_code == 0, allowed.output
    assert f"commit {good[:12]}-dirty" in allowed.stdout
    assert image(c, repo) == ("nginx:9.9", good + "-dirty")
    web = c.get(repo.ref("Deployment", "web"))
    assert web is not None and web["metadata"]["annotations"][CONTENT_DIGEST_ANNOTATION].startswith("sha256:")
    inv = Inventory.from_configmap(c.get(inventory_ref(repo.target)), repo.target)
    assert inv.commit == good + "-dirty" and inv.last_known_good == good

    repo.write(web_image="nginx:1.0")               # the tree is clean again
    drift = runner.invoke(app, ["drift", str(repo.dir / "intents"), *where, "-o", "json"])
    assert drift.exit_code == 1, drift.output
    [finding] = [f for f in json.loads(drift.stdout)["findings"] if f["object"]["name"] == "web"]
    assert finding["class"] == "stale" and finding["live_commit"] == good + "-dirty"
    assert finding["message"].startswith(f"applied from a dirty tree of {good[:12]} (content sha256:")

    back = runner.invoke(app, ["rollback", "--to", "last-good", "--repo", str(repo.dir), "--path", "intents",
                               "-t", "clusters/small.yaml", "--kubeconfig", str(kube_env.kubeconfig),
                               "--target", repo.target, "--no-wait", "-o", "json"])
    assert back.exit_code == 0, back.output
    doc = json.loads(back.stdout)
    assert (doc["from"], doc["to"], doc["quarantined"]) == (good + "-dirty", good, False)
    assert image(c, repo) == ("nginx:1.0", good)
    assert good + "-dirty" not in Quarantine.from_configmap(c.get(inventory_ref(repo.target)))
