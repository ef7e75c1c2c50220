"""`intentc tune` as a user types it (issue 38, item 2): recommendations into DSL and YAML files.

The metrics come from a server answering like Prometheus' API
(tests/fake_prometheus.py) to the default queries (DCGM exporter's, vLLM's,
kube-state-metrics' names); the daemon's recommendations from Intent
objects as the daemon writes them.  Every edit is checked against golden
files (tests/golden/tune/), and `intentc check` must pass on the result.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from intentc.cli import tune as tune_cli
from tests.fake_prometheus import FakePrometheus
from tests.golden_support import assert_golden
from tests.kube_support import invoke

GOLDEN = Path(__file__).parent / "golden" / "tune"

DSL = """\
# Serving for team-a: batches are tuned from the cluster's metrics (intentc tune).
tenant team-a { tier: gold }

intent chat {
  trigger: on push
  action: serve model "chat-8b" image "ghcr.io/acme/vllm:0.6" replicas 1 port 8000 {
    batch: 32            # raised by hand after the March load test
    seq_len: 2048
  }
  context: tenant team-a
  constraints: cpu 8, memory 64Gi, gpus 1 x "H100-80GB", sla P1
}

intent embed {
  trigger: on push
  action: serve model "embed-8b" image "ghcr.io/acme/vllm:0.6" replicas 1 port 8000 {
    parameters: 8B
    batch:   auto(max 64)    # the plan's size is the cap
  }
  context: tenant team-a
  constraints: cpu 8, memory 64Gi, gpus 1 x "H100-80GB", sla P1
}

intent summarize {
  trigger: on push
  action: serve model "sum-8b" image "ghcr.io/acme/vllm:0.6" replicas 1 port 8000 {
    parameters: 8B
    seq_len: 8192
    batch: auto
  }
  context: tenant team-a
  constraints: cpu 8, memory 64Gi, gpus 1 x "H100-80GB", sla P2
}
"""

YAML = """\
# The API tier, in YAML.
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata:
  name: api   # public
spec:
  trigger: push
  action:
    kind: serve
    image: "ghcr.io/acme/vllm:0.6"
    model: api-8b
    port: 8000
    settings:
      batch: 16      # keep small: P0
      seq_len: 2048
  context: {tenant: team-a}
  constraints: {cpu: "8", memory: 64Gi, gpus: {count: 1, product: H100-80GB}, sla: P0}
---
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata:
  name: rerank
spec:
  trigger: push
  action:
    kind: serve
    image: 'ghcr.io/acme/vllm:0.6'
    model: rerank-8b
    port: 8000
    settings:
      parameters: 8B
      batch:
        auto: true
      # more settings once measured
      seq_len: 4096
  context: {tenant: team-a}
  constraints: {cpu: "8", memory: 64Gi, gpus: {count: 1, product: H100-80GB}, sla: P1}
"""

TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: tune}
spec:
  levels: [zone, rack, nvlink, node]
  nodes:
    - name: n1
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      cpu: "192"
      memory: 2Ti
      domains: {zone: z1, rack: r1, nvlink: n1}
"""

# per intent: P99 seconds, GPU memory used, OOM kills (the scenario's last minutes)
METRICS: dict[str, tuple[float, float, float]] = {
    "chat": (0.3, 0.5, 0.0),          # P1 (1 s): headroom -> grow 32 -> 40
    "embed": (0.2, 0.4, 0.0),         # at its cap (64): grow -> the cap raised to 80
    "summarize": (0.5, 0.3, 0.0),     # sized by the memory estimate: grow, but `auto` kept
    "api": (0.9, 0.5, 0.0),           # P0 (0.5 s) breached -> 16 -> 8
    "rerank": (0.4, 0.95, 1.0),       # an OOM kill -> halve the planned size, as a cap
}


