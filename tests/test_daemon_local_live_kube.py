"""The daemon's local (hot-reload) mode binds on live state like its git mode (issue 12 item 3).

`intentc daemon --local` follows the working tree and rolls out each
snapshot the reloader compiles; that snapshot's plan is the preview, and
each wave is re-planned on what the cluster has free just before it is
created.  A foreign pod holding GPUs of the preview's node sends `first` to
the other node (tests/test_apply_live_kube.py's cases: two fake 8-GPU nodes
of their own per test).
"""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from intentc.render.model import PREVIEW_HASH_ANNOTATION
from tests.git_support import commit
from tests.kube_env import KubeEnv
from tests.kube_support import wait_for
from tests.test_apply_live_kube import Case, pinned_node, running_daemon

pytestmark = pytest.mark.kube


def test_the_local_mode_daemon_binds_on_live_state(kube_cluster: KubeEnv, tmp_path: Path) -> None:
    case = Case(tmp_path, kube_cluster)
    preview = case.preview_node("first")
    case.foreign_pod(preview, 4)
    repo = git.Repo.init(case.dir, initial_branch="main")      # local mode stamps git HEAD
    commit(repo, {"intents/main.intent": (case.dir / "intents" / "main.intent").read_text(),
                  "cluster.yaml": case.topology.read_text()}, "intents")
    with running_daemon(case, tmp_path, "--local") as log:
        wait_for(lambda: case.has_job("first"), 120, "the local-mode daemon creates first")
        job = case.job("first")
        assert pinned_node(job) == case.other(preview), log.read_text()
        assert job["metadata"]["annotations"][PREVIEW_HASH_ANNOTATION], job["metadata"]
        wait_for(lambda: any(case.events("LiveBinding")), 60, "a LiveBinding Event")
        said = " ".join(e["message"] for e in case.events("LiveBinding"))
        assert f"first: preview {preview} GPU 0-7 -> live {case.other(preview)} GPU 0-7" in said, said
