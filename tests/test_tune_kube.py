"""Batch recommendations on the test bed with a real Prometheus (issue 38, item 2).

A serving intent in the DSL (`chat`, batch 32, P1: a P99 target of 1 s) and
one in YAML (`api`, batch 16, P2: 5 s) are applied; kwok runs their pods.
A small exporter (tests/metrics_exporter.py) serves, per pod, what the
default queries read — vLLM's latency histogram, DCGM exporter's frame
buffer used / free, kube-state-metrics' restarts and last termination
reason — and a real Prometheus (tests/prometheus_env.py, built from its Go
module like the other tools) scrapes it every second.  The test drives the
exporter through a scenario for `chat` — memory headroom, then latency
rising past the target, then an OOM kill — while `api` keeps its headroom.
The daemon's recommendation pass (the Intent mirror with its `TunePass`,
called directly, as tests/test_forecast_kube.py calls the forecast pass)
must follow it in the Intent objects' status and the gauge; then `intentc
tune --kubeconfig` turns the recommendations into a file diff that
`intentc check` accepts.  Every wait is on what the API server or
Prometheus shows, never a sleep sized to the machine.
"""

from __future__ import annotations

import difflib
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from intentc.pipeline import compile_paths
from intentc.render.capabilities import KubeVersion
from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir
from tests.kube_nodes import add_topology
from tests.kube_support import invoke, wait_for

pytestmark = pytest.mark.kube

SHA = "c" * 40
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)      # vLLM's own are finer; the quantile only needs a bracket
LATENCY = "vllm:e2e_request_latency_seconds"

DSL = """\
tenant {tenant} {{ tier: gold }}

# The chat front end: its batch is tuned from the cluster (intentc tune).
intent chat {{
  trigger: on push
  action: serve model "chat-8b" image "registry.example/vllm:0.6" replicas 1 port 8000 {{
    batch: 32        # from the March load test
    seq_len: 2048
  }}
  context: tenant {tenant}
  constraints: cpu 1, memory 1Gi, gpus 1 x "H100-80GB", sla P1
}}
"""

YAML = """\
# The public API, in YAML.
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata:
  name: api
spec:
  trigger: push
  action:
    kind: serve
    image: registry.example/vllm:0.6
    model: api-8b
    port: 8000
    settings:
      batch: 16   # conservative until measured
  context: {{tenant: {tenant}}}
  constraints: {{cpu: "1", memory: 1Gi, gpus: {{count: 1, product: H100-80GB}}, sla: P2}}
"""


def exporter_class() -> Any:
    import importlib

    metrics_exporter = importlib.import_module("tests.metrics_exporter")    # the exporter helper (its own change)
    return getattr(metrics_exporter, "MetricsExporter", None) or getattr(metrics_exporter, "Exporter")


class Pod:
    """What the exporter says about one serving pod; requests arrive on a thread of their own."""

    def __init__(self, exporter: Any, namespace: str, name: str) -> None:
        self.exporter = exporter
        self.labels = {"namespace": namespace, "pod": name}
        self.latency = 0.05
        self.counts = {le: 0 for le in (*map(str, BUCKETS), "+Inf")}
        self.restarts = 0
        self.lock = threading.Lock()
        self.memory(0.4)
        exporter.set("kube_pod_container_status_restarts_total", {**self.labels, "container": "main"}, 0)
        self.serve(100)

    def memory(self, used_share: float) -> None:
        total = 81_559                                            # MiB of an H100 80GB
        used = round(total * used_share)
        self.exporter.set("DCGM_FI_DEV_FB_USED", {**self.labels, "gpu": "0"}, used)
        self.exporter.set("DCGM_FI_DEV_FB_FREE", {**self.labels, "gpu": "0"}, total - used)

    def serve(self, requests: int) -> None:
        """`requests` more requests at the current latency: the histogram's cumulative buckets."""
        with self.lock:
            for le in self.counts:
                if le == "+Inf" or self.latency <= float(le):
                    self.counts[le] += requests
            for le, count in self.counts.items():
                self.exporter.set(f"{LATENCY}_bucket", {**self.labels, "le": le}, count)
            self.exporter.set(f"{LATENCY}_count", self.labels, self.counts["+Inf"])

    def oom(self) -> None:
        self.restarts += 1
        container = {**self.labels, "container": "main"}
        self.exporter.set("kube_pod_container_status_restarts_total", container, self.restarts)
        self.exporter.set("kube_pod_container_status_last_terminated_reason", {**container, "reason": "OOMKilled"}, 1)


