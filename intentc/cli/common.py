"""Argument handling shared by the commands that compile and talk to a cluster.

Each helper turns a bad argument or an unreachable cluster into a usage
error (exit 2) so that every command reports them the same way.  The
Kubernetes client is imported inside `connect_or_exit`: importing it costs
about half a second, which commands that never connect should not pay.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, Sequence

from intentc.cli.app import usage_error
from intentc.compile import CommitError, resolve_commit
from intentc.render.capabilities import KubeVersion
from intentc.render.targets import TARGETS

if TYPE_CHECKING:
    from intentc.kube.client import KubeClient


def parse_kube_version(text: str | None, default: KubeVersion | None = None) -> KubeVersion | None:
    if text is None:
        return default
    try:
        return KubeVersion.parse(text)
    except ValueError as e:
        usage_error(str(e))


def check_render_target(name: str) -> str:
    if name not in TARGETS:
        usage_error(f"unknown render target {name!r} (available: {', '.join(sorted(TARGETS))})")
    return name


def commit_or_exit(paths: Sequence[str], explicit: str | None) -> str:
    """The commit SHA to stamp: --commit, else git HEAD of the inputs."""
    try:
        return resolve_commit(list(paths), explicit)
    except CommitError as e:
        usage_error(str(e))


def connect_or_exit(kubeconfig: str | None, context: str | None, kube_version: str | None,
                    pool_size: int = 16) -> tuple[KubeClient, KubeVersion]:
    """A connected client and the Kubernetes version to render for (--kube-version,
    else the server's own)."""
    from intentc.kube.client import KubeClient
    from intentc.kube.errors import KubeError

    try:
        client = KubeClient.connect(kubeconfig, context, pool_size=pool_size)
        version = parse_kube_version(kube_version) or KubeVersion.parse(client.version())
    except KubeError as e:
        usage_error(e.message)
    except ValueError as e:
        usage_error(f"cannot tell the server's version: {e}")
    return client, version


@contextlib.contextmanager
def cluster_errors(target: str) -> Iterator[None]:
    """A cluster that fails mid-command, or an inventory that cannot be read,
    ends the command as an environment error (exit 2) with the reason."""
    from intentc.kube.errors import KubeError

    try:
        yield
    except KubeError as e:
        usage_error(e.message)
    except ValueError as e:
        usage_error(f"the inventory of target {target} is unreadable: {e}")
