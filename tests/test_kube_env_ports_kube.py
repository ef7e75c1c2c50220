"""The test bed survives a port taken between `free_port()` and the server's bind.

CI once lost a module's control plane this way: the API server exited because another
process held the port it had been given. `KubeEnv.start` retries with new ports when,
and only when, a server's log says its address was in use.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir, free_port

pytestmark = pytest.mark.kube


def test_free_ports_are_outside_the_ephemeral_range_and_never_repeat() -> None:
    floor = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(p < floor for p in ports)


def test_a_taken_api_port_is_replaced_and_the_server_comes_up(tmp_path: Path) -> None:
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    env = KubeEnv(assets, tmp_path / "env")
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", env.api_port))
    squatter.listen()
    taken = env.api_port
    try:
        env.start()
        assert env.api_port != taken
        assert env.version().startswith("v1.")
        assert f":{env.api_port}" in env.kubeconfig.read_text()
    finally:
        env.stop()
        squatter.close()


def test_a_failure_that_is_not_a_port_is_not_retried(tmp_path: Path) -> None:
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    env = KubeEnv(assets, tmp_path / "env")
    env.dir.mkdir(parents=True)
    for name in ("sa.key", "sa.pub"):  # keys the API server cannot read: it exits at once
        (env.dir / name).write_text("not a key\n")
    first = env.api_port
    try:
        with pytest.raises(RuntimeError, match="kube-apiserver exited"):
            env.start(timeout=30)
        assert env.api_port == first
    finally:
        env.stop()
