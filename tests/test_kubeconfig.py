"""KUBECONFIG with several files is merged as kubectl merges it (no cluster needed:
connecting only loads the configuration; nothing is requested)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intentc.kube.client import KubeClient
from intentc.kube.errors import ConfigError
from intentc.kube.kubeconfig import kubeconfig_files


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


CLUSTERS = """apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority: ca.crt
users:
- name: admin
  user:
    token: from-clusters-file
"""

CONTEXTS = """apiVersion: v1
kind: Config
contexts:
- name: prod-admin
  context:
    cluster: prod
    user: admin
current-context: prod-admin
"""


@pytest.fixture
def split(tmp_path: Path) -> tuple[str, str]:
    """A cluster and its user in one file, the context that uses them in another
    (each in its own directory, so relative paths resolve per file)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "ca.crt").write_text("not parsed until a request is made\n")
    return _write(tmp_path / "a" / "config", CLUSTERS), _write(tmp_path / "b" / "config", CONTEXTS)


def _connect(monkeypatch: pytest.MonkeyPatch, *files: str, context: str | None = None) -> KubeClient:
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(files))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return KubeClient.connect(None, context)


def test_cluster_in_one_file_context_in_another(monkeypatch: pytest.MonkeyPatch, split: tuple[str, str]) -> None:
    clusters, contexts = split
    for order in ((clusters, contexts), (contexts, clusters)):
        client = _connect(monkeypatch, *order)
        cfg = client.api.configuration
        assert client.host == "https://prod.example:6443"
        assert cfg.api_key["BearerToken"] == "Bearer from-clusters-file"
        # a relative certificate path is relative to the file that names it
        assert cfg.ssl_ca_cert == str(Path(clusters).parent / "ca.crt")
        client.close()


def test_only_the_first_file_is_not_enough(monkeypatch: pytest.MonkeyPatch, split: tuple[str, str]) -> None:
    """What intentc did before: the first file alone has no context to use."""
    clusters, _ = split
    with pytest.raises(ConfigError):
        _connect(monkeypatch, clusters)


def test_first_definition_and_first_current_context_win(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         split: tuple[str, str]) -> None:
    clusters, contexts = split
    other = _write(tmp_path / "other", """apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://shadowed.example:6443
- name: dev
  cluster:
    server: https://dev.example:6443
contexts:
- name: dev
  context:
    cluster: dev
    user: admin
current-context: dev
""")
    # `contexts` sets current-context first (prod-admin); `clusters` defines `prod` first
    client = _connect(monkeypatch, contexts, clusters, other)
    assert client.host == "https://prod.example:6443"
    client.close()
    # `other` first: its current context and its definition of `prod` win
    client = _connect(monkeypatch, other, contexts, clusters)
    assert client.host == "https://dev.example:6443"
    client.close()
    client = _connect(monkeypatch, other, contexts, clusters, context="prod-admin")
    assert client.host == "https://shadowed.example:6443"
    client.close()


def test_missing_files_are_skipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, split: tuple[str, str]) -> None:
    clusters, contexts = split
    client = _connect(monkeypatch, str(tmp_path / "absent"), clusters, str(tmp_path / "gone"), contexts)
    assert client.host == "https://prod.example:6443"
    client.close()
    with pytest.raises(ConfigError, match="kubeconfig not found"):
        _connect(monkeypatch, str(tmp_path / "absent"), str(tmp_path / "gone"))


def test_flag_names_one_file(tmp_path: Path) -> None:
    env = {"KUBECONFIG": "/x:/y"}
    chosen = kubeconfig_files(str(tmp_path / "nope"), env)
    assert chosen.explicit and chosen.files == () and chosen.wanted == (str(tmp_path / "nope"),)
    assert kubeconfig_files(None, {}).wanted == (os.path.expanduser("~/.kube/config"),)
