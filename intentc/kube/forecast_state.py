"""What the forecast reads from the cluster: nodes, unfinished pods, intentc's Jobs, Kueue Workloads.

Reading only; the decisions (phases, ETAs) are `intentc.forecast`, pure
functions of what this returns.  Four LISTs: every Node, every Pod that is
not finished (as live planning reads them, `cluster_state.py`), the Jobs
intentc manages (by label), and Kueue's Workloads where the server serves
them and the caller may read them (a cluster without Kueue has none, and its
Jobs are never held by it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intentc.kube.client import KubeClient
from intentc.kube.cluster_state import read_cluster_state
from intentc.kube.errors import KubeError
from intentc.render.kueue import KUEUE_API
from intentc.objectmeta import MANAGED_BY, MANAGED_BY_LABEL


@dataclass(frozen=True)
class ForecastState:
    nodes: tuple[dict[str, Any], ...]
    pods: tuple[dict[str, Any], ...]
    jobs: tuple[dict[str, Any], ...]
    workloads: tuple[dict[str, Any], ...]


def _key(o: dict[str, Any]) -> tuple[str, str]:
    meta = o.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def read_forecast_state(client: KubeClient) -> ForecastState:
    state = read_cluster_state(client)
    jobs = client.list("batch/v1", "Job", label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}")
    workloads: list[dict[str, Any]] = []
    if KUEUE_API in client.served_api_versions():
        try:
            workloads = client.list(KUEUE_API, "Workload")
        except KubeError as e:
            if e.status not in (403, 404):
                raise
            # not allowed to read them (a ClusterRole older than the forecast): a
            # Job Kueue holds is still told by its `spec.suspend`, which Kueue lifts on admission
            workloads = []
    return ForecastState(state.nodes, state.pods, tuple(sorted(jobs, key=_key)), tuple(sorted(workloads, key=_key)))
