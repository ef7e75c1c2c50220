"""Three baselines for bench_plan.py, written the way today's tools place GPUs.

least-allocated  kube-scheduler's default scoring (LeastAllocated) applied to
                 GPUs: each pod goes to the node with the largest free share;
                 gangs are pods of 4 GPUs kept in the first pod's domain
                 (required pod affinity on the `within` level), all or nothing.
first-fit        domains and nodes in name order, the first that holds the job.
domain-best-fit  Kueue TAS BestFit: innermost level that fits, the tightest
                 domain there, whole children largest first; no intra-node
                 topology and no NVLink-domain awareness ("first free N" GPUs).

All three are gang-aware and admit jobs in intentc's own order (SLA class,
weighted fair share, quota), so the comparison measures *where* jobs go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from intentc import ir
from intentc.plan.admission import FairShare, TenantTerms, tenant_weight
from intentc.plan.cluster import Cluster, Domain, NodeState, View
from intentc.plan.placer import Request
from intentc.topology.load import LoadedTopology

Alloc = dict[str, list[tuple[str, tuple[int, ...]]]]      # job -> [(node, GPU indices)]

Policy = Callable[[Cluster, View, Request, int], "list[tuple[NodeState, int]] | None"]


def _eligible(c: Cluster, view: View) -> list[NodeState]:
    return [n for n, ok in zip(c.nodes, view.eligible) if ok]


def least_allocated(c: Cluster, view: View, req: Request, depth: int) -> list[tuple[NodeState, int]] | None:
    pod = req.count if req.count <= 8 else 4
    free = {id(n): n.free_count for n in _eligible(c, view)}
    nodes = _eligible(c, view)
    anchor: Domain | None = None
    taken: dict[int, tuple[NodeState, int]] = {}
    for _ in range(req.count // pod):
        best, best_score = None, -1.0
        for n in nodes:
            if free[id(n)] < pod or (anchor is not None and n.leaf.at_depth(depth) is not anchor):
                continue
            score = free[id(n)] / n.capacity                 # LeastAllocated: most free share wins
            if score > best_score:
                best, best_score = n, score
        if best is None:
            return None
        if anchor is None:
            anchor = best.leaf.at_depth(depth)
        free[id(best)] -= pod
        prev = taken.get(id(best), (best, 0))[1]
        taken[id(best)] = (best, prev + pod)
    return list(taken.values())


def _domain_nodes(d: Domain) -> Iterable[NodeState]:
    if d.node is not None:
        yield d.node
    for child in sorted(d.children, key=lambda x: x.name):
        yield from _domain_nodes(child)


def first_fit(c: Cluster, view: View, req: Request, depth: int) -> list[tuple[NodeState, int]] | None:
    for d in sorted(c.by_depth[depth], key=lambda x: x.name):
        if view.free[d.id] < req.count:
            continue
        out, need = [], req.count
        for n in _domain_nodes(d):
            have = view.free[n.leaf.id]
            if have:
                out.append((n, min(have, need)))
                need -= min(have, need)
            if need == 0:
                return out
    return None


def domain_best_fit(c: Cluster, view: View, req: Request, depth: int) -> list[tuple[NodeState, int]] | None:
    free = view.free

    def tightest(cands: list[Domain], k: int) -> Domain | None:
        fits = [d for d in cands if free[d.id] >= k]
        return min(fits, key=lambda d: (free[d.id], d.name)) if fits else None

    def spread(d: Domain, k: int) -> list[tuple[NodeState, int]]:
        if d.node is not None:
            return [(d.node, k)]
        kids = [x for x in d.children if free[x.id] > 0]
        out: list[tuple[NodeState, int]] = []
        while k > 0:
            fit = tightest(kids, k)
            if fit is not None:
                return out + spread(fit, k)
            big = min(kids, key=lambda x: (-free[x.id], x.name))
            kids.remove(big)
            out += spread(big, free[big.id])
            k -= free[big.id]
        return out

    for level in range(c.leaf_depth, depth - 1, -1):
        found = tightest(c.by_depth[level], req.count)
        if found is not None:
            return spread(found, req.count)
    return None


def _first_free(node: NodeState, k: int) -> tuple[int, ...]:
    return tuple(g for g in range(node.capacity) if node.free >> g & 1)[:k]


def place_with(policy: Policy, cluster: Cluster, req: Request) -> list[tuple[NodeState, tuple[int, ...]]] | None:
    """Where `policy` puts the gang (the first free GPUs of each node it picks), taken; None if nowhere."""
    view = cluster.view(req.filter)
    shares = policy(cluster, view, req, cluster.depth_of(req.within) if req.within else 0)
    if not shares:
        return None
    taken = []
    for node, k in shares:
        gpus = _first_free(node, k)
        cluster.take(node, gpus)
        taken.append((node, gpus))
    return taken


def terms_of(program: ir.Program) -> dict[str, TenantTerms]:
    return {t.name: TenantTerms(tenant_weight(t), t.quota_gpus) for t in program.tenants}


def run_baseline(policy: Policy, program: ir.Program, topo: LoadedTopology) -> Alloc:
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name))
    fair = FairShare(terms_of(program))
    out: Alloc = {}
    for intent in fair.order([i for i in program.intents if i.gpu_count], {}):
        req = Request.of(intent)
        if fair.over_quota(req.tenant, req.count):
            continue
        taken = place_with(policy, cluster, req)
        if taken is None:
            continue
        out[intent.name] = [(node.spec.name, gpus) for node, gpus in taken]
        fair.charge(req.tenant, req.count)
    return out


POLICIES: tuple[tuple[str, Policy], ...] = (
    ("least-allocated", least_allocated), ("first-fit", first_fit), ("domain-best-fit", domain_best_fit))
