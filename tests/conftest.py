"""Shared fixtures.  Kept small: every helper's tests import this file.

`kube_env` is one real etcd + kube-apiserver per test module (about 8 s to
start): modules apply the same example repository under different commits,
and a Kubernetes 1.20 server without a controller-manager cannot delete a
namespace, so sharing one server across modules would make results depend
on test order.  Tests within a module isolate by names.  Tests marked
`@pytest.mark.kube` skip with a message saying how to get the binaries.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir

# CI sets this: there, a Kubernetes test that cannot run is a failure, not a skip.
REQUIRE_KUBE = os.environ.get("INTENTC_REQUIRE_KUBE") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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


@pytest.fixture(scope="module")
def kube_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    env = KubeEnv(assets, tmp_path_factory.mktemp("kube-env"))
    try:
        env.start()
        yield env
    finally:
        env.stop()
