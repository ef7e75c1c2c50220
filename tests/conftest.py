"""Shared fixtures.  Kept small: every helper's tests import this file.

`kube_env` is one real etcd + kube-apiserver per test module; `kube_cluster`
adds the controller-manager, the scheduler and kwok, `kueue_cluster` Kueue
(tests/kube_env.py).  One control plane per module: modules apply the same
example repository under different commits, so sharing one server across
modules would make results depend on test order; tests within a module
isolate by names.  Tests marked `@pytest.mark.kube` need a control plane: when
`KUBEBUILDER_ASSETS` is unset, collection runs `hack/testenv/setup` (instant
once cached) and uses what it prints; with `INTENTC_TESTENV_BUILD=0` it does
not, and those tests skip with a message saying how to get the binaries.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir

# CI sets this: there, a Kubernetes test that cannot run is a failure, not a skip.
REQUIRE_KUBE = os.environ.get("INTENTC_REQUIRE_KUBE") == "1"


def _build_testenv() -> str | None:
    """Build (first time, ~30-60 min on 2 cores) or find (cached, instant) the project's
    test bed with hack/testenv/setup; None with the reason printed when it cannot."""
    setup = Path(__file__).resolve().parent.parent / "hack" / "testenv" / "setup"
    print(f"\nKUBEBUILDER_ASSETS is not set: running {setup} (cached after the first build)",
          file=sys.stderr, flush=True)
    res = subprocess.run([str(setup)], stdout=subprocess.PIPE, text=True)
    path = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    if res.returncode != 0 or not path:
        print(f"hack/testenv/setup failed (exit {res.returncode})", file=sys.stderr)
        return None
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wants_kube = any("kube" in item.keywords for item in items)
    if wants_kube and assets_dir() is None and os.environ.get("INTENTC_TESTENV_BUILD", "1") != "0":
        built = _build_testenv()
        if built:
            os.environ["KUBEBUILDER_ASSETS"] = built
    if assets_dir() is not None:
        return
    if REQUIRE_KUBE:
        raise pytest.UsageError("INTENTC_REQUIRE_KUBE=1 but " + SKIP_MESSAGE)
    skip = pytest.mark.skip(reason=SKIP_MESSAGE)
    for item in items:
        if "kube" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _private_parse_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests never read or write the user's parse cache (~/.cache/intentc)."""
    old = os.environ.get("INTENTC_CACHE_DIR")
    os.environ["INTENTC_CACHE_DIR"] = str(tmp_path_factory.mktemp("parse-cache"))
    yield
    if old is None:
        os.environ.pop("INTENTC_CACHE_DIR", None)
    else:
        os.environ["INTENTC_CACHE_DIR"] = old


def needed_assets() -> Path:
    """The envtest binaries (KUBEBUILDER_ASSETS); the test is skipped where there are none."""
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    return assets


def _control_plane(factory: pytest.TempPathFactory, components: tuple[str, ...],
                   kwok_stages: tuple[Path, ...] = (), audit: bool = False) -> Iterator[KubeEnv]:
    """Start a control plane with `components` for one test module; tests that need
    kwok to behave differently (pods that run for a while, pods that fail) pass their
    own stage files and call this from a fixture of their own; `audit`: the API server
    keeps an audit log (`KubeEnv.audit_log`)."""
    env = KubeEnv(needed_assets(), factory.mktemp("kube-env"), components, kwok_stages, audit=audit)
    try:
        env.start()
        yield env
    finally:
        env.stop()


@pytest.fixture(scope="module")
def kube_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """etcd + kube-apiserver: enough for apply, drift, rollback, watch and the daemon."""
    yield from _control_plane(tmp_path_factory, ())


@pytest.fixture(scope="module")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """A whole control plane — API server, controller-manager, scheduler — and kwok
    playing the kubelet; add fake GPU nodes with `tests.kube_nodes.add_topology`."""
    yield from _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok"))


@pytest.fixture(scope="module")
def kueue_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """`kube_cluster` plus the Kueue controller and its CRDs."""
    yield from _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok", "kueue"))
