"""Failure side of rendered Jobs (render/fallback.py), the daemon's pure decisions
(daemon/fallback.py) and the planner leaving observed nodes out (plan/observation.py)."""

from __future__ import annotations

import pytest

from typing import Any

from intentc import ir
from intentc.daemon.fallback import OBSERVATION_SECONDS, TaintChange, next_fallback, resumable, taint_changes
from intentc.frontend.dsl import parse
from tests.kube_schema import validate_manifest
from intentc.frontend.sources import SourceFile
from intentc.plan.observation import OBSERVATION_TAINT
from intentc.plan.planner import make_plan
from intentc.reconcile.health import HealthStatus, job_health
from intentc.render import render
from intentc.render.capabilities import KubeVersion
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix

V129 = KubeVersion(1, 33)


def program_of(constraints: str, trigger: str = "on push", settings: str = "batch: 64") -> ir.Program:
    text = f"""
tenant team-a {{ tier: gold }}
intent train {{
  trigger: {trigger}
  action: training image "trainer:1" {{ {settings} }}
  context: tenant team-a
  constraints: gpus 8, {constraints}
}}
"""
    prog, diags = parse(SourceFile("t.intent", text))
    assert not diags, diags
    return prog


def topology(*taints: tuple[str, str, str]) -> LoadedTopology:
    nodes = (ir.TopologyNode("n1", 8, "H100-80GB", "80Gi", domains=(("node", "n1"),), taints=taints),
             ir.TopologyNode("n2", 8, "H100-80GB", "80Gi", domains=(("node", "n2"),)))
    return LoadedTopology(ir.Topology("t", ("node",), nodes),
                          tuple((n.name, default_matrix(8, n.gpu_product)) for n in nodes))


def jobs_of(prog: ir.Program, version: KubeVersion = V129) -> dict[str, dict[str, Any]]:
    plan, _ = make_plan(prog, topology())
    r = render(prog, plan, "a" * 40, version)
    return {m.ref.name: dict(m.body) for m in r.manifests if m.ref.kind in ("Job", "CronJob")}


def env(job: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0].get("env", [])}


def test_deadline_is_duration_times_one_plus_slack() -> None:
    assert jobs_of(program_of("duration 2h, slack 0.25"))["train"]["spec"]["activeDeadlineSeconds"] == 9000
    assert jobs_of(program_of("duration 2h"))["train"]["spec"]["activeDeadlineSeconds"] == 10800   # slack 0.5
    assert "activeDeadlineSeconds" not in jobs_of(program_of("sla P1"))["train"]["spec"]


def test_backoff_limit_comes_from_retries() -> None:
    assert jobs_of(program_of("retries 5"))["train"]["spec"]["backoffLimit"] == 5
    assert jobs_of(program_of("sla P1"))["train"]["spec"]["backoffLimit"] == 2


