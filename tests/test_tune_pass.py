"""The daemon's tune pass (intentc/daemon/tune_pass.py) on a compiled commit, against a fake Prometheus.

It follows a scripted scenario minute by minute (the wall clock is the
test's), publishes each serving intent's recommendation as the status
document and the gauge, forgets a window when the batch changes, and keeps
its last recommendations while Prometheus cannot be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.source import Desired, from_compile
from intentc.daemon.tune_pass import TunePass
from intentc.pipeline import compile_paths
from intentc.render.crd import STATUS
from intentc.render.intent_object import intent_status
from intentc.render.capabilities import KubeVersion
from intentc.tune.prometheus import Prometheus
from intentc.tune.queries import TuneConfig
from tests.fake_prometheus import FakePrometheus, Refuse
from tests.test_tune_cli import DSL, TOPOLOGY

SHA = "a" * 40


def desired(tmp: Path, text: str) -> Desired:
    (tmp / "intents").mkdir(exist_ok=True)
    (tmp / "intents" / "serve.intent").write_text(text)
    (tmp / "cluster.yaml").write_text(TOPOLOGY)
    made = from_compile(compile_paths([str(tmp / "intents")], str(tmp / "cluster.yaml"), SHA, KubeVersion(1, 37)),
                        "git")
    assert made is not None and made.preview is not None
    return made


class Scenario:
    """What the exporters say now, per intent: P99 seconds, GPU memory used, OOM kills."""

    def __init__(self) -> None:
        self.now: dict[str, tuple[float | None, float | None, float | None]] = {}
        self.down = False

    def answer(self, query: str, at: float | None) -> float | None:
        if self.down:
            raise Refuse(503, {"status": "error", "errorType": "unavailable", "error": "TSDB not ready"})
        intent = query.split('pod=~"', 1)[1].split("-", 1)[0]
        p99, memory, ooms = self.now.get(intent, (None, None, None))
        if "vllm:" in query:
            return p99
        return memory if "DCGM" in query else ooms


@pytest.fixture
def setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Scenario, list[float]]:
    monkeypatch.setenv("INTENTC_CACHE_DIR", "")
    return Scenario(), [1_800_000_000.0]


def gauge(metrics: DaemonMetrics, intent: str) -> float | None:
    for line in metrics.exposition().decode().splitlines():
        if line.startswith("intentc_batch_recommended{") and f'intent="{intent}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_the_pass_follows_a_scenario_and_publishes_status_and_gauge(tmp_path: Path, setting: tuple[Scenario, list[float]]
                                                                     ) -> None:
    scenario, clock = setting
    metrics = DaemonMetrics()
    commit = desired(tmp_path, DSL)
    with FakePrometheus(scenario.answer) as prom:
        tuner = TunePass(Prometheus(prom.url), TuneConfig(sample_interval=60.0), metrics, wall=lambda: clock[0])

        def minute(**now: tuple[float | None, float | None, float | None]) -> dict[tuple[str, str], dict]:
            scenario.now.update(now)
            made = tuner.run(commit)
            clock[0] += 60
            return made

        made = minute(chat=(0.3, 0.5, 0.0), embed=(0.2, 0.4, 0.0), summarize=(None, None, None))
        assert sorted(made) == [("team-a", "chat"), ("team-a", "embed"), ("team-a", "summarize")]
        assert made[("team-a", "chat")] == {"batch": 32, "current": 32, "direction": "hold", "auto": False,
                                            "observations": 1, "observedAt": "2027-01-15T08:00:00Z",
                                            "reason": "headroom in 1 of the 3 observations in a row needed to grow"}
        assert made[("team-a", "embed")]["current"] == 64 and made[("team-a", "embed")]["auto"] is True
        assert made[("team-a", "summarize")]["reason"].startswith("no P99 latency")
        clock[0] -= 1                                          # 59 s later: not due, the last ones
        asked = len(prom.queries)
        assert tuner.run(commit) is made and len(prom.queries) == asked
        clock[0] += 1
        minute()
        made = minute()
        assert made[("team-a", "chat")]["batch"] == 40 and made[("team-a", "chat")]["direction"] == "grow"
        assert gauge(metrics, "chat") == 40 and gauge(metrics, "embed") == 80
        # latency rising past P1's second: halve at once
        made = minute(chat=(1.4, 0.5, 0.0))
        assert (made[("team-a", "chat")]["batch"], made[("team-a", "chat")]["direction"]) == (16, "shrink")
        assert made[("team-a", "chat")]["reason"] == "P99 1.4 s over the target 1.0 s: halve"
        # an OOM outranks it
        made = minute(chat=(0.5, 0.9, 1.0))
        assert made[("team-a", "chat")]["reason"] == "OOM kill observed (1): halve"
        assert gauge(metrics, "chat") == 16
        # Prometheus down: the last recommendations stay, the error is counted
        scenario.down = True
        assert minute() == made
        assert 'intentc_errors_total{step="tune"} 1.0' in metrics.exposition().decode()
        scenario.down = False
        # a commit with the new batch (16): the observations at 32 are forgotten
        commit = desired(tmp_path, DSL.replace("batch: 32 ", "batch: 16 "))
        made = minute(chat=(0.3, 0.5, 0.0))
        assert made[("team-a", "chat")]["current"] == 16 and made[("team-a", "chat")]["observations"] == 1
        assert made[("team-a", "chat")]["direction"] == "hold"
        # an intent that leaves the plan leaves the gauge
        commit = desired(tmp_path, DSL.replace("batch: 32 ", "batch: 16 ").split("intent embed")[0])
        minute()
        assert gauge(metrics, "embed") is None and gauge(metrics, "chat") == 16


def test_the_status_document_fits_the_crd_schema() -> None:
    doc = {"batch": 40, "current": 32, "direction": "grow", "reason": "r", "auto": False, "observations": 3,
           "observedAt": "2026-12-07T10:00:00Z"}
    status = intent_status(None, SHA, "Running", batch_recommendation=doc)["status"]
    assert status["batchRecommendation"] == doc
    schema: Any = STATUS["properties"]
    schema = schema["batchRecommendation"]["properties"]
    assert set(doc) == set(schema)
    assert "batchRecommendation" not in intent_status(None, SHA, "Running")["status"]
