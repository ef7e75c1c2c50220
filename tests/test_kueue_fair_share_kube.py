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
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Iterator

import pytest
import yaml

from intentc.pipeline import compile_paths
from intentc.drift.admission import assigned_nodes
from intentc.render.capabilities import KubeVersion
from tests.conftest import _control_plane
from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir
from tests.kube_nodes import add_topology
from tests.kube_support import WatchRecorder, wait_for

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
    """Kueue with fair sharing, kwok with pods that run for a while, the 28-GPU nodes, and
    the tenants' namespaces and Kueue objects as intentc renders them."""
    assets = assets_dir()
    if assets is None:
        pytest.skip(SKIP_MESSAGE)
    stages = running_for_a_while(assets, tmp_path_factory.mktemp("kwok"))
    with contextmanager(_control_plane)(tmp_path_factory, ("controller-manager", "scheduler", "kwok"),
                                        kwok_stages=(stages,)) as env:
        env.start_kueue(settings=FAIR_SHARING)
        add_topology(env, str(TOPOLOGY))
        setup = compiled(tmp_path_factory.mktemp("setup"), one_gpu_jobs(range(1)))
        kubectl_apply(env, [m for m in setup if m["kind"] != "Job"])

        def active() -> Any:
            queues = env.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]
            return len([q for q in queues if any(c["type"] == "Active" and c["status"] == "True"
                                                 for c in q.get("status", {}).get("conditions", []))]) == 3
        wait_for(active, 60, "the three ClusterQueues to be Active")
        yield env


def intent(name: str, tenant: str, gpus: str, sla: str = "P2") -> str:
    return (f'intent {name} {{\n  trigger: on push\n  action: training image "busybox:1.36"\n'
            f'  context: tenant {tenant}\n  constraints: cpu 1, memory 1Gi, gpus {gpus}, sla {sla}\n}}\n')


def one_gpu_jobs(indices: Iterable[int], tenants: Iterable[str] = WEIGHTS) -> str:
    return "".join(intent(f'{t.removeprefix("tn-")}-{i:03d}', t, '1 x "H100-80GB" within node')
                   for i in indices for t in tenants)


def compiled(d: Path, intents: str) -> list[dict[str, Any]]:
    """The tenants and `intents` (a feasible plan), rendered for kueue."""
    d.mkdir(exist_ok=True)
    (d / "tenants.intent").write_text("".join(f"tenant {t} {{ tier: {tier} }}\n" for t, tier in TIERS.items()))
    (d / "jobs.intent").write_text(intents)
    result = compile_paths([str(d)], str(TOPOLOGY), SHA, KubeVersion(1, 37), "kueue")
    assert result.ok and result.rendered is not None, [x.message for x in result.diagnostics]
    return [dict(m.body) for m in result.rendered.manifests]


def jobs_of(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in bodies if m["kind"] == "Job"]


def kubectl_apply(env: KubeEnv, bodies: list[dict[str, Any]]) -> None:
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=intentc-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}), timeout=300)


def admitted_gpus(cq: dict[str, Any]) -> Decimal:
    status = cq.get("status", {})
    return sum((Decimal(r.get("total", "0")) for f in status.get("flavorsUsage", [])
                for r in f.get("resources", []) if r["name"] == "nvidia.com/gpu"), Decimal(0))


def job_of(workload: dict[str, Any]) -> str:
    return next((o["name"] for o in workload["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), "")


def condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))


def hold(env: KubeEnv, on: bool, queues: Iterable[str] = WEIGHTS) -> None:
    """Stop or resume admission in ClusterQueues with one request list, bronze first:
    whatever head start there is goes against the weights."""
    env.kubectl_run("apply", "--server-side", "--force-conflicts", "--field-manager=fair-share-test", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
                        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": q},
                         "spec": {"stopPolicy": "Hold" if on else "None"}} for q in reversed(list(queues))]}))


def sample(env: KubeEnv) -> dict[str, tuple[Decimal, int, int]]:
    """Per tenant: GPUs admitted now, workloads pending, workloads holding quota."""
    queues = env.kubectl_json("get", "clusterqueues.kueue.x-k8s.io")["items"]
    return {q["metadata"]["name"]: (admitted_gpus(q), int(q.get("status", {}).get("pendingWorkloads", 0)),
                                    int(q.get("status", {}).get("reservingWorkloads", 0)))
            for q in queues if q["metadata"]["name"] in WEIGHTS}


def finished_of(s: dict[str, tuple[Decimal, int, int]], tenant: str) -> int:
    """A tenant's workloads done: each is pending, holding quota or finished (a preempted one is pending again)."""
    _, pending, reserving = s[tenant]
    return JOBS_PER_TENANT - pending - reserving