class Traffic:
    """Requests to every pod, 50 every 0.2 s, until stopped: rate() always has something to divide."""

    def __init__(self, pods: list[Pod]) -> None:
        self.pods = pods
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            for pod in self.pods:
                pod.serve(50)

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


@pytest.fixture(scope="module")
def prometheus_assets() -> Path:
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    return assets


@pytest.fixture
def exporter() -> Iterator[Any]:
    made = exporter_class()()
    made.start()
    try:
        yield made
    finally:
        made.stop()


def test_the_recommendation_follows_the_metrics_and_tune_turns_it_into_a_diff_that_checks(
        kube_cluster: KubeEnv, prometheus_assets: Path, exporter: Any, tmp_path: Path) -> None:
    from intentc.daemon.metrics import DaemonMetrics
    from intentc.daemon.mirror import IntentMirror
    from intentc.daemon.source import from_compile
    from intentc.daemon.tune_pass import TunePass
    from intentc.kube.client import KubeClient
    from intentc.tune.prometheus import Prometheus
    from intentc.tune.queries import load_config
    from tests.prometheus_env import PrometheusEnv

    env = kube_cluster
    t = f"tune-{int(time.time()) % 100000}"
    tenant = f"{t}-a"
    intents = tmp_path / "intents"
    intents.mkdir()
    (intents / "serve.intent").write_text(DSL.format(tenant=tenant))
    (intents / "api.yaml").write_text(YAML.format(tenant=tenant))
    before = {p.name: p.read_text() for p in intents.iterdir()}
    topology = tmp_path / "cluster.yaml"
    topology.write_text(
        f"apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {{name: {t}}}\nspec:\n"
        "  levels: [zone, rack, nvlink, node]\n  nodes:\n"
        f"    - name: {t}-n1\n      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}\n"
        f"      cpu: \"192\"\n      memory: 2Ti\n      domains: {{zone: z1, rack: r1, nvlink: {t}-n1}}\n")
    add_topology(env, str(topology))
    code, _, output = invoke("apply", str(intents), "-t", str(topology), "--kubeconfig", str(env.kubeconfig),
                             "--commit", SHA, "--target", t, "--only-topology-nodes")
    assert code == 0, output

    def pod_of(intent: str) -> str | None:
        items = env.kubectl_json("get", "pods", "-n", tenant, "-l", f"intentc.dev/intent={intent}")["items"]
        running = [p["metadata"]["name"] for p in items if p.get("status", {}).get("phase") == "Running"]
        return running[0] if len(running) == 1 else None

    chat = Pod(exporter, tenant, wait_for(lambda: pod_of("chat"), 120, "chat's pod running"))
    api = Pod(exporter, tenant, wait_for(lambda: pod_of("api"), 120, "api's pod running"))

    config = load_config("tune:\n  sampleInterval: 1\n  goodObservations: 3\n")
    result = compile_paths([str(intents)], str(topology), SHA, KubeVersion(1, 37))
    desired = from_compile(result, "git")
    assert desired is not None and desired.preview is not None
    metrics = DaemonMetrics()
    (tmp_path / "prometheus").mkdir()
    prom = PrometheusEnv(prometheus_assets, tmp_path / "prometheus", [exporter.target], scrape_interval_s=1.0)
    url = prom.start()
    client = None
    with Traffic([chat, api]):
        try:
            client = KubeClient.connect(str(env.kubeconfig))
            mirror = IntentMirror(client, t, tuner=TunePass(Prometheus(url), config, metrics))
            mirror.sync(desired, {})                # applies the Intent objects; statuses from the next pass

            def recommendation(intent: str, direction: str, contains: str = "") -> dict[str, Any] | None:
                mirror.sync(desired, {})
                status = env.kubectl_json("get", "intent", intent, "-n", tenant).get("status") or {}
                rec = status.get("batchRecommendation")
                if rec and rec["direction"] == direction and contains in rec["reason"]:
                    return dict(rec)
                return None

            # 1. headroom: P99 ~0.1 s, 40 % of the GPU memory -> grow ×1.25 after three good observations
            grown = wait_for(lambda: recommendation("chat", "grow"), 120, "chat's batch to grow", interval=1.0)
            assert (grown["batch"], grown["current"], grown["auto"]) == (40, 32, False)
            assert grown["observations"] >= 3 and "GPU memory 40% used" in grown["reason"]
            assert wait_for(lambda: recommendation("api", "grow"), 60, "api's batch to grow",
                            interval=1.0)["batch"] == 20

            # 2. latency rising: 0.6 s (still under 1 s), then 2 s -> halve at once
            chat.latency = 0.6
            chat.serve(1000)
            chat.latency = 2.0
            shrunk = wait_for(lambda: recommendation("chat", "shrink", "over the target 1.0 s"), 120,
                              "chat's batch to shrink on the P99 breach", interval=1.0)
            assert (shrunk["batch"], shrunk["current"]) == (16, 32)

            # 3. an OOM kill: halve, and the reason says so
            chat.oom()
            oomed = wait_for(lambda: recommendation("chat", "shrink", "OOM kill observed"), 120,
                             "chat's recommendation to name the OOM kill", interval=1.0)
            assert oomed["batch"] == 16
            api_now = recommendation("api", "grow")
            assert api_now is not None and api_now["batch"] == 20        # its pod saw none of it
        finally:
            if client is not None:
                client.close()
            prom.stop()
    exposition = metrics.exposition().decode()
    assert f'intentc_batch_recommended{{intent="chat",tenant="{tenant}"}} 16.0' in exposition
    assert f'intentc_batch_recommended{{intent="api",tenant="{tenant}"}} 20.0' in exposition
    wide = env.kubectl_run("get", "intents", "-n", tenant, "-o", "wide").stdout.splitlines()
    # kubectl's columns are aligned, and an empty one (no START yet) is blank: read by offset
    head = wide[0]
    starts = [i for i, c in enumerate(head) if c != " " and (i == 0 or head[i - 1] == " ")]
    names = head.split()

    def cell(line: str, name: str) -> str:
        k = names.index(name)
        return line[starts[k]:starts[k + 1] if k + 1 < len(starts) else None].strip()
    row = next(line for line in wide[1:] if cell(line, "NAME") == "chat")
    assert cell(row, "BATCH") == "32" and cell(row, "RECOMMENDED") == "16", wide

    # 4. `intentc tune` reads the daemon's recommendations and proposes them as a diff ...
    code, diff, output = invoke("tune", str(intents), "--kubeconfig", str(env.kubeconfig), "--dry-run")
    assert code == 0, output
    assert {p.name: p.read_text() for p in intents.iterdir()} == before
    assert "-    batch: 32        # from the March load test\n+    batch: 16        # from the March load test" in diff
    assert "-      batch: 16   # conservative until measured\n+      batch: 20   # conservative until measured" in diff
    # ... writes it, touching nothing but the two batch values ...
    code, out, output = invoke("tune", str(intents), "--kubeconfig", str(env.kubeconfig))
    assert code == 0, output
    assert f"{tenant}/chat batch 32 -> 16 (OOM kill observed (1): halve)" in out
    for name, text in before.items():
        changed = [line for line in difflib.ndiff(text.splitlines(), (intents / name).read_text().splitlines())
                   if line[:1] in "+-"]
        assert len(changed) == 2 and all("batch:" in line for line in changed), changed
    # ... and the result checks cleanly and plans the new batches
    code, _, output = invoke("check", str(intents))
    assert code == 0, output
    tuned = compile_paths([str(intents)], str(topology), SHA, KubeVersion(1, 37))
    assert tuned.program is not None
    batches = {i.name: i.action.settings.batch.size for i in tuned.program.intents
               if i.action.settings is not None and i.action.settings.batch is not None}
    assert batches == {"chat": 16, "api": 20}
