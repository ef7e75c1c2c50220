"""The compiled manifests directory with the test bed's own kubectl: `kubectl kustomize` builds
it through its `Kustomization` (every object, in apply order), and `kubectl apply -f` of the
directory leaves that file alone instead of failing on a "Kustomization" object."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from intentc.pipeline import compile_paths, write_outputs
from tests.kube_env import KubeEnv, assets_dir

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parent.parent
SHA = "5" * 40


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example, compiled."""
    result = compile_paths([str(ROOT / "intents")], str(ROOT / "examples" / "topologies" / "cluster.yaml"), SHA)
    assert result.ok, [str(d) for d in result.diagnostics if d.is_error]
    out = tmp_path_factory.mktemp("build")
    write_outputs(result, out)
    return out / "manifests"


def test_kubectl_kustomize_builds_every_manifest_in_order(manifests: Path) -> None:
    assets = assets_dir()
    assert assets is not None
    built = subprocess.run([str(assets / "kubectl"), "kustomize", str(manifests)],
                           capture_output=True, text=True, check=True).stdout
    objects = [d for d in yaml.safe_load_all(built) if d]
    listed = yaml.safe_load((manifests / "Kustomization").read_text())["resources"]
    assert len(objects) == len(listed) == len(list(manifests.glob("*.yaml"))) > 10
    expected = [yaml.safe_load((manifests / name).read_text()) for name in listed]
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == \
        [(e["kind"], e["metadata"]["name"]) for e in expected], "fifo: the files' order, not kustomize's by kind"


def test_kubectl_apply_f_skips_the_kustomization(kube_env: KubeEnv, manifests: Path, tmp_path: Path) -> None:
    """The namespaces alone (built-in kinds), with the Kustomization beside them: a server-side
    dry run of the directory succeeds, so kubectl never read the Kustomization as an object."""
    some = tmp_path / "manifests"
    some.mkdir()
    for f in manifests.glob("00-namespace-*.yaml"):
        shutil.copy(f, some / f.name)
    shutil.copy(manifests / "Kustomization", some / "Kustomization")
    done = kube_env.kubectl_run("apply", "--dry-run=server", "-f", str(some), "-o", "name", check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == sorted(f"namespace/{f.name[len('00-namespace-'):-len('.yaml')]}"
                                                 for f in some.glob("*.yaml"))
