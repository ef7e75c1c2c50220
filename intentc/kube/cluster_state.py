"""What the cluster holds right now, read for planning: nodes and the pods that run.

Reading only; the decision (which nodes are usable, which GPUs are taken)
is `intentc.plan.live_occupancy`, a pure function of what this returns.  Two LISTs:
every Node, and every Pod that is not finished (a field selector on the
phase, so a cluster with many completed Jobs costs nothing extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intentc.kube.client import KubeClient


@dataclass(frozen=True)
class ClusterState:
    nodes: tuple[dict[str, Any], ...]
    pods: tuple[dict[str, Any], ...]


def read_cluster_state(client: KubeClient) -> ClusterState:
    nodes = client.list("v1", "Node")
    pods = client.list("v1", "Pod", field_selector="status.phase!=Succeeded,status.phase!=Failed")
    key = lambda o: (o.get("metadata", {}).get("namespace", ""), o.get("metadata", {}).get("name", ""))  # noqa: E731
    return ClusterState(tuple(sorted(nodes, key=key)), tuple(sorted(pods, key=key)))
