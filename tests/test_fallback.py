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


def program_with(action: str = 'training image "trainer:1" { batch: 64 }', constraints: str = "gpus 8") -> ir.Program:
    text = f"""
tenant team-a {{ tier: gold }}
intent train {{
  trigger: on push
  action: {action}
  context: tenant team-a
  constraints: {constraints}
}}
"""
    prog, diags = parse(SourceFile("t.intent", text))
    assert not diags, diags
    return prog


def annotations(job: dict[str, Any]) -> dict[str, str]:
    return dict(job["metadata"]["annotations"])


def test_variants_are_suspended_power_cap_then_smaller_chunk_then_smaller_batch_then_cpu() -> None:
    jobs = jobs_of(program_of("fallback cpu"))
    chain = ["train-fallback-power", "train-fallback-chunk", "train-fallback-batch", "train-fallback-cpu"]
    assert sorted(jobs) == sorted(["train", *chain])
    assert "suspend" not in jobs["train"]["spec"]
    for step, name in enumerate(chain, 1):
        assert jobs[name]["spec"]["suspend"] is True
        ann = annotations(jobs[name])
        assert ann["intentc.dev/fallback-of"] == "train" and ann["intentc.dev/fallback-step"] == str(step)
        assert jobs[name]["spec"]["template"]["metadata"]["annotations"]["intentc.dev/fallback-step"] == str(step)
    power, chunk, smaller, cpu = (jobs[n] for n in chain)
    assert [annotations(jobs[n])["intentc.dev/fallback-kind"] for n in chain] == [
        "power-cap", "smaller-chunk", "smaller-batch", "cpu"]
    assert "intentc.dev/fallback-kind" not in annotations(jobs["train"])
    for name in ("train", *chain):
        assert validate_manifest(jobs[name]) == []      # the client library's batch/v1 Job model


