"""`intentc diff --kubeconfig` says where apply's live binding differs from the preview (issue 12 item 3).

On the real test bed (tests/test_apply_live_kube.py's cases: two fake 8-GPU
nodes of their own per test): with nothing else on them the binding equals
the preview; with a foreign pod holding GPUs the preview gives `first`, the
diff shows `first` moving to the other node and why, in text, JSON and the
github format, and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from tests.git_support import commit
from tests.kube_env import KubeEnv
from tests.kube_support import invoke
from tests.test_apply_live_kube import Case

pytestmark = pytest.mark.kube


def test_diff_shows_the_live_binding_and_why(kube_cluster: KubeEnv, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    case = Case(tmp_path, kube_cluster)
    repo = git.Repo.init(case.dir, initial_branch="main")
    commit(repo, {"intents/main.intent": (case.dir / "intents" / "main.intent").read_text(),
                  "cluster.yaml": case.topology.read_text()}, "intents")
    monkeypatch.chdir(case.dir)
    preview = case.preview_node("first")
    other = case.other(preview)
    diff = ("diff", "--base", "HEAD", "-t", "cluster.yaml", "--no-cache", "--kubeconfig", str(kube_cluster.kubeconfig),
            "--only-topology-nodes")

    # nothing else on the nodes: apply would bind as previewed
    code, out, output = invoke(*diff)
    assert code == 0, output
    assert "no semantic change" in out and "equals the preview (2 intent(s))" in out, output

    pod = case.foreign_pod(preview, 4)
    code, out, output = invoke(*diff, "-o", "json")
    assert code == 0, output
    binding = json.loads(out[out.find("{"):])["binding"]
    assert binding["bound"] and not binding["equal"], binding
    first = next(r for r in binding["rebindings"] if r["intent"] == "first")
    assert first["preview"] == [{"node": preview, "gpus": list(range(8))}], first
    assert first["live"] == [{"node": other, "gpus": list(range(8))}], first
    assert f"{preview} GPU 4,5,6,7 taken (pod {pod}, 4 GPU(s) by count)" in first["reasons"], first

    code, out, output = invoke(*diff)
    assert code == 0, output
    assert (f"  rebind first: preview {preview} GPU 0-7 -> live {other} GPU 0-7 ({preview} GPU 4,5,6,7 taken "
            f"(pod {pod}, 4 GPU(s) by count))") in out, out
    # the same words apply --dry-run reports
    code, applied, output = invoke("apply", "intents", "-t", "cluster.yaml", "--kubeconfig",
                                   str(kube_cluster.kubeconfig), "--target", case.t, "--dry-run",
                                   "--only-topology-nodes")
    assert code == 0 and f"first: preview {preview} GPU 0-7 -> live {other} GPU 0-7 ({preview} GPU 4,5,6,7" \
        in applied, output

    code, out, output = invoke(*diff, "-o", "github")
    warning = next(line for line in out.splitlines() if "bound elsewhere" in line and "first" in line)
    assert warning.startswith("::warning file=intents/main.intent,line=3,"), warning
    assert f"preview {preview} GPU 0-7 -> live {other} GPU 0-7" in warning, warning
    # a diff writes nothing
    assert kube_cluster.kubectl_run("get", "jobs", "-n", case.tenant, "-o", "name").stdout == ""
