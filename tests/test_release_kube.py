"""`intentc apply --wait` releases each intent when its own prerequisites end (issue 40).

A whole control plane whose kwok holds every Job pod Running for its intent's
planned duration, scaled (tests/kwok_stages.py: one plan hour is `MS_PER_HOUR`
of cluster time), so the cluster runs the plan's schedule in miniature.  What
happened is read from the API server afterwards — each Job's `startTime`,
`completionTime` and creation — and the tests assert orders and relative
gaps between those times, never wall-clock thresholds.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import pytest

from intentc.pipeline import compile_paths
from intentc.render.capabilities import KubeVersion
from tests.conftest import _control_plane, needed_assets
from tests.kube_env import KubeEnv
from tests.kube_nodes import add_topology
from tests.kube_support import apply_json, finished_at, recorded_jobs
from tests.kwok_stages import planned_duration_stages

pytestmark = pytest.mark.kube

SHA = "c" * 40
MS_PER_HOUR = 3000            # one hour of plan time: 3 s on the cluster
_ids = itertools.count(1)


def topology(t: str, nodes: int, products: tuple[str, ...] = ()) -> str:
    """`nodes` 8-GPU nodes, of `products` in turn (H100-80GB when none are given)."""
    kinds = products or ("H100-80GB",)
    return (f"apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {{name: {t}}}\nspec:\n"
            "  levels: [zone, rack, nvlink, node]\n  nodes:\n"
            + "".join(f"    - name: {t}-n{i}\n"
                      f"      gpu: {{product: {kinds[(i - 1) % len(kinds)]}, count: 8, memory: 80Gi}}\n"
                      '      cpu: "192"\n      memory: 2Ti\n'
                      f"      domains: {{zone: z1, rack: r1, nvlink: {t}-n{i}}}\n" for i in range(1, nodes + 1)))


def intent(name: str, t: str, hours: int, trigger: str = "on push", product: str = "H100-80GB") -> str:
    return (f"intent {name} {{\n  trigger: {trigger}\n  action: batch image \"registry.example/{name}:1\"\n"
            f"  context: tenant {t}-a\n"
            f"  constraints: cpu 1, memory 1Gi, gpus 8 x \"{product}\" within node, duration {hours}h\n}}\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    stages = planned_duration_stages(needed_assets(), tmp_path_factory.mktemp("kwok"), MS_PER_HOUR)
    yield from _control_plane(tmp_path_factory, ("controller-manager", "scheduler", "kwok"), (stages,))


class Case:
    def __init__(self, tmp: Path, env: KubeEnv, nodes: int, intents: str, quota: int | None = None,
                 products: tuple[str, ...] = ()) -> None:
        self.env = env
        self.t = f"rl{next(_ids)}-{int(time.time()) % 100000}"
        self.tenant = f"{self.t}-a"
        self.dir = tmp / self.t
        (self.dir / "intents").mkdir(parents=True)
        (self.dir / "intents" / "main.intent").write_text(
            f"tenant {self.t}-a {{ tier: gold{f' quota: gpus {quota}' if quota else ''} }}\n\n"
            + intents.replace("{t}", self.t))
        self.topology = self.dir / "cluster.yaml"
        self.topology.write_text(topology(self.t, nodes, products))
        self.nodes = add_topology(env, str(self.topology))
        result = compile_paths([str(self.dir / "intents")], str(self.topology), SHA, KubeVersion(1, 37))
        assert result.plan is not None, [d.message for d in result.diagnostics]
        self.plan = result.plan

    def apply(self, *flags: str) -> tuple[int, dict[str, Any], str]:
        return apply_json(self.dir / "intents", self.topology, self.env, self.t, SHA, *flags)

    def jobs(self) -> dict[str, dict[str, Any]]:
        return {j["metadata"]["name"]: j for j in recorded_jobs(self.env, self.tenant)}

    def finished(self, job: str) -> float:
        return finished_at(self.env, self.tenant, f"job-name={job}")

    def nodes_of(self, job: str) -> set[str]:
        pods = self.env.kubectl_json("get", "pods", "-n", self.tenant, "-l", f"job-name={job}")["items"]
        return {p["spec"].get("nodeName") for p in pods}


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def started(job: dict[str, Any]) -> float:
    return at(job["status"]["startTime"])


def completed(job: dict[str, Any]) -> float:
    return at(job["status"]["completionTime"])


def created(job: dict[str, Any]) -> float:
    return at(job["metadata"]["creationTimestamp"])


BRANCHES = (intent("root", "{t}", 1) + intent("long", "{t}", 4, "after root")
            + intent("short", "{t}", 1, "after root") + intent("after-short", "{t}", 1, "after short")
            + intent("other", "{t}", 1, "after root"))


def test_each_branch_starts_when_its_own_prerequisite_ends(cluster: KubeEnv, tmp_path: Path) -> None:
    """A 4-h job and two 1-h branches after a shared root: `after-short` (wave 2) starts when
    `short` ends, not when the whole of wave 1 (with `long`) has ended."""
    case = Case(tmp_path, cluster, 4, BRANCHES)
    assert case.plan.wave_of("long") == case.plan.wave_of("short") == 1 and case.plan.wave_of("after-short") == 2
    code, doc, output = case.apply()
    assert code == 0, output
    jobs = case.jobs()
    root, long, short, after_short, other = (jobs[n] for n in ("root", "long", "short", "after-short", "other"))
    for job in (long, short, other):
        assert created(job) >= case.finished("root"), "a branch waits for its prerequisite"
    assert created(after_short) >= case.finished("short")
    # the point: the dependant of the 1-h branch starts before the 4-h job of the same wave ends
    assert started(after_short) < completed(long), (started(after_short), completed(long))
    for name, placement in ((p.intent, p) for p in case.plan.placements):
        assert case.nodes_of(name) == set(placement.nodes), name


TWO_ON_ONE_NODE = (intent("big", "{t}", 3) + intent("first", "{t}", 1) + intent("second", "{t}", 1))


def test_an_intent_waits_for_its_planned_predecessor_on_the_node(cluster: KubeEnv, tmp_path: Path) -> None:
    """Two nodes, three 8-GPU intents of one wave: the plan runs `big` (3 h) on one node and
    `first` then `second` on the other.  `second` is created when `first` ends — not at once,
    to sit Pending beside it — and starts long before `big` ends (no wave barrier)."""
    case = Case(tmp_path, cluster, 2, TWO_ON_ONE_NODE)
    place = {p.intent: p for p in case.plan.placements}
    assert place["first"].nodes == place["second"].nodes != place["big"].nodes
    before, after = sorted(("first", "second"), key=lambda n: place[n].start_s)
    assert place[after].start_s >= place[before].end_s
    code, doc, output = case.apply()
    assert code == 0, output
    jobs = case.jobs()
    assert created(jobs[after]) >= case.finished(before), "created when its predecessor on the node ended"
    assert started(jobs[after]) < completed(jobs["big"]), "not held back until the wave ended"
    for name in ("big", "first", "second"):
        assert case.nodes_of(name) == set(place[name].nodes), name


HELD = (intent("root", "{t}", 1) + intent("slow", "{t}", 6, "after root") + intent("after-slow", "{t}", 1, "after slow")
        + intent("quick", "{t}", 1, "after root") + intent("after-quick", "{t}", 1, "after quick"))


def test_an_intent_that_fails_holds_back_its_dependants_only(cluster: KubeEnv, tmp_path: Path) -> None:
    """`slow` (6 h: 18 s here) outlives `--timeout 10s`: `after-slow` is held back and said so,
    while the other branch runs to its end — no wave barrier, no stop of the whole apply."""
    case = Case(tmp_path, cluster, 4, HELD)
    code, doc, output = case.apply("--timeout", "10s")
    assert code == 1, output
    message = doc["message"]
    assert "timed out" in message and "intent slow" in message, message
    assert "held back by a failed prerequisite: after-slow (after slow)" in message, message
    jobs = case.jobs()
    assert "after-slow" not in jobs
    assert jobs["after-quick"]["status"].get("completionTime"), "the other branch ran to its end"


CHAIN = intent("c1", "{t}", 1) + intent("c2", "{t}", 1, "after c1") + intent("c3", "{t}", 1, "after c2")


def test_a_chains_next_job_is_created_when_its_predecessor_completes_not_at_a_poll(cluster: KubeEnv,
                                                                                     tmp_path: Path) -> None:
    """`apply --wait` learns that a Job completed from a watch of it and its pods
    (reconcile/watched.py): with a poll interval far longer than a Job runs, each successor is
    created when its predecessor's pod succeeded — by what the API server recorded, within its
    1-s timestamp resolution: after the planned hour, and no later than the Job's own
    `completionTime`.  Read once a poll interval, it would be created up to an interval later."""
    from intentc.kube.client import KubeClient
    from intentc.kube.cluster_state import read_cluster_state
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.reconcile.release import release_order
    from intentc.reconcile.sync import ApplyOptions, Reconciler
    from intentc.reconcile.timeouts import wave_budgets

    case = Case(tmp_path, cluster, 1, CHAIN)
    result = compile_paths([str(case.dir / "intents")], str(case.topology), SHA, KubeVersion(1, 37))
    assert result.program and result.plan and result.rendered and result.topology
    client = KubeClient.connect(str(cluster.kubeconfig))
    try:
        binder = LiveBinder(result.program, result.topology, result.plan, result.rendered, KubeVersion(1, 37),
                            lambda: read_cluster_state(client), cluster_nodes=False)
        options = ApplyOptions(target=case.t, budgets=wave_budgets(result.program, result.plan),
                               release=release_order(result.program, result.plan.placements, True),
                               poll_interval=600.0)
        outcome = Reconciler(client, options, binder=binder).apply(result.rendered)
    finally:
        client.close()
    assert outcome.result == "succeeded", outcome.to_text()
    jobs = case.jobs()
    hour = MS_PER_HOUR / 1000
    for before, after in (("c1", "c2"), ("c2", "c3")):
        # the successor comes when its predecessor's pod succeeded: after its planned hour, and
        # no later than the Job controller's `completionTime`, which it writes a batch period on
        assert started(jobs[before]) + hour - 1 <= created(jobs[after]) <= completed(jobs[before]), \
            (before, jobs[before]["status"], after, jobs[after]["metadata"]["creationTimestamp"])


QUOTA_BOUND = intent("first", "{t}", 1) + intent("second", "{t}", 1, product="A100-80GB")


def test_an_intent_the_quota_holds_back_is_created_when_the_quota_has_counted_room(cluster: KubeEnv,
                                                                                 tmp_path: Path) -> None:
    """Quota 8 GPUs; `first` (8 H100) and `second` (8 A100) on nodes of their own: the plan
    starts `second` when `first` ends, through the quota alone — neither its prerequisite
    nor its GPU predecessor.  It is created once `first`'s pod has ended and the
    ResourceQuota has counted it, so no pod is refused for exceeding the quota (each refusal
    costs a Job controller backoff, a second and doubling), by the Events the API server
    holds."""
    case = Case(tmp_path, cluster, 2, QUOTA_BOUND, quota=8, products=("H100-80GB", "A100-80GB"))
    first, second = (case.plan.placement(n) for n in ("first", "second"))
    assert first is not None and second is not None
    assert second.start_s == first.end_s and first.nodes != second.nodes
    code, doc, output = case.apply()
    assert code == 0, output
    jobs = case.jobs()
    assert created(jobs["second"]) >= case.finished("first")
    events = cluster.kubectl_json("get", "events", "-n", case.tenant)["items"]
    refused = [e["message"] for e in events if e.get("reason") == "FailedCreate" and "exceeded quota" in e["message"]]
    assert refused == []


def classed(name: str, tenant: str, hours: int, product: str, sla: str) -> str:
    return (f"intent {name} {{\n  trigger: on push\n  action: batch image \"registry.example/{name}:1\"\n"
            f"  context: tenant {tenant}\n  constraints: cpu 1, memory 1Gi, gpus 8 x \"{product}\" within node, "
            f"duration {hours}h, sla {sla}\n}}\n")


QUOTA_ORDER = ("tenant {t}-b { tier: gold }\n"
               + classed("hold", "{t}-b", 1, "H100-80GB", "P0") + classed("urgent", "{t}-a", 1, "H100-80GB", "P1")
               + classed("backfill", "{t}-a", 3, "A100-80GB", "P3"))


def test_an_intent_ready_early_does_not_take_the_quota_of_one_its_tenant_starts_first(cluster: KubeEnv,
                                                                                     tmp_path: Path) -> None:
    """Quota 8 GPUs.  Another tenant holds the only H100 node for an hour, so `urgent` (P1,
    8 H100) starts then; `backfill` (P3, 8 A100, 3 h) could start at once on its idle node,
    but would hold the quota `urgent` needs, so the plan starts it after `urgent`.  Neither
    is the other's prerequisite or GPU predecessor: only the tenant's start order keeps
    `backfill` from being created at once and `urgent` from waiting three hours for the
    quota.  `backfill` is created after `urgent`, once `urgent`'s pod has ended."""
    case = Case(tmp_path, cluster, 2, QUOTA_ORDER, quota=8, products=("H100-80GB", "A100-80GB"))
    hold, urgent, backfill = (case.plan.placement(n) for n in ("hold", "urgent", "backfill"))
    assert hold is not None and urgent is not None and backfill is not None
    assert urgent.start_s == hold.end_s and backfill.start_s == urgent.end_s, case.plan.placements
    code, doc, output = case.apply()
    assert code == 0, output
    jobs = case.jobs()
    held = next(j for j in recorded_jobs(cluster, f"{case.t}-b") if j["metadata"]["name"] == "hold")
    assert created(jobs["urgent"]) >= finished_at(cluster, f"{case.t}-b", "job-name=hold")
    assert created(jobs["backfill"]) >= case.finished("urgent"), \
        (jobs["urgent"]["metadata"]["creationTimestamp"], jobs["backfill"]["metadata"]["creationTimestamp"])
    assert started(jobs["urgent"]) < completed(held) + MS_PER_HOUR / 1000, "urgent waited for nothing but `hold`"
