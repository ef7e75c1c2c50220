"""Reading an `Observation` from API objects (intentc/forecast/observe.py): Jobs, Workloads, Pods, Nodes.

The objects are shaped as the API server returns them (only the fields
read); the real server's are read in tests/test_forecast_kube.py.
"""

from __future__ import annotations

from typing import Any

from intentc import ir
from intentc.forecast.core import phase_of
from intentc.forecast.model import Phase
from intentc.forecast.observe import observe, timestamp
from intentc.plan.model import Busy
from intentc.render.fallback import FALLBACK_OF
from intentc.objectmeta import GPU_INDICES_ANNOTATION, INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL
from tests.test_plan import job, node

TOPOLOGY = ir.Topology("t", ("zone", "rack", "nvlink", "node"), (node("n1", zone="z", rack="r"),
                                                                  node("n2", zone="z", rack="r")))
PROGRAM = ir.Program(intents=(job("a", gpus=2), job("b", gpus=2), job("c", gpus=2)))


def k8s_node(name: str, ready: bool = True, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "allocatable": {"nvidia.com/gpu": "8"}}}


def k8s_job(intent: str, name: str | None = None, created: str = "2026-01-01T00:00:00Z", suspend: bool = False,
            status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name or intent, "namespace": "team-a", "creationTimestamp": created,
                         "labels": {INTENT_LABEL: intent, TENANT_LABEL: "team-a", MANAGED_BY_LABEL: MANAGED_BY},
                         "annotations": annotations or {}},
            "spec": {"suspend": suspend}, "status": status or {}}


def k8s_pod(job_name: str, intent: str, node_name: str, phase: str = "Running", gpus: int = 2,
            indices: str | None = None, namespace: str = "team-a") -> dict[str, Any]:
    return {"metadata": {"name": job_name + "-x", "namespace": namespace,
                         "labels": {"batch.kubernetes.io/job-name": job_name, INTENT_LABEL: intent,
                                    MANAGED_BY_LABEL: MANAGED_BY},
                         "annotations": {GPU_INDICES_ANNOTATION: indices} if indices else {}},
            "spec": {"nodeName": node_name,
                     "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": phase}}


def test_jobs_pods_workloads_and_nodes_as_the_server_shows_them() -> None:
    jobs = [
        k8s_job("a", created="2026-01-01T00:00:00Z",
                status={"startTime": "2026-01-01T00:00:05Z", "completionTime": "2026-01-01T00:10:00Z",
                        "conditions": [{"type": "Complete", "status": "True"}]}),
        k8s_job("b", created="2026-01-01T00:10:01Z", status={"startTime": "2026-01-01T00:10:02Z"}),
        k8s_job("c", created="2026-01-01T00:10:01Z", suspend=True),
    ]
    workloads = [{"metadata": {"namespace": "team-a", "ownerReferences": [{"kind": "Job", "name": "c"}]},
                  "status": {"conditions": [{"type": "QuotaReserved", "status": "False"}]}}]
    pods = [k8s_pod("b", "b", "n1", indices="0,1"),
            {"metadata": {"name": "other", "namespace": "elsewhere"}, "spec": {
                "nodeName": "n2", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "3"}}}]},
             "status": {"phase": "Running"}}]
    nodes = [k8s_node("n1"), k8s_node("n2", taints=[{"key": "intentc.dev/gpu-observation", "value": "1",
                                                     "effect": "NoSchedule"}])]
    obs = observe(PROGRAM, TOPOLOGY, nodes, pods, jobs, workloads)
    assert obs.epoch == timestamp("2026-01-01T00:00:00Z")
    a, b, c = (obs.job(n) for n in "abc")
    assert a is not None and phase_of(a) is Phase.SUCCEEDED and a.completed == timestamp("2026-01-01T00:10:00Z")
    assert b is not None and phase_of(b) is Phase.RUNNING and b.gpus == (Busy("n1", (0, 1)),)
    assert c is not None and c.admitted is False and phase_of(c) is Phase.QUEUED
    assert [(n.name, n.problem) for n in obs.nodes] == [
        ("n1", None), ("n2", "tainted intentc.dev/gpu-observation=1:NoSchedule")]
    assert obs.foreign == ()          # the foreign pod sits on a node the plan may not use anyway
    nodes[1] = k8s_node("n2")
    again = observe(PROGRAM, TOPOLOGY, nodes, pods, jobs, workloads)
    assert again.foreign == (Busy("n2", (5, 6, 7)),)


def test_a_failed_job_and_a_fallback_chain_count_by_their_current_step() -> None:
    jobs = [
        k8s_job("a", status={"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                             "lastTransitionTime": "2026-01-01T00:03:00Z"}]}),
        k8s_job("a", name="a-fallback-batch", suspend=True, annotations={FALLBACK_OF: "a"}),
        k8s_job("b", status={"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                                             "lastTransitionTime": "2026-01-01T00:03:00Z"}]}),
        k8s_job("b", name="b-fallback-batch", annotations={FALLBACK_OF: "b"},
                status={"startTime": "2026-01-01T00:04:00Z"}),
    ]
    obs = observe(PROGRAM, TOPOLOGY, [k8s_node("n1"), k8s_node("n2")],
                  [k8s_pod("b-fallback-batch", "b", "n2", gpus=1)], jobs)
    a, b = obs.job("a"), obs.job("b")
    assert a is not None and phase_of(a) is Phase.FAILED and a.failure == "BackoffLimitExceeded"
    # b failed over to its variant, which runs (on the highest index: the pod names none)
    assert b is not None and phase_of(b) is Phase.RUNNING and b.gpus == (Busy("n2", (7,)),)
    assert obs.job("c") is None
