"""Plan-wide numbers: allocation, fragmentation, NVLink spanning, fairness, time.

Allocation and fairness are over time: a tenant's allocation is the most
GPUs it holds at one instant, fragmentation is measured at plan time 0 (what
the first wave leaves stranded), the makespan is when the last finite
intent ends, next to the critical path (the bound the dependencies alone
set).

Weighted Jain fairness index
    Over the tenants that *asked* for GPUs (requested_gpus > 0), with
    x_i = allocated_i / weight_i:

        J = (sum x_i)^2 / (n * sum x_i^2)

    J is 1 when every tenant got GPUs in proportion to its weight and tends
    to 1/n when one tenant got everything.  Tenants without demand are left
    out (they cannot be treated unfairly), and when nobody got anything J
    is 1 (everyone was treated the same).  Rounded to 6 decimals so the
    JSON is byte-stable across platforms.
"""

from __future__ import annotations

from collections.abc import Sequence

from intentc.plan.cluster import Cluster
from intentc.plan.model import Metrics, Placement, TenantShare


def jain_index(shares: Sequence[TenantShare]) -> float:
    xs = [s.allocated_gpus / s.weight for s in shares if s.requested_gpus > 0 and s.weight > 0]
    squares = sum(x * x for x in xs)
    if not xs or squares == 0:
        return 1.0
    return round(sum(xs) ** 2 / (len(xs) * squares), 6)


def idle_on_used_nodes(cluster: Cluster) -> int:
    """Free GPUs on nodes that run something: capacity stranded by partial use."""
    return sum(n.free_count for n in cluster.nodes if 0 < n.capacity and n.free_count < n.capacity)


def compute(cluster: Cluster, placements: Sequence[Placement], shares: Sequence[TenantShare],
            critical_path: tuple[str, ...], critical_path_s: int, peak_gpus: int, idle_at_start: int) -> Metrics:
    finite = [p for p in placements if p.end_s is not None]
    return Metrics(
        gpus_total=sum(n.capacity for n in cluster.nodes),
        gpus_allocated=peak_gpus,
        idle_gpus_on_used_nodes=idle_at_start,
        jobs_spanning_nvlink_domains=sum(p.interconnect == "network" for p in placements),
        jain_fairness=jain_index(shares),
        makespan_s=max((p.end_s or 0 for p in finite), default=0),
        critical_path=critical_path,
        critical_path_s=critical_path_s,
        queued=sum(p.start_s > p.ready_s for p in placements),
        gpu_seconds=sum(p.gpu_count * ((p.end_s or 0) - p.start_s) for p in finite),
    )