def test_pod_failure_policy_from_1_26() -> None:
    job = jobs_of(program_of("retries 3"))["train"]
    rules = job["spec"]["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    assert rules[1]["action"] == "Count" and rules[1]["onExitCodes"]["values"] == [74, 75]
    assert rules[2]["action"] == "FailJob" and rules[2]["onExitCodes"]["operator"] == "NotIn"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"    # required by podFailurePolicy
    assert env(job)["INTENTC_GPU_FAILURE_EXIT_CODES"] == "74,75"


def test_variants_are_suspended_smaller_batch_then_cpu() -> None:
    jobs = jobs_of(program_of("fallback cpu"))
    assert sorted(jobs) == ["train", "train-fallback-batch", "train-fallback-cpu"]
    assert "suspend" not in jobs["train"]["spec"]
    smaller, cpu = jobs["train-fallback-batch"], jobs["train-fallback-cpu"]
    assert smaller["spec"]["suspend"] is True and cpu["spec"]["suspend"] is True
    assert env(jobs["train"])["INTENTC_BATCH"] == "64" and env(smaller)["INTENTC_BATCH"] == "32"
    ann = smaller["metadata"]["annotations"]
    assert ann["intentc.dev/fallback-of"] == "train" and ann["intentc.dev/fallback-step"] == "1"
    assert cpu["metadata"]["annotations"]["intentc.dev/fallback-step"] == "2"
    pod = cpu["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in str(pod) and "nodeSelector" not in pod
    assert env(cpu)["INTENTC_DEVICE"] == "cpu"
    assert len(cpu["spec"]["podFailurePolicy"]["rules"]) == 2        # no GPU exit-code rule on a CPU
    for body in jobs.values():
        assert validate_manifest(body) == []      # the client library's batch/v1 Job model


def test_no_cpu_variant_without_fallback_cpu_and_no_batch_step_without_batch() -> None:
    assert sorted(jobs_of(program_of("sla P1"))) == ["train", "train-fallback-batch"]
    assert sorted(jobs_of(program_of("fallback cpu", settings="seq_len: 128"))) == ["train", "train-fallback-cpu"]


def test_nothing_is_rendered_below_the_supported_floor_and_no_variants_for_cronjobs() -> None:
    prog = program_of("fallback cpu")
    plan, _ = make_plan(prog, topology())
    with pytest.raises(ValueError, match="supports 1.33 and later"):
        render(prog, plan, "a" * 40, KubeVersion(1, 22))
    assert sorted(jobs_of(program_of("fallback cpu", trigger='schedule "0 2 * * *"'))) == ["train"]


def test_standby_variant_is_healthy_and_does_not_hold_a_wave() -> None:
    variant = jobs_of(program_of("fallback cpu"))["train-fallback-cpu"]
    assert job_health(variant).status is HealthStatus.HEALTHY
    resumed = {**variant, "spec": {**variant["spec"], "suspend": False}}
    assert job_health(resumed).status is HealthStatus.PROGRESSING


# -- the daemon's decisions -------------------------------------------------

NOW = 1_800_000_000.0


def pod(node: str, code: int, finished: str, where: str = "state") -> dict[str, Any]:
    return {"spec": {"nodeName": node}, "status": {"containerStatuses": [
        {"name": "main", where: {"terminated": {"exitCode": code, "finishedAt": finished}}}]}}


def node(name: str, until: int | None = None) -> dict[str, Any]:
    taints = [{"key": OBSERVATION_TAINT, "value": str(until), "effect": "NoSchedule"}] if until else []
    return {"metadata": {"name": name}, "spec": {"taints": taints}}


def iso(t: float) -> str:
    from datetime import datetime, timezone
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_taint_the_node_of_a_recent_gpu_failure_for_15_minutes() -> None:
    failed_at = NOW - 60
    changes = taint_changes([pod("n1", 74, iso(failed_at)), pod("n2", 1, iso(failed_at))],
                            [node("n1"), node("n2")], NOW)
    assert changes == [TaintChange("n1", True, int(failed_at) + OBSERVATION_SECONDS)]
    assert changes[0].taint() == {"key": OBSERVATION_TAINT, "value": str(int(failed_at) + 900),
                                  "effect": "NoSchedule", "timeAdded": iso(int(failed_at))}
    other = {"key": "example.com/maintenance", "effect": "NoSchedule"}
    live = {"metadata": {"name": "n1"}, "spec": {"taints": [other]}}
    assert changes[0].taints(live) == [other, changes[0].taint()]
    assert TaintChange("n1", False).taints({"spec": {"taints": [other, changes[0].taint()]}}) == [other]


def test_old_failures_and_already_tainted_nodes_change_nothing() -> None:
    old = pod("n1", 75, iso(NOW - OBSERVATION_SECONDS - 1), where="lastState")
    assert taint_changes([old], [node("n1")], NOW) == []
    recent = pod("n1", 75, iso(NOW - 10))
    assert taint_changes([recent], [node("n1", int(NOW - 10) + 900)], NOW) == []


def test_lift_the_taint_when_the_observation_ends() -> None:
    assert taint_changes([], [node("n1", int(NOW) - 1), node("n2", int(NOW) + 60)], NOW) == [
        TaintChange("n1", False)]


def job(name: str, step: int, failed: str | None = None, suspend: bool = False) -> dict[str, Any]:
    ann = {"intentc.dev/fallback-of": "train", "intentc.dev/fallback-step": str(step)} if step else {}
    status = {"conditions": [{"type": "Failed", "status": "True", "reason": failed}]} if failed else {}
    return {"metadata": {"name": name, "annotations": ann}, "spec": {"suspend": suspend}, "status": status}


def test_next_fallback_follows_the_chain() -> None:
    primary = job("train", 0, failed="BackoffLimitExceeded")
    smaller = job("train-fallback-batch", 1, suspend=True)
    cpu = job("train-fallback-cpu", 2, suspend=True)
    assert next_fallback([cpu, primary, smaller]) == "train-fallback-batch"
    running = job("train-fallback-batch", 1)
    assert next_fallback([primary, running, cpu]) is None
    spent = job("train-fallback-batch", 1, failed="BackoffLimitExceeded")
    assert next_fallback([primary, spent, cpu]) == "train-fallback-cpu"
    # an application error (podFailurePolicy FailJob) or the deadline ends the chain
    assert next_fallback([job("train", 0, failed="PodFailurePolicy"), smaller, cpu]) is None
    assert next_fallback([job("train", 0, failed="DeadlineExceeded"), smaller, cpu]) is None
    assert next_fallback([job("train", 0), smaller]) is None


def test_resumable_walks_every_chain_and_skips_jobs_without_variants() -> None:
    def in_ns(j: dict[str, Any], ns: str) -> dict[str, Any]:
        return {**j, "metadata": {**j["metadata"], "namespace": ns}}
    failed = job("train", 0, failed="BackoffLimitExceeded")
    smaller = job("train-fallback-batch", 1, suspend=True)
    lone = {"metadata": {"name": "other", "namespace": "a"},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}}
    jobs = [in_ns(smaller, "b"), in_ns(failed, "b"), in_ns(smaller, "a"), in_ns(job("train", 0), "a"), lone]
    assert resumable(jobs) == [("b", "train-fallback-batch", "train")]


def test_a_gpu_variant_may_run_on_any_node_of_the_planned_product() -> None:
    """The daemon taints the node whose GPU failed before it resumes the variant: a variant
    pinned to that node would never schedule."""
    prog = program_of("fallback cpu")
    plan, _ = make_plan(prog, topology())
    rendered = render(prog, plan, "a" * 40, V129, topology=topology().topology)
    jobs = {m.ref.name: dict(m.body) for m in rendered.manifests if m.ref.kind == "Job"}
    primary = jobs["train"]["spec"]["template"]["spec"]
    smaller = jobs["train-fallback-batch"]["spec"]["template"]["spec"]
    assert primary["nodeSelector"] == {"kubernetes.io/hostname": "n1"}
    assert "nodeSelector" not in smaller
    affinity = smaller["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100-80GB"]}]}]
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]
    assert smaller["tolerations"] == primary["tolerations"]
    # no product known (no topology, none declared): any node with GPUs to give
    loose = jobs_of(prog)["train-fallback-batch"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert list(loose) == ["preferredDuringSchedulingIgnoredDuringExecution"]


def test_planner_avoids_nodes_under_observation() -> None:
    prog = program_of("sla P1")
    plan, _ = make_plan(prog, topology())
    assert plan.placements[0].nodes == ("n1",)
    observed, _ = make_plan(prog, topology((OBSERVATION_TAINT, "1800000900", "NoSchedule")))
    assert observed.placements[0].nodes == ("n2",)
    other, _ = make_plan(prog, topology(("example.com/other", "", "NoSchedule")))
    assert other.placements[0].nodes == ("n1",)


def test_taints_reach_the_planner_through_topology_import(tmp_path: Any) -> None:
    from intentc.topology.load import load_topology
    from intentc.topology.nodes_import import import_nodes

    def kube_node(name: str, taints: list[dict[str, str]]) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "H100-80GB",
                                                      "nvidia.com/gpu.count": "8",
                                                      "nvidia.com/gpu.memory": "81559"}},
                "spec": {"taints": taints}, "status": {"capacity": {"cpu": "96", "memory": "2Ti"}}}
    observed = [{"key": OBSERVATION_TAINT, "value": "1800000900", "effect": "NoSchedule"}]
    text, diags = import_nodes({"items": [kube_node("n1", observed), kube_node("n2", [])]}, "live")
    assert not diags
    path = tmp_path / "live.yaml"
    path.write_text(text)
    loaded, diags = load_topology(str(path))
    assert loaded is not None and not diags, diags
    assert loaded.topology.nodes[0].taints == ((OBSERVATION_TAINT, "1800000900", "NoSchedule"),)
    plan, _ = make_plan(program_of("sla P1"), loaded)
    assert plan.placements[0].nodes == ("n2",)


# -- the phase an Intent object shows (daemon/phase.py) --------------------------

def test_intent_phase_follows_the_step_of_the_chain_that_runs() -> None:
    from intentc.daemon.phase import intent_phase

    def kind(j: dict[str, Any], k: str = "Job") -> dict[str, Any]:
        return {**j, "kind": k}
    done = {"conditions": [{"type": "Complete", "status": "True"}]}
    failed = kind(job("train", 0, failed="BackoffLimitExceeded"))
    standby = kind(job("train-fallback-batch", 1, suspend=True))
    running = kind(job("train-fallback-batch", 1))
    assert intent_phase([]) == "Pending"
    assert intent_phase([kind(job("train", 0)), standby]) == "Running"
    assert intent_phase([failed, standby]) == "Failed"
    assert intent_phase([failed, running]) == "Fallback"
    assert intent_phase([failed, {**running, "status": done}]) == "Succeeded"
    assert intent_phase([kind({"metadata": {"name": "t"}}, "CronJob")]) == "Scheduled"
    # a gang shows its worst member
    assert intent_phase([kind({**job("t-0", 0), "status": done}), kind(job("t-1", 0))]) == "Running"
