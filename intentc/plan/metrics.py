"""Plan-wide numbers: allocation, fragmentation, NVLink spanning, fairness, time.

Allocation and fairness are over time: a tenant's allocation is the most
GPUs it holds at one instant, fragmentation is measured at plan time 0 (what
the first wave leaves stranded), the makespan is when the last finite
intent ends, next to the critical path (the bound the dependencies alone
set).  The critical path is over the intents that run: a refused intent
(and so everything that waits for it) takes no time in the plan, and a
long refused chain reported as the bound would stand above the makespan.
The longest refused chain is reported apart (`refused_path`), so what
the plan gave up is still visible.

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

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

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


def longest_chain(order: Iterable[str], after: Callable[[str], Sequence[str]], durations: Mapping[str, int],
                  among: Collection[str]) -> tuple[tuple[str, ...], int]:
    """The longest chain by summed durations through the intents of `among` only
    (`order`: a topological order; `after`: what an intent waits for), ties to the
    smallest name as `digraph.critical_path` breaks them, so a plan with nothing left
    out reports the very chain the whole graph has."""
    dist: dict[str, int] = {}
    prev: dict[str, str | None] = {}
    for v in order:
        if v not in among:
            continue
        best: str | None = None
        for u in after(v):
            if u in dist and (best is None or (-dist[u], u) < (-dist[best], best)):
                best = u
        dist[v] = durations.get(v, 0) + (dist[best] if best is not None else 0)
        prev[v] = best
    if not dist:
        return (), 0
    end = min(dist, key=lambda n: (-dist[n], n))
    path = [end]
    while (p := prev[path[-1]]) is not None:
        path.append(p)
    return tuple(reversed(path)), dist[end]


def critical_paths(order: Sequence[str], after: Callable[[str], Sequence[str]], durations: Mapping[str, int],
                   refused: Collection[str]) -> tuple[tuple[str, ...], int, tuple[str, ...], int]:
    """The plan's critical path and its length over the intents that run (those of `order`
    not in `refused`), then the longest refused chain and its length: the one definition
    the full planner and the incremental one (plan/incremental.py) both report.  With
    nothing refused the critical path is the whole graph's (`digraph.critical_path`), which
    both planners already have and pass on without calling this."""
    runs = {n for n in order if n not in refused}
    path, path_s = longest_chain(order, after, durations, runs)
    lost, lost_s = longest_chain(order, after, durations, refused)
    return path, path_s, lost, lost_s


def compute(cluster: Cluster, placements: Sequence[Placement], shares: Sequence[TenantShare],
            critical_path: tuple[str, ...], critical_path_s: int, peak_gpus: int, idle_at_start: int,
            refused_path: tuple[str, ...] = (), refused_path_s: int = 0) -> Metrics:
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
        refused_path=refused_path,
        refused_path_s=refused_path_s,
    )