def answer(query: str, at: float | None) -> float | None:
    intent = re.search(r'pod=~"([a-z]+)-', query)
    assert intent is not None, query
    p99, memory, ooms = METRICS[intent.group(1)]
    if "vllm:e2e_request_latency_seconds_bucket" in query:
        return p99
    if "DCGM_FI_DEV_FB_USED" in query and "DCGM_FI_DEV_FB_FREE" in query:
        return memory
    assert "OOMKilled" in query, query
    return ooms


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "intents").mkdir()
    (tmp_path / "intents" / "serve.intent").write_text(DSL)
    (tmp_path / "intents" / "api.yaml").write_text(YAML)
    (tmp_path / "cluster.yaml").write_text(TOPOLOGY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTENTC_CACHE_DIR", "")
    return tmp_path


def test_recommendations_from_prometheus_become_a_diff_then_files_that_check(repo: Path) -> None:
    with FakePrometheus(answer) as prom:
        code, out, output = invoke("tune", "intents", "-t", "cluster.yaml", "--prometheus-url", prom.url,
                                   "--dry-run")
        assert code == 0, output
        assert (repo / "intents" / "serve.intent").read_text() == DSL       # --dry-run writes nothing
        assert (repo / "intents" / "api.yaml").read_text() == YAML
        assert_golden(GOLDEN / "dry-run.diff", out)
        assert_golden(GOLDEN / "dry-run.txt", output)          # the diff (stdout) and what would change (stderr)
        # three observations a minute apart for each of the five intents' three queries
        assert len(prom.queries) == 5 * 3 * 3

        code, out, output = invoke("tune", "intents", "-t", "cluster.yaml", "--prometheus-url", prom.url)
        assert code == 0, output
    assert_golden(GOLDEN / "tuned.stdout", out)
    assert_golden(GOLDEN / "serve.intent", (repo / "intents" / "serve.intent").read_text())
    assert_golden(GOLDEN / "api.yaml", (repo / "intents" / "api.yaml").read_text())
    code, out, output = invoke("check", "intents")
    assert code == 0, output
    code, plan, output = invoke("plan", "intents", "-t", "cluster.yaml", "-o", "json")
    assert code == 0, output
    # the plan agrees with what was written: capped where tune capped, raised where it raised
    sizes = {b["intent"]: (b["size"], b["max"]) for b in json.loads(plan)["batches"]}
    assert sizes["embed"] == (80, 80)
    assert sizes["rerank"][1] == sizes["rerank"][0]
    # only the batch values changed: every other line is as it was
    for before, name in ((DSL, "serve.intent"), (YAML, "api.yaml")):
        after = (repo / "intents" / name).read_text().splitlines()
        changed = [line for line in difflib.ndiff(before.splitlines(), after) if line[:1] in "+-"]
        assert changed and all("batch" in line or line.split() == ["-", "auto:", "true"] for line in changed), changed


def test_the_planned_band_is_where_an_auto_recommendation_starts(repo: Path) -> None:
    """Without the topology the size the plan gives `batch: auto` is unknown: those intents are
    left out, the fixed ones tuned."""
    with FakePrometheus(answer) as prom:
        code, out, output = invoke("tune", "intents", "--prometheus-url", prom.url, "--pin-auto")
    assert code == 0, output
    assert "team-a/api batch 16 -> 8" in out and "team-a/chat batch 32 -> 40" in out
    for name in ("embed", "summarize", "rerank"):
        assert f"team-a/{name}: left out: `batch: auto` starts from the size the plan gives it" in output


def intent_object(name: str, batch: int, current: int, direction: str, reason: str) -> dict[str, Any]:
    return {"apiVersion": "intentc.dev/v1alpha1", "kind": "Intent",
            "metadata": {"name": name, "namespace": "team-a"},
            "status": {"phase": "Running", "batchRecommendation": {
                "batch": batch, "current": current, "direction": direction, "reason": reason, "auto": False,
                "observations": 5, "observedAt": "2026-12-07T10:00:00Z"}}}


def test_the_daemons_recommendations_from_the_intent_objects(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [intent_object("chat", 40, 32, "grow", "headroom"),
               intent_object("api", 8, 12, "shrink", "P99 over the target"),      # made for 12: the file says 16
               intent_object("embed", 32, 64, "shrink", "OOM kill observed (1): halve"),
               {"metadata": {"name": "rerank", "namespace": "team-a"}, "status": {"phase": "Running"}},
               {"metadata": {"name": "summarize", "namespace": "team-a"},
                "status": {"batchRecommendation": {"batch": "many"}}}]
    seen: list[tuple[Any, ...]] = []

    def read(kubeconfig: str | None, context: str | None, read: Any, what: str) -> Any:
        seen.append((kubeconfig, context, what))
        return objects

    monkeypatch.setattr(tune_cli, "read_cluster_or_exit", read)
    code, out, output = invoke("tune", "intents", "--context", "prod", "--dry-run")
    assert code == 0, output
    assert seen == [(None, "prod", " for the batch recommendations")]
    assert "-    batch: 32            # raised by hand after the March load test" in out
    assert "+    batch: 40            # raised by hand after the March load test" in out
    assert "+    batch:   auto(max 32)    # the plan's size is the cap" in out
    assert "team-a/api: kept: the file's batch 16 is not the 12 the recommendation was made for" in output
    assert "Intent team-a/summarize: a batchRecommendation this version cannot read; left out" in output
    assert "api.yaml" not in out


def test_usage_errors_and_files_with_errors(repo: Path) -> None:
    code, _, output = invoke("tune", "intents")
    assert code == 2 and "--kubeconfig/--context (the daemon's) or --prometheus-url" in output
    code, _, output = invoke("tune", "intents", "--context", "x", "--prometheus-url", "http://127.0.0.1:1")
    assert code == 2 and "give one of them" in output
    code, _, output = invoke("tune", "intents", "--prometheus-url", "localhost:9090")
    assert code == 2 and "not an http(s) URL" in output
    (repo / "bad.yaml").write_text("tune: {goodObservation: 2}\n")
    code, _, output = invoke("tune", "intents", "--prometheus-url", "http://127.0.0.1:1", "--tune-config", "bad.yaml")
    assert code == 2 and "unknown key(s) goodObservation" in output
    code, _, output = invoke("tune", "intents", "--prometheus-url", "http://127.0.0.1:1")
    assert code == 2 and "cannot be queried" in output
    broken = DSL.replace("sla P2", "sla P9")
    (repo / "intents" / "serve.intent").write_text(broken)
    with FakePrometheus(answer) as prom:
        code, _, output = invoke("tune", "intents", "-t", "cluster.yaml", "--prometheus-url", prom.url)
    assert code == 1 and "no file is tuned" in output
    assert (repo / "intents" / "serve.intent").read_text() == broken


def test_a_copy_of_the_bundled_examples_keeps_checking_after_tune(repo: Path, tmp_path: Path) -> None:
    """The fixture repository's serving intents declare no batch: nothing to change."""
    src = Path(__file__).parent / "fixtures" / "repo"
    shutil.copytree(src, tmp_path / "copy")
    with FakePrometheus(answer) as prom:
        code, _, output = invoke("tune", "copy/intents", "-t", "copy/clusters/small.yaml", "--prometheus-url",
                                 prom.url)
    assert code == 0, output
    assert "no batch to change" in output


def test_the_daemon_refuses_a_wrong_prometheus_url_or_tune_config_before_it_starts(repo: Path) -> None:
    code, _, output = invoke("daemon", "--repo", str(repo), "-t", "cluster.yaml", "--prometheus-url", "prometheus")
    assert code == 2 and "--prometheus-url: 'prometheus' is not an http(s) URL" in output
    (repo / "tune.yaml").write_text("tune: {headroom: 2}\n")
    code, _, output = invoke("daemon", "--repo", str(repo), "-t", "cluster.yaml", "--tune-config", "tune.yaml")
    assert code == 2 and "tune.headroom: 2 is outside 0..1" in output