def test_each_step_changes_one_thing_and_tells_the_workload() -> None:
    jobs = jobs_of(program_of("fallback cpu"))
    primary, power, chunk = env(jobs["train"]), env(jobs["train-fallback-power"]), env(jobs["train-fallback-chunk"])
    smaller, cpu = env(jobs["train-fallback-batch"]), env(jobs["train-fallback-cpu"])
    assert power == {**primary, "INTENTC_POWER_LIMIT_FRACTION": "0.8"}
    assert annotations(jobs["train-fallback-power"])["intentc.dev/power-limit-fraction"] == "0.8"
    assert chunk == {**primary, "INTENTC_CHUNK_FRACTION": "0.5"}
    assert annotations(jobs["train-fallback-chunk"])["intentc.dev/chunk-fraction"] == "0.5"
    assert smaller == {**primary, "INTENTC_BATCH": "32"}
    assert primary["INTENTC_BATCH"] == "64" and cpu["INTENTC_BATCH"] == "32" and cpu["INTENTC_DEVICE"] == "cpu"
    assert not {"INTENTC_POWER_LIMIT_FRACTION", "INTENTC_CHUNK_FRACTION"} & (set(smaller) | set(cpu))
    pod = jobs["train-fallback-cpu"]["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in str(pod) and "nodeSelector" not in pod
    assert len(jobs["train-fallback-cpu"]["spec"]["podFailurePolicy"]["rules"]) == 2   # no GPU exit-code rule on a CPU
    for name in ("train-fallback-power", "train-fallback-chunk", "train-fallback-batch"):
        assert jobs[name]["spec"]["podFailurePolicy"] == jobs["train"]["spec"]["podFailurePolicy"]


def test_only_the_power_capped_step_goes_back_to_the_tainted_node() -> None:
    """The daemon taints the node whose GPU failed before it resumes a step: the power cap is
    meant for those GPUs, so it tolerates that taint (the planned node preferred); the others
    keep to the product and let the taint send them elsewhere."""
    prog = program_of("fallback cpu")
    plan, _ = make_plan(prog, topology())
    rendered = render(prog, plan, "a" * 40, V129, topology=topology().topology)
    jobs = {m.ref.name: dict(m.body) for m in rendered.manifests if m.ref.kind == "Job"}
    observation = {"key": OBSERVATION_TAINT, "operator": "Exists", "effect": "NoSchedule"}
    primary = jobs["train"]["spec"]["template"]["spec"]
    power = jobs["train-fallback-power"]["spec"]["template"]["spec"]
    assert power["tolerations"] == [*primary["tolerations"], observation]
    assert "nodeSelector" not in power
    assert power["affinity"] == jobs["train-fallback-batch"]["spec"]["template"]["spec"]["affinity"]
    preferred = power["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["preference"]["matchExpressions"][0]["values"] == ["n1"]
    for name in ("train", "train-fallback-chunk", "train-fallback-batch", "train-fallback-cpu"):
        assert observation not in jobs[name]["spec"]["template"]["spec"].get("tolerations", [])


def test_steps_are_rendered_only_where_they_apply() -> None:
    # every GPU Job gets the power cap; only training and offline inference a smaller chunk
    assert sorted(jobs_of(program_with('batch image "b:1"'))) == ["train", "train-fallback-power"]
    assert sorted(jobs_of(program_with('batch image "b:1" { batch: 8 }'))) == [
        "train", "train-fallback-batch", "train-fallback-power"]
    assert sorted(jobs_of(program_with('inference image "i:1" { seq_len: 128 }')) ) == [
        "train", "train-fallback-chunk", "train-fallback-power"]
    # no batch to halve (or a batch of 1)
    assert sorted(jobs_of(program_of("fallback cpu", settings="seq_len: 128"))) == [
        "train", "train-fallback-chunk", "train-fallback-cpu", "train-fallback-power"]
    assert "train-fallback-batch" not in jobs_of(program_of("sla P1", settings="batch: 1"))
    # no GPUs: no chain (a CPU Job has nothing to fall back from)
    assert sorted(jobs_of(program_with(constraints="cpu 4"))) == ["train"]


def test_the_chain_renders_byte_identically() -> None:
    prog = program_of("fallback cpu")
    plan, _ = make_plan(prog, topology())
    texts = [render(prog, plan, "a" * 40, V129, topology=topology().topology).manifests for _ in range(2)]
    assert [(m.ref, m.spec_hash) for m in texts[0]] == [(m.ref, m.spec_hash) for m in texts[1]]
    assert [dict(m.body) for m in texts[0]] == [dict(m.body) for m in texts[1]]


def test_no_cpu_variant_without_fallback_cpu() -> None:
    assert sorted(jobs_of(program_of("sla P1"))) == [
        "train", "train-fallback-batch", "train-fallback-chunk", "train-fallback-power"]


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


def test_the_daemon_resumes_the_steps_in_order() -> None:
    """Power cap, smaller chunk, smaller batch, CPU: each resumed once the one before it
    used up its retries, never two at once."""
    names = ["train-fallback-power", "train-fallback-chunk", "train-fallback-batch", "train-fallback-cpu"]
    chain = [job("train", 0, failed="BackoffLimitExceeded"), *(job(n, i, suspend=True) for i, n in enumerate(names, 1))]
    resumed = []
    while (name := next_fallback(reversed(chain))) is not None:
        resumed.append(name)
        at = [j["metadata"]["name"] for j in chain].index(name)
        assert next_fallback([*chain[:at], job(name, at), *chain[at + 1:]]) is None       # it runs
        chain[at] = job(name, at, failed="BackoffLimitExceeded")
    assert resumed == names
    assert resumable(chain) == []


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


def test_the_resume_event_names_the_step_kind() -> None:
    from intentc.daemon.failures import _resumed_message
    power = jobs_of(program_of("sla P1"))["train-fallback-power"]
    assert _resumed_message(power, "train") == (
        "Job train failed (BackoffLimitExceeded): fallback train-fallback-power (power-cap) resumed")
    assert _resumed_message(job("old-fallback-batch", 1), "old") == (
        "Job old failed (BackoffLimitExceeded): fallback old-fallback-batch resumed")    # rendered before kinds
