"""Kueue's fair sharing divides an over-subscribed cluster by the tier weights intentc renders.

Three tenants — gold, silver, bronze: ClusterQueue weights 4, 2, 1, no
guaranteed GPU quota, so all 28 GPUs sit in the cohort and fair sharing alone
decides — each submit the same number of identical 1-GPU Jobs, many more than
the cluster runs at once.  kwok keeps every Job pod Running for 5-10 s (this
module's stage file), and Kueue runs with fair sharing on (`fairSharing` in its
Configuration).  All Jobs are queued first, then the three queues open at once.
The ClusterQueues' admitted GPUs are sampled about once a second; over the
steady window — from the cluster's first turnover (as many jobs finished as it
has GPUs) until the first tenant has nothing left to queue — each tenant's share
of the admitted GPU time must be within 10 % (relative) of 4/7, 2/7, 1/7.

Equal demand is the point: without fair sharing Kueue admits the heads of the
three queues in turn and each tenant gets about a third (docs/render-targets.md
has the figures of both).
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from intentc.compile import compile_paths
from intentc.render.capabilities import KubeVersion
from tests.conftest import _control_plane
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import wait_for

pytestmark = pytest.mark.kube

TOPOLOGY = Path(__file__).parent / "fixtures" / "fairshare" / "cluster.yaml"
SHA = "f" * 40
GPUS = 28
WEIGHTS = {"tn-gold": 4, "tn-silver": 2, "tn-bronze": 1}
TIERS = {"tn-gold": "gold", "tn-silver": "silver", "tn-bronze": "bronze"}
JOBS_PER_TENANT = 63          # gold runs 16 at a time: about four rounds of its jobs
RUN_MS = (5_000, 10_000)      # each pod runs uniformly 5-10 s (kwok delay, jitter up to)
MIN_WINDOW = 4 * RUN_MS[1] / 1000
DEADLINE = 240.0
BATCH = 9                     # 9 per tenant = 27 GPUs: each compiled batch is a feasible plan
TOLERANCE = Decimal("0.10")
FAIR_SHARING = {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}


def running_for_a_while(assets: Path, out: Path) -> Path:
    """kwok's fast stages, except that a Job's pod completes 5-10 s after it runs."""
    docs = list(yaml.safe_load_all((assets / "kwok-stages.yaml").read_text()))
    [complete] = [d for d in docs if d and d.get("kind") == "Stage" and d["metadata"]["name"] == "pod-complete"]
    complete["spec"]["delay"] = {"durationMilliseconds": RUN_MS[0], "jitterDurationMilliseconds": RUN_MS[1]}
    path = out / "kwok-stages-running.yaml"
    path.write_text(yaml.safe_dump_all(docs, width=10_000))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    from tests.kube_env import assets_dir

    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS")
    stages = running_for_a_while(assets, tmp_path_factory.mktemp("kwok"))
    plane = _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok"), kwok_stages=(stages,))
    env = next(plane)
    try:
        env.start_kueue(settings=FAIR_SHARING)
        add_topology(env, str(TOPOLOGY))
        yield env
    finally:
        plane.close()


def compiled(d: Path, batch: int) -> list[dict[str, Any]]:
    """One feasible batch: BATCH 1-GPU training jobs per tenant, rendered for kueue."""
    d.mkdir()
    (d / "tenants.intent").write_text("".join(f"tenant {t} {{ tier: {tier} }}\n" for t, tier in TIERS.items()))
    text = ""
    for i in range(BATCH * batch, BATCH * (batch + 1)):
        for tenant in WEIGHTS:
            text += (f'intent {tenant.removeprefix("tn-")}-{i:03d} {{\n  trigger: on push\n'
                     f'  action: training image "busybox:1.36"\n  context: tenant {tenant}\n'
                     f'  constraints: cpu 1, memory 1Gi, gpus 1 x "H100-80GB" within node, sla P2\n}}\n')
    (d / "jobs.intent").write_text(text)
    result = compile_paths([str(d)], str(TOPOLOGY), SHA, KubeVersion(1, 37), "kueue")
    assert result.ok and result.rendered is not None, [x.message for x in result.diagnostics]
    return [dict(m.body) for m in result.rendered.manifests]


def kubectl_apply(env: KubeEnv, bodies: list[dict[str, Any]]) -> None:
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=intentc-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}), timeout=300)


def admitted_gpus(cq: dict[str, Any]) -> Decimal:
    status = cq.get("status", {})
    return sum((Decimal(r.get("total", "0")) for f in status.get("flavorsUsage", [])
                for r in f.get("resources", []) if r["name"] == "nvidia.com/gpu"), Decimal(0))


def hold(env: KubeEnv, on: bool) -> None:
    """Stop or resume admission in the three ClusterQueues with one request list, bronze
    first: whatever head start there is goes against the weights."""
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=fair-share-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
                        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": q},
                         "spec": {"stopPolicy": "Hold" if on else "None"}} for q in reversed(WEIGHTS)]}))


def sample(env: KubeEnv) -> dict[str, tuple[Decimal, int, int]]:
    """Per tenant: GPUs admitted now, workloads pending, workloads holding quota."""
    queues = env.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]
    return {q["metadata"]["name"]: (admitted_gpus(q), int(q.get("status", {}).get("pendingWorkloads", 0)),
                                    int(q.get("status", {}).get("reservingWorkloads", 0)))
            for q in queues if q["metadata"]["name"] in WEIGHTS}


def finished(s: dict[str, tuple[Decimal, int, int]]) -> int:
    """Workloads done: every one is pending, holding quota, or finished (a preempted one is pending again)."""
    return JOBS_PER_TENANT * len(WEIGHTS) - sum(p + r for _, p, r in s.values())


def test_admitted_gpu_time_follows_the_tier_weights(cluster: KubeEnv, tmp_path: Path) -> None:
    batches = [compiled(tmp_path / f"b{b}", b) for b in range(JOBS_PER_TENANT // BATCH)]
    order = list(WEIGHTS)
    jobs = sorted((m for b in batches for m in b if m["kind"] == "Job"),
                  key=lambda m: (m["metadata"]["name"].rpartition("-")[2], order.index(m["metadata"]["namespace"])))
    kubectl_apply(cluster, [m for m in batches[0] if m["kind"] != "Job"])

    def active() -> Any:
        queues = cluster.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]
        return len([q for q in queues if any(c["type"] == "Active" and c["status"] == "True"
                                             for c in q.get("status", {}).get("conditions", []))]) == 3
    wait_for(active, 60, "the three ClusterQueues to be Active")
    weights = {q["metadata"]["name"]: q["spec"]["fairSharing"]["weight"]
               for q in cluster.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]}
    assert weights == {t: str(w) for t, w in WEIGHTS.items()}

    # Every Job is queued before Kueue may admit any (creating ~200 Jobs keeps a loaded machine busy
    # for a while), then the three queues open at once.
    t_apply = time.monotonic()
    hold(cluster, True)
    kubectl_apply(cluster, jobs)
    wait_for(lambda: all(p == JOBS_PER_TENANT for _, p, _ in sample(cluster).values()), 120,
             "every Job's Workload to be queued")
    print(f"\n{len(jobs)} Jobs created and queued in {time.monotonic() - t_apply:.0f}s")
    hold(cluster, False)
    start = time.monotonic()
    samples: list[tuple[float, dict[str, tuple[Decimal, int, int]]]] = []
    while True:
        now = time.monotonic() - start
        s = sample(cluster)
        samples.append((now, s))
        if len(s) == 3 and min(p for _, p, _ in s.values()) == 0:
            break          # a tenant has nothing left to queue: the over-subscription is over
        assert now < DEADLINE, f"still queued after {DEADLINE}s: {s}"
        time.sleep(1)
    (tmp_path / "samples.json").write_text(json.dumps([(t, {k: [str(u), p, r] for k, (u, p, r) in s.items()})
                                                       for t, s in samples]))
    # The steady window opens once the cluster has turned over (as many jobs finished as it
    # has GPUs): the fill made at the opening, before any job ended, is gone by then.
    window = [(t, s) for t, s in samples if finished(s) >= GPUS]
    assert window and window[-1][0] - window[0][0] >= MIN_WINDOW, \
        f"steady window only {window[-1][0] - window[0][0] if window else 0:.0f}s"

    gpu_seconds = dict.fromkeys(WEIGHTS, Decimal(0))
    for (t0, s0), (t1, _) in zip(window, window[1:]):
        for tenant in WEIGHTS:
            gpu_seconds[tenant] += s0[tenant][0] * Decimal(t1 - t0)
    total = sum(gpu_seconds.values())
    span = Decimal(window[-1][0] - window[0][0])
    shares = {t: gpu_seconds[t] / total for t in WEIGHTS}
    expected = {t: Decimal(w) / sum(WEIGHTS.values()) for t, w in WEIGHTS.items()}
    report = ", ".join(f"{t} {shares[t]:.3f} (fair {expected[t]:.3f})" for t in WEIGHTS)
    print(f"\nsteady window {window[0][0]:.0f}-{window[-1][0]:.0f}s after the queues opened "
          f"({len(window)} samples), cluster {float(total / span / GPUS):.1%} "
          f"admitted; shares of admitted GPU time: {report}")
    for t in WEIGHTS:
        assert abs(shares[t] - expected[t]) <= TOLERANCE * expected[t], report
    assert total / span >= Decimal("0.9") * GPUS, f"the cluster was not kept full: {report}"
