"""The test bed's Prometheus scrapes a test exporter and answers queries over its HTTP API.

prometheus comes from the test bed (hack/testenv/prometheus/go.mod), like kubectl and
helm: these tests skip without it, and fail when INTENTC_REQUIRE_KUBE=1 (CI).  They
check the pieces other tests build on (tests/prometheus_env.py,
tests/metrics_exporter.py): a gauge set in the exporter is what an instant query
returns, a change shows up at a later scrape, and histogram_quantile works over the
exporter's buckets.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import needed_assets
from tests.kube_support import wait_for
from tests.metrics_exporter import MetricsExporter
from tests.prometheus_env import PrometheusEnv

pytestmark = pytest.mark.kube

TIMEOUT = 60.0   # generous: a scrape a second, on a loaded machine


def prometheus_assets() -> Path:
    assets = needed_assets()
    if not os.access(assets / "prometheus", os.X_OK):
        why = f"{assets} has no prometheus: rerun hack/testenv/setup (it builds it from hack/testenv/prometheus)"
        if os.environ.get("INTENTC_REQUIRE_KUBE") == "1":
            pytest.fail("INTENTC_REQUIRE_KUBE=1 but " + why)
        pytest.skip(why)
    return assets


@pytest.fixture(scope="module")
def exporter() -> Iterator[MetricsExporter]:
    with MetricsExporter() as exp:
        yield exp


@pytest.fixture(scope="module")
def prom(exporter: MetricsExporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusEnv]:
    with PrometheusEnv(prometheus_assets(), tmp_path_factory.mktemp("prometheus"), [exporter.target]) as env:
        yield env


def values(prom: PrometheusEnv, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
    """An instant query's result: labels (without job and instance) → value."""
    return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("job", "instance"))):
            float(r["value"][1]) for r in prom.query(expr)}


def test_prometheus_starts_ready_and_scrapes_the_exporter(prom: PrometheusEnv, exporter: MetricsExporter) -> None:
    assert prom.url == f"http://127.0.0.1:{prom.port}"
    wait_for(lambda: prom.targets_up().get(exporter.target) == "up", TIMEOUT, "the exporter's target up")
    up = prom.query(f'up{{instance="{exporter.target}"}}')
    assert [r["value"][1] for r in up] == ["1"]
    assert prom.api("status/buildinfo")["version"].startswith("3.")


def test_instant_query_sees_a_gauge_and_its_change(prom: PrometheusEnv, exporter: MetricsExporter) -> None:
    exporter.set("intentc_test_queue_depth", {"queue": "train"}, 3)
    exporter.set("intentc_test_queue_depth", {"queue": "serve"}, 1.5)
    exporter.set("intentc_test_jobs_done_total", {}, 7)
    expected = {(("__name__", "intentc_test_queue_depth"), ("queue", "train")): 3.0,
                (("__name__", "intentc_test_queue_depth"), ("queue", "serve")): 1.5}
    wait_for(lambda: values(prom, "intentc_test_queue_depth") == expected, TIMEOUT,
             "both queue depths through /api/v1/query")
    assert values(prom, "intentc_test_jobs_done_total") == {(("__name__", "intentc_test_jobs_done_total"),): 7.0}
    assert values(prom, 'sum(intentc_test_queue_depth)') == {(): 4.5}

    exporter.set("intentc_test_queue_depth", {"queue": "train"}, 11)
    wait_for(lambda: values(prom, 'intentc_test_queue_depth{queue="train"}')
             == {(("__name__", "intentc_test_queue_depth"), ("queue", "train")): 11.0},
             TIMEOUT, "the changed gauge through /api/v1/query")
    assert values(prom, 'intentc_test_queue_depth{queue="serve"}') == {
        (("__name__", "intentc_test_queue_depth"), ("queue", "serve")): 1.5}


def test_histogram_quantile_over_the_exporters_buckets(prom: PrometheusEnv, exporter: MetricsExporter) -> None:
    # 200 observations: 100 up to 0.1 s, 80 in (0.1, 0.5], 20 in (0.5, 1.0]. The 0.99 quantile
    # is the 198th: 18 of the last bucket's 20 in, interpolated linearly: 0.5 + 0.5 * 18/20.
    exporter.set_histogram("intentc_test_latency_seconds", {"route": "plan"},
                           {0.1: 100, 0.5: 80, 1.0: 20, math.inf: 0}, total=60.0)
    expr = 'histogram_quantile(0.99, sum by (le) (intentc_test_latency_seconds_bucket{route="plan"}))'

    def p99() -> Any:
        got = values(prom, expr)
        return got.get(()) if got else None

    assert wait_for(p99, TIMEOUT, "the histogram's p99") == pytest.approx(0.95)
    assert values(prom, 'intentc_test_latency_seconds_count{route="plan"}')[
        (("__name__", "intentc_test_latency_seconds_count"), ("route", "plan"))] == 200.0

    # 300 more above 1 s: the 0.99 quantile falls in the +Inf bucket, where Prometheus
    # answers the highest finite bound
    exporter.observe("intentc_test_latency_seconds", {"route": "plan"}, 2.0, count=300)
    wait_for(lambda: p99() == 1.0, TIMEOUT, "the p99 after slow observations")
