"""`throughput_mode` of a serving intent: batch growth and replica autoscaling.

* `steady` (the default): the Deployment keeps the planned replicas, and
  the server grows its batch linearly (INTENTC_BATCH_GROWTH=linear) up to
  INTENTC_BATCH: a steady load is served at a steady latency.
* `burst`: a HorizontalPodAutoscaler owns the replica count, between 1 and
  the planned replicas (the plan reserved GPUs for all of them, so scaling
  up never waits for capacity), scaling up at once and down after five
  quiet minutes; the server doubles its batch under load
  (INTENTC_BATCH_GROWTH=exponential).  The Deployment then leaves
  `replicas` out, so the autoscaler's changes are not drift.

The HPA scales on CPU utilisation, the one metric every cluster serves;
GPU metrics need an adapter intentc cannot assume.
"""

from __future__ import annotations

from typing import Any

from intentc.ir import Intent, ThroughputMode
from intentc.render.capabilities import KubeVersion
from intentc.render.meta import metadata

CPU_TARGET_PERCENT = 70
SCALE_DOWN_WINDOW_S = 300


def mode(intent: Intent) -> str:
    s = intent.action.settings
    return s.throughput_mode if s is not None and s.throughput_mode else ThroughputMode.STEADY.value


def batch_growth(intent: Intent) -> str:
    return "exponential" if mode(intent) == ThroughputMode.BURST.value else "linear"


def autoscaler(intent: Intent, replicas: int, version: KubeVersion) -> dict[str, Any] | None:
    if mode(intent) != ThroughputMode.BURST.value:
        return None
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(intent.name, intent.tenant, tenant=intent.tenant, intent=intent.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": intent.name},
            "minReplicas": 1, "maxReplicas": replicas,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": CPU_TARGET_PERCENT}}}],
            "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0},
                         "scaleDown": {"stabilizationWindowSeconds": SCALE_DOWN_WINDOW_S}},
        },
    }
