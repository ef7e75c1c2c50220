"""Issue #36: `compile` / `apply` on a tree with uncommitted edits must not stamp HEAD's SHA.

The commands run as a user types them (typer's runner) in a real temporary git
repository; the stamps are read back from the manifests written.  The readers
of the stamp (drift, rollback's last known-good, the daemon's adoption) are
checked on a dirty stamp directly.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from typer.testing import CliRunner

from intentc.cli import app
from intentc.daemon.branch import Step, decide_head
from intentc.daemon.following import follower_adopts
from intentc.drift.detect import DriftClass, History, detect
from intentc.drift.quarantine import Quarantine
from intentc.drift.rollback import RollbackError, target_commit
from intentc.reconcile.inventory import LAST_GOOD, Inventory, Record
from intentc.render.model import (COMMIT_ANNOTATION, CONTENT_DIGEST_ANNOTATION, SPEC_HASH_ANNOTATION, dirty_base,
                                  dirty_stamp)
from intentc.render.stamp import stamp
from tests.git_support import ACTOR

ROOT = Path(__file__).parents[1]
TOPOLOGY = "clusters/cluster.yaml"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> git.Repo:
    """The example intents and topology committed in a fresh repository, as the current directory."""
    work = tmp_path / "work"
    shutil.copytree(ROOT / "intents", work / "intents")
    shutil.copytree(ROOT / "examples" / "topologies", work / "clusters")
    (work / ".gitignore").write_text("build/\n*.scratch.yaml\n", encoding="utf-8")
    (work / "README.md").write_text("notes\n", encoding="utf-8")
    r = git.Repo.init(work)
    r.index.add([".gitignore", "README.md", "intents", "clusters"])
    r.index.commit("intents", author=ACTOR, committer=ACTOR)
    monkeypatch.chdir(work)
    return r


def compile_(*extra: str) -> Any:
    return CliRunner().invoke(app, ["compile", "intents", "-t", TOPOLOGY, "-d", "build", *extra])


def annotations(out: str = "build") -> list[dict[str, str]]:
    """The annotations of every manifest written."""
    found = []
    for f in sorted((Path(out) / "manifests").glob("*.yaml")):
        body = yaml.safe_load(f.read_text(encoding="utf-8"))
        if isinstance(body, dict) and body.get("kind") != "Kustomization":
            found.append(body["metadata"]["annotations"])
    assert found
    return found


def edit(path: str, text: str = "\n# an edit\n") -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def test_clean_tree_stamps_head_and_no_digest(repo: git.Repo) -> None:
    edit("README.md")                                       # not an input
    (Path("build")).mkdir()
    Path("build/old.scratch.yaml").write_text("x: 1\n", encoding="utf-8")      # ignored
    res = compile_()
    assert res.exit_code == 0, res.output
    head = repo.head.commit.hexsha
    assert {a[COMMIT_ANNOTATION] for a in annotations()} == {head}
    assert not any(CONTENT_DIGEST_ANNOTATION in a for a in annotations())


@pytest.mark.parametrize("change", ["modified", "staged", "untracked", "deleted", "topology"])
def test_uncommitted_inputs_are_refused_with_their_names(repo: git.Repo, change: str) -> None:
    if change == "modified":
        edit("intents/nlp/pretrain.intent")
        named = "intents/nlp/pretrain.intent"
    elif change == "staged":
        edit("intents/nlp/pretrain.intent")
        repo.index.add(["intents/nlp/pretrain.intent"])
        named = "intents/nlp/pretrain.intent"
    elif change == "untracked":
        Path("intents/extra.intent").write_text("tenant extra {\n  quota: gpus 8\n}\n", encoding="utf-8")
        named = "intents/extra.intent"
    elif change == "deleted":
        os.unlink("intents/vision/serving.yaml")
        named = "intents/vision/serving.yaml"
    else:
        edit(TOPOLOGY)
        named = TOPOLOGY
    res = compile_()
    assert res.exit_code == 2
    message = res.stderr
    assert message.startswith("intentc: error: uncommitted changes to the inputs (")
    assert named in message and "--allow-dirty" in message
    assert repo.head.commit.hexsha[:12] in message
    assert "Traceback" not in res.output
    assert not Path("build").exists()                        # nothing written


def test_an_explicit_commit_is_refused_too(repo: git.Repo) -> None:
    edit("intents/nlp/pretrain.intent")
    res = compile_("--commit", repo.head.commit.hexsha)
    assert res.exit_code == 2
    assert "--commit " + repo.head.commit.hexsha[:12] in res.stderr


def test_refusal_names_at_most_five_files(repo: git.Repo) -> None:
    for n in range(7):
        Path(f"intents/extra{n}.intent").write_text(f"tenant extra{n} {{\n  quota: gpus 8\n}}\n", encoding="utf-8")
    res = compile_()
    assert res.exit_code == 2
    assert "intents/extra4.intent and 2 more" in res.stderr and "extra5" not in res.stderr


def test_allow_dirty_stamps_a_dirty_marker_and_a_digest(repo: git.Repo, tmp_path: Path) -> None:
    clean = compile_()
    assert clean.exit_code == 0, clean.output
    clean_hashes = [a[SPEC_HASH_ANNOTATION] for a in annotations()]
    edit("intents/nlp/pretrain.intent")
    res = compile_("--allow-dirty")
    assert res.exit_code == 0, res.output
    head = repo.head.commit.hexsha
    stamps = annotations()
    assert {a[COMMIT_ANNOTATION] for a in stamps} == {head + "-dirty"}
    assert all(a[COMMIT_ANNOTATION] != head for a in stamps)
    [digest] = {a[CONTENT_DIGEST_ANNOTATION] for a in stamps}
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert [a[SPEC_HASH_ANNOTATION] for a in stamps] == clean_hashes    # the digest is a stamp, not content
    assert f"commit {head[:12]}-dirty" in res.stderr and digest in res.stderr
    # deterministic: the same inputs, from another directory and an explicit --commit, give the same digest
    os.chdir("intents")
    again = CliRunner().invoke(app, ["compile", ".", "-t", f"../{TOPOLOGY}", "-d", str(tmp_path / "again"),
                                     "--allow-dirty", "--commit", head])
    assert again.exit_code == 0, again.output
    assert {a[CONTENT_DIGEST_ANNOTATION] for a in annotations(str(tmp_path / "again"))} == {digest}
    os.chdir("..")
    edit("intents/nlp/pretrain.intent", "\n# another edit\n")
    assert compile_("--allow-dirty").exit_code == 0
    assert {a[CONTENT_DIGEST_ANNOTATION] for a in annotations()} != {digest}


def test_outside_a_repository_only_commit_works_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "intents", tmp_path / "intents")
    monkeypatch.chdir(tmp_path)
    topo = str(ROOT / "examples" / "topologies" / "cluster.yaml")
    res = CliRunner().invoke(app, ["compile", "intents", "-t", topo, "-d", "build"])
    assert res.exit_code == 2 and "not inside a git repository" in res.stderr
    res = CliRunner().invoke(app, ["compile", "intents", "-t", topo, "-d", "build", "--commit", "c" * 40])
    assert res.exit_code == 0, res.output
    assert {a[COMMIT_ANNOTATION] for a in annotations()} == {"c" * 40}


def test_apply_refuses_before_touching_a_cluster(repo: git.Repo) -> None:
    edit("intents/nlp/pretrain.intent")
    res = CliRunner().invoke(app, ["apply", "intents", "-t", TOPOLOGY, "--kubeconfig", "/nonexistent/kubeconfig"])
    assert res.exit_code == 2
    assert res.stderr.startswith("intentc: error: uncommitted changes to the inputs (intents/nlp/pretrain.intent)")
    help_text = CliRunner().invoke(app, ["apply", "--help"]).stdout
    assert "--allow-dirty" in help_text and "--allow-dirty" in CliRunner().invoke(app, ["compile", "--help"]).stdout


# -- the readers of the commit stamp ----------------------------------------------

OLD, HEAD, ALIEN = "a" * 40, "b" * 40, "f" * 40
DIRTY = dirty_stamp(HEAD)


def deployment(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": "team-a",
                         "labels": {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": "serve",
                                    "intentc.dev/tenant": "team-a"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}


def dirty_live(image: str, base: str = HEAD) -> dict[str, Any]:
    live, _ = stamp(deployment(image), dirty_stamp(base))
    live["metadata"]["annotations"][CONTENT_DIGEST_ANNOTATION] = "sha256:" + "d" * 64
    return live


def test_the_dirty_stamp_is_never_a_commit() -> None:
    assert DIRTY == HEAD + "-dirty" and dirty_base(DIRTY) == HEAD and dirty_base(HEAD) is None


def test_drift_says_applied_from_a_dirty_tree() -> None:
    desired, _ = stamp(deployment("img:2"), HEAD)
    history = History((HEAD, OLD))
    [finding] = detect([desired], [dirty_live("img:1")], history=history).drifted
    assert finding.drift is DriftClass.STALE
    assert finding.message.startswith(f"applied from a dirty tree of {HEAD[:12]} (content sha256:dddddddddddd)")
    # the same content as the commit wants: in sync, whatever the stamp says
    assert not detect([desired], [dirty_live("img:2")], history=history).has_drift
    # a dirty tree of a commit the repository does not have
    [alien] = detect([desired], [dirty_live("img:1", ALIEN)], history=history).drifted
    assert alien.drift is DriftClass.FOREIGN and "dirty tree of " + ALIEN[:12] in alien.message


def applied(inventory: Inventory, commit: str, at: str) -> Inventory:
    return inventory.with_record(Record(commit, at, at, result="succeeded", health="Healthy"))


def test_a_dirty_apply_is_never_last_known_good_nor_a_rollback_target() -> None:
    inventory = applied(applied(Inventory(), OLD, "2026-01-01T00:00:00Z"), DIRTY, "2026-01-02T00:00:00Z")
    assert inventory.commit == DIRTY                       # what is on the cluster, said as it is
    assert inventory.last_known_good == OLD                # ... but never a known-good commit
    assert inventory.applied_commit is None
    assert target_commit(inventory, ".", LAST_GOOD) == OLD
    with pytest.raises(RollbackError, match="dirty tree"):
        target_commit(Inventory(last_known_good=DIRTY), ".", LAST_GOOD)


def test_the_daemon_never_adopts_a_dirty_stamp() -> None:
    inventory = applied(applied(Inventory(), OLD, "2026-01-01T00:00:00Z"), DIRTY, "2026-01-02T00:00:00Z")
    assert follower_adopts(inventory, None) == OLD
    # the branch head the dirty tree was made on is rolled out, not taken as applied
    decision = decide_head(HEAD, previous_head=None, in_force=None, inventory=inventory,
                           quarantine=Quarantine(), attempted=set())
    assert decision.step is Step.ROLL_OUT


def test_a_fleet_compile_checks_its_cluster_files_and_their_topologies(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "fleet"
    shutil.copytree(ROOT / "tests" / "fixtures" / "fleet", work)
    r = git.Repo.init(work)
    r.index.add(["intents", "clusters", "topologies"])
    r.index.commit("fleet", author=ACTOR, committer=ACTOR)
    monkeypatch.chdir(work)
    argv = ["compile", "intents", "--clusters", "clusters", "-d", "build"]
    assert CliRunner().invoke(app, argv).exit_code == 0
    topology = sorted(Path("topologies").glob("*.yaml"))[0].as_posix()
    edit(topology)
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and f"uncommitted changes to the inputs ({topology})" in res.stderr
    res = CliRunner().invoke(app, [*argv, "--allow-dirty"])
    assert res.exit_code == 0, res.output
    cluster = sorted(Path("build").iterdir())[0]
    assert {a[COMMIT_ANNOTATION] for a in annotations(str(cluster))} == {r.head.commit.hexsha + "-dirty"}