def finished(s: dict[str, tuple[Decimal, int, int]]) -> int:
    return sum(finished_of(s, t) for t in WEIGHTS)


def test_a_16_gpu_gang_is_admitted_whole_or_not_at_all(cluster: KubeEnv, tmp_path: Path) -> None:
    """13 one-GPU gold Jobs (P2, so Kueue takes them before the P3 gang) leave the cohort 15
    GPUs: room for three of the gang's four 4-GPU pods.  Kueue admits none of it while they
    run, then all four pods at once."""
    fillers = jobs_of(compiled(tmp_path / "fill", one_gpu_jobs(range(100, 113), ["tn-gold"])))
    bundle = compiled(tmp_path / "gang", intent("gang", "tn-gold", '16 x "H100-80GB" within zone', "P3"))
    kubectl_apply(cluster, [m for m in bundle if m["kind"] != "Job"])      # its PriorityClass
    [gang] = jobs_of(bundle)
    assert gang["spec"]["parallelism"] == 4
    workloads = WatchRecorder(cluster, "workloads.kueue.x-k8s.io")
    pods = WatchRecorder(cluster, "pods")
    try:
        hold(cluster, True, ["tn-gold"])
        kubectl_apply(cluster, fillers)
        kubectl_apply(cluster, [gang])
        wait_for(lambda: sample(cluster)["tn-gold"][1] == len(fillers) + 1, 60, "the Jobs to be queued")
        hold(cluster, False, ["tn-gold"])

        def started() -> Any:
            gang_pods = cluster.kubectl_json("get", "pods", "-n", "tn-gold", "-l", "job-name=gang")["items"]
            return len([p for p in gang_pods if p.get("status", {}).get("phase") in ("Running", "Succeeded")]) == 4
        wait_for(started, 300, "the gang to be admitted and its four pods to run")
    finally:
        events = [w for w in workloads.stop() if job_of(w) == "gang"]
        pod_events = [p for p in pods.stop() if p["metadata"]["name"].startswith("gang-")]
        cluster.kubectl_run("delete", "jobs", "-n", "tn-gold", "--all", "--wait=true", timeout=180)
    first = next(i for i, w in enumerate(events) if condition(w, "QuotaReserved"))
    waiting = {c["message"] for w in events[:first] for c in w.get("status", {}).get("conditions", [])
               if c["type"] == "QuotaReserved" and c["status"] == "False" and "is inactive" not in c["message"]}
    # Kueue said why it admitted nothing: not enough quota (15 of 16 GPUs) or, once fillers on
    # some nodes had ended, a topology with room for 3 of the 4 pods.
    assert waiting and all("insufficient unused quota for nvidia.com/gpu" in m or "allows to fit only 3 out of 4" in m
                           for m in waiting), waiting
    print(f"\nthe gang waited: {sorted(waiting)}")
    [psa] = events[first]["status"]["admission"]["podSetAssignments"]
    assert psa["count"] == 4 and sum(assigned_nodes(events[first]).values()) == 4, psa
    assert len({p["metadata"]["name"] for p in pod_events}) == 4, "one pod per index, none retried"


def test_admitted_gpu_time_follows_the_tier_weights(cluster: KubeEnv, tmp_path: Path) -> None:
    # batches of 9 per tenant (27 GPUs) are each a feasible plan; submitted interleaved
    batches = [jobs_of(compiled(tmp_path / f"b{b}", one_gpu_jobs(range(b * 9, b * 9 + 9))))
               for b in range(JOBS_PER_TENANT // 9)]
    order = list(WEIGHTS)
    jobs = sorted((m for b in batches for m in b),
                  key=lambda m: (m["metadata"]["name"].rpartition("-")[2], order.index(m["metadata"]["namespace"])))
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
    # jobs that ran to the end in the window: admitted Jobs whose pods could not run would not
    # be here (a namespace ResourceQuota below what Kueue lends did exactly that)
    done = {t: finished_of(window[-1][1], t) - finished_of(window[0][1], t) for t in WEIGHTS}
    print(f"\nsteady window {window[0][0]:.0f}-{window[-1][0]:.0f}s after the queues opened "
          f"({len(window)} samples), cluster {float(total / span / GPUS):.1%} "
          f"admitted; shares of admitted GPU time: {report}; jobs completed in it: {done}")
    for t in WEIGHTS:
        assert abs(shares[t] - expected[t]) <= TOLERANCE * expected[t], report
    assert total / span >= Decimal("0.9") * GPUS, f"the cluster was not kept full: {report}"
