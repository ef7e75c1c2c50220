"""Placing one gang: filters, the domain search, the GPU sets, and why not.

The search follows Kueue's topology-aware BestFit: find the *innermost*
level where some domain has enough free GPUs (a single node if possible,
then one NVLink domain, a rack, a zone, the cluster), never going past a
required `within`; among the domains that fit at that level take the
tightest one, so large domains stay whole for the jobs that need them.

While gangs that need a multi-node NVLink domain are still waiting
(`protect_nvlink`), the free GPUs of the enclosing NVLink domain count
*before* the domain's own: a one-GPU job that would fit on a 4-GPU tray of
a 72-GPU NVL72 domain and on an 8-GPU HGX node goes to the HGX node, since
only inside such a domain does a 16- or 32-GPU gang get NVLink end to end.
Otherwise plain best fit (the domain's own free GPUs first) packs tighter,
so the protection is switched on only when it buys something (the planner
decides, see `planner.py`).

Inside the chosen domain a multi-node gang takes whole children, largest
first (whole nodes first), and the remainder goes to the tightest child
that holds it.  On each node the GPU set comes from `GpuChooser`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from decimal import Decimal

from intentc import ir
from intentc.ir.quantity import parse_quantity
from intentc.plan.cluster import ROOT_LEVEL, Cluster, Domain, Filter, NodeState, View
from intentc.plan.gpuset import Choice
from intentc.plan.model import NodeAllocation
from intentc.topology.products import nearest, product_key, short_name

SCOPES = frozenset(ir.vocabulary(ir.Scope))
REASONS = ("no-product", "quota", "no-domain", "fragmentation", "capacity")


@lru_cache(maxsize=256)
def _filter(product: str | None, memory: str | None) -> Filter:
    """The filter of a GPU product and memory request (shared: there are few distinct ones); the
    product by `product_key`, so `H100-80GB` asks for nodes GFD labels `NVIDIA-H100-80GB-HBM3`."""
    size: Decimal | None = parse_quantity(memory) if memory else None
    return Filter(product_key(product) if product else None, size)


@dataclass(frozen=True, slots=True)
class Request:
    """What one intent asks of the cluster, as the planner needs it."""

    intent: str
    tenant: str
    count: int
    product: str | None
    memory: str | None
    within: str | None
    prefer: str | None
    # derived from product and memory; one shared object per distinct pair (slotted, no
    # instance dictionary: a plan of 100,000 intents holds 100,000 requests)
    filter: Filter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "filter", _filter(self.product, self.memory))

    @classmethod
    def of(cls, intent: ir.Intent) -> Request:
        g = intent.constraints.gpus
        if g is None:
            return cls(intent.name, intent.tenant, 0, None, None, None, None)
        within = g.within if g.within in SCOPES else None
        prefer = g.prefer if g.prefer in SCOPES else None
        return cls(intent.name, intent.tenant, max(g.count, 0), g.product, g.memory, within, prefer)

    def describe(self) -> str:
        what = f"{self.count} × {self.product}" if self.product else (
            f"{self.count} GPU" if self.count == 1 else f"{self.count} GPUs")
        if self.memory:
            what += f" with at least {self.memory} each"
        return what + (f" within {self.within}" if self.within else "")

    def noun(self) -> str:
        """How to call the GPUs this request can use, in messages."""
        if self.memory:
            return "matching GPUs"
        return f"{self.product} GPUs" if self.product else "GPUs"


@dataclass(frozen=True)
class Placed:
    allocations: tuple[NodeAllocation, ...]
    domains: tuple[tuple[str, str | None], ...]
    interconnect: str
    scope_depth: int            # depth of the innermost domain holding the whole gang


@dataclass(frozen=True)
class Refused:
    reason: str
    message: str
    hint: str


def over_quota(req: Request, quota: int | None) -> Refused | None:
    """A request larger than its tenant's whole GPU quota can never run (the full and the
    incremental planner refuse it in these words)."""
    if quota is None or req.count <= quota:
        return None
    return Refused("quota", f"cannot place {req.describe()}: tenant {req.tenant} has a quota of {quota} GPUs",
                   "raise the tenant's GPU quota or lower the count")


def waits_for_refused(name: str, refused: str) -> Refused:
    """`name` waits for `refused`, which can never be placed: refused with it."""
    return Refused("dependency", f'cannot start: "{name}" waits for "{refused}", which cannot be placed',
                   f'fix the placement of "{refused}" first')


class Placer:
    def __init__(self, cluster: Cluster) -> None:
        self.c = cluster
        self._nv = [d.at_depth(cluster.nvlink_depth).id if d.depth > cluster.nvlink_depth else d.id
                    for d in cluster.domains]
        self._up = [[a.id for a in d.ancestors()[1:]] for d in cluster.domains]
        # per domain: (how many enclosing domains have it as their only child, the first enclosing
        # domain with several children, or -1)
        self._branch: list[tuple[int, int]] = []
        for d in cluster.domains:
            single, a = 0, d.parent
            while a is not None and len(a.children) == 1:
                single, a = single + 1, a.parent
            self._branch.append((single, a.id if a is not None else -1))
        self._big = sum(n.capacity for n in cluster.nodes) + 1
        self._largest: dict[tuple[Filter, int], int] = {}   # capacity never changes
        self.protect_nvlink = False
        self.node_index = {n.spec.name: i for i, n in enumerate(cluster.nodes)}
        # intents still to be placed that can use only some nodes (a product or memory filter) -> how many;
        # kept up to date by the schedule, read to break ties between equally good nodes
        self.demand: dict[Filter, int] = {}
        self._wanted_kind: dict[tuple[str | None, Decimal | None], int] = {}
        self._sizes: dict[Filter, tuple[int, int]] = {}     # largest node, largest shared NVLink domain
        self._leaf_domains: dict[int, tuple[tuple[str, str | None], ...]] = {}   # see `_domains_of`

    # ------------------------------------------------------------------
    # Feasibility and reasons
    # ------------------------------------------------------------------

    def check(self, req: Request) -> tuple[View, int] | Refused:
        """The view and the depth limit for `req`, or why it can never be placed."""
        view = self.c.view(req.filter)
        limit = self.c.depth_of(req.within) if req.within else 0
        if not any(view.eligible):
            why, hint = self._no_product(req)
            return Refused("no-product", f"cannot place {req.describe()}: {why}", hint)
        largest = self.largest(req.filter, limit)
        if largest < req.count:
            where = (f"the largest {req.within} domain has {largest}" if req.within
                     else f"the cluster has {largest}")
            hint = (f"ask for at most {largest} GPUs, or relax `within {req.within}` to a wider scope"
                    if req.within else f"ask for at most {largest} GPUs")
            return Refused("no-domain", f"cannot place {req.describe()}: {where} {req.noun()}", hint)
        return view, limit

    def largest(self, flt: Filter, depth: int) -> int:
        """The most GPUs of `flt`'s view that one domain at `depth` has (capacity never changes)."""
        found = self._largest.get((flt, depth))
        if found is None:
            view = self.c.view(flt)
            found = self._largest[(flt, depth)] = max((view.cap[d.id] for d in self.c.by_depth[depth]), default=0)
        return found

    def _no_product(self, req: Request) -> tuple[str, str]:
        """Why no node can take `req`'s kind of GPU, and the hint: for a product no node has,
        the nearest of the topology's products (did you mean) and all of them, in the intents'
        spelling with the nodes' own beside it where they differ."""
        topo = self.c.topology
        offered = sorted({n.spec.gpu_product for n in self.c.nodes if n.capacity > 0 and n.spec.gpu_product})
        hint = "ask for a GPU product and memory this topology offers"
        if not any(n.capacity > 0 for n in self.c.nodes):
            return f'topology "{topo.name}" has no GPUs', hint
        flt = req.filter
        if flt.product is not None and not any(n.product == flt.product for n in self.c.nodes):
            guess = nearest(req.product, offered) if req.product else None
            meant = f' (did you mean "{guess}"?)' if guess else ""
            listing = ", ".join(s if s == p else f"{s} ({p})" for s, p in sorted((short_name(p), p) for p in offered))
            return (f'no node of topology "{topo.name}" has {req.product} GPUs{meant} '
                    f"(it offers {', '.join(offered) or 'unnamed GPUs'})",
                    f"ask for one of the products topology \"{topo.name}\" offers: {listing}" if listing else hint)
        same = [n for n in self.c.nodes if flt.product is None or n.product == flt.product]
        most = max((n.memory for n in same if n.memory is not None), default=None)
        kind = req.product or "GPU"
        best = f"the most is {_bytes(most)}" if most is not None else "no node states its GPU memory"
        return f"no {kind} node has {req.memory} of memory per GPU ({best})", hint

    def needs_shared_nvlink(self, req: Request) -> bool:
        """True for a gang too big for any node that a multi-node NVLink domain could
        hold within its scope: the jobs worth keeping such domains whole for."""
        c = self.c
        if c.nvlink_depth >= c.leaf_depth or req.count <= 0:
            return False
        if req.within is not None and c.depth_of(req.within) > c.nvlink_depth:
            return False
        flt = req.filter
        sizes = self._sizes.get(flt)
        if sizes is None:
            view = c.view(flt)
            biggest_node = max((n.capacity for n, ok in zip(c.nodes, view.eligible) if ok), default=0)
            biggest_shared = max((view.cap[d.id] for d in c.by_depth[c.nvlink_depth] if len(d.children) > 1),
                                 default=0)
            sizes = self._sizes[flt] = (biggest_node, biggest_shared)
        return sizes[0] < req.count <= sizes[1]

    def refuse_now(self, req: Request, view: View, limit: int) -> Refused:
        """Why a feasible request does not fit *now*: capacity or fragmentation."""
        free_total, cap_total = view.free[self.c.root.id], view.cap[self.c.root.id]
        if free_total < req.count:
            return Refused("capacity", f"cannot place {req.describe()}: only {free_total} of "
                                       f"{cap_total} {req.noun()} are free",
                           "free capacity by lowering other intents' GPU counts, or add nodes")
        most = max((view.free[d.id] for d in self.c.by_depth[limit]), default=0)
        scope = f"{req.within} domain" if req.within else "domain"
        return Refused("fragmentation",
                       f"cannot place {req.describe()}: {free_total} {req.noun()} are free but no "
                       f"{scope} has {req.count} of them together (the most in one is {most})",
                       f"relax `within {req.within}` to a wider scope, or give this intent a higher "
                       f"SLA class so it is placed before smaller jobs")

    # ------------------------------------------------------------------
    # The search
    # ------------------------------------------------------------------

    def _best_fit(self, view: View, cands: list[Domain], k: int) -> Domain | None:
        """The tightest domain with at least k free GPUs.

        Key, in order: free GPUs of the domain itself and of its enclosing
        NVLink domain (the other way round while `protect_nvlink`), of each
        enclosing domain inside out; on a node, the score of the GPU set it
        would give; then the name (or seeded tie-break).  Computed in stages
        because most candidates lose on the first one.
        """
        free, nv, big = view.free, self._nv, self._big
        protect = self.protect_nvlink
        best_p = -1
        ties: list[Domain] = []
        for d in cands:
            i = d.id
            f = free[i]
            if f < k:
                continue
            p = free[nv[i]] * big + f if protect else f * big + free[nv[i]]
            if p < best_p or best_p < 0:
                best_p, ties = p, [d]
            elif p == best_p:
                ties.append(d)
        if len(ties) > 1 and ties[0].node is not None and self.demand:
            # among equal fits, the node whose GPUs fewer pending pinned intents can use: an unpinned
            # job must not take the only node of a scarce product while another node is as good
            kinds = {(d.node.product, d.node.memory): d.node for d in ties if d.node is not None}
            if len(kinds) > 1:
                wanted = {kind: self._wanted(n) for kind, n in kinds.items()}
                least_wanted = min(wanted.values())
                ties = [d for d in ties if d.node is not None
                        and wanted[(d.node.product, d.node.memory)] == least_wanted]
        if len(ties) > 1:
            # Enclosing domains with one child have the candidate's own free count (equal among
            # ties); from the first one with several children up, candidates below the same one
            # share every domain: rank each such branch once, not each candidate.
            up, branch = self._up, self._branch
            groups = {branch[d.id] for d in ties}
            if len(groups) > 1:
                own = free[ties[0].id]
                outer = {g: [own] * g[0] + ([free[g[1]]] + [free[b] for b in up[g[1]]] if g[1] >= 0 else [])
                         for g in groups}
                least = min(outer.values())
                ties = [d for d in ties if outer[branch[d.id]] == least]
        if len(ties) > 1 and ties[0].node is not None:
            choose = self.c.chooser.choose
            scores = {d.id: choose(d.node.table, d.node.free, k).score for d in ties if d.node is not None}
            most = max(scores.values())
            ties = [d for d in ties if scores[d.id] == most]
        return min(ties, key=lambda d: d.tie) if ties else None

    def _least_outer(self, branches: set[tuple[int, int]], free: list[int], own: int) -> set[tuple[int, int]]:
        """The branches whose enclosing domains have the fewest free GPUs, inside out (the
        key `_best_fit` builds per branch: `own` once per single-child domain, then each
        enclosing domain from the branch up).  When every branch has as many single-child
        domains and sits at the same depth the keys line up level by level, so they are
        compared one level at a time and most branches drop out at the first."""
        up, domains = self._up, self.c.domains
        shapes = {(g[0], domains[g[1]].depth if g[1] >= 0 else -1) for g in branches}
        if len(shapes) == 1 and next(iter(shapes))[1] >= 0:
            cands = list(branches)
            m = min(free[g[1]] for g in cands)
            cands = [g for g in cands if free[g[1]] == m]
            for level in range(len(up[cands[0][1]])):
                if len(cands) == 1:
                    break
                m = min(free[up[g[1]][level]] for g in cands)
                cands = [g for g in cands if free[up[g[1]][level]] == m]
            return set(cands)
        outer = {g: [own] * g[0] + ([free[g[1]]] + [free[b] for b in up[g[1]]] if g[1] >= 0 else [])
                 for g in branches}
        least = min(outer.values())
        return {g for g, key in outer.items() if key == least}

    def _wanted(self, node: NodeState) -> int:
        kind = (node.product, node.memory)
        found = self._wanted_kind.get(kind)
        if found is None:
            found = self._wanted_kind[kind] = sum(n for flt, n in self.demand.items() if n and flt.admits(node))
        return found

    def add_demand(self, flt: Filter, delta: int) -> None:
        """A pending intent restricted to some nodes appears (+1) or is settled (-1)."""
        self.demand[flt] = self.demand.get(flt, 0) + delta
        self._wanted_kind.clear()

    def search(self, view: View, k: int, limit: int) -> Domain | None:
        found = self._leaf_fit(view, k)
        if found is not None:
            return found
        # no node has k free GPUs, so no domain with a single child does either
        for depth in range(self.c.leaf_depth - 1, limit - 1, -1):
            found = self._best_fit(view, self.c.branching[depth], k)
            if found is not None:
                return found
        return None

    def _leaf_fit(self, view: View, k: int) -> Domain | None:
        """`_best_fit` over the nodes with at least k free GPUs, by groups of nodes.

        Plain best fit ranks by the node's free GPUs first, so only the first non-empty
        bucket from k up can win.  While multi-node NVLink domains are protected, the
        enclosing NVLink domain's free GPUs rank first: for a node alone in its NVLink
        domain that is its own count (again only the first bucket), for a node of a shared
        domain it is the domain's, so every such node from k up competes.  Nodes of one
        group (`cluster.Group`) rank alike on every key before the GPU-set score, so the
        keys are computed once per group and only the winning groups' nodes are scored:
        the same choice as `_best_fit` over every candidate node.
        """
        free, big, groups = view.free, self._big, self.c.groups
        solo = min((f for f in view.buckets if f >= k), default=None)
        shared = sorted(f for f in view.shared if f >= k)
        protect = self.protect_nvlink
        ties = self._indexed_ties(view, k, solo, shared) if view.index is not None and solo is not None else None
        if ties is None:
            sources: list[tuple[int, dict[int, set[int]]]] = []
            if not protect:
                first = min([f for f in (solo, *shared[:1]) if f is not None], default=None)
                if first is None:
                    return None
                sources = [(first, b[first]) for b in (view.buckets, view.shared) if first in b]
            else:
                sources = (([(solo, view.buckets[solo])] if solo is not None else [])
                           + [(f, view.shared[f]) for f in shared])
            best_p = -1
            ties = []
            for f, bucket in sources:
                for gid, leaves in bucket.items():
                    nv = groups[gid].nvlink
                    nvf = free[nv] if nv >= 0 else f
                    p = nvf * big + f if protect else f * big + nvf
                    if p < best_p or best_p < 0:
                        best_p, ties = p, [(gid, leaves)]
                    elif p == best_p:
                        ties.append((gid, leaves))
        if not ties:
            return None
        if len(ties) > 1 and self.demand:
            kinds = {groups[gid].kind for gid, _ in ties}
            if len(kinds) > 1:
                nodes = self.c.domains
                wanted = {kind: self._wanted(next(n for gid, ls in ties if groups[gid].kind == kind
                                                  for n in (nodes[min(ls)].node,) if n is not None))
                          for kind in kinds}
                least_wanted = min(wanted.values())
                ties = [(gid, ls) for gid, ls in ties if wanted[groups[gid].kind] == least_wanted]
        branches = {groups[gid].branch for gid, _ in ties}
        if len(branches) > 1:
            best = self._least_outer(branches, free, free[next(iter(ties[0][1]))])
            ties = [(gid, ls) for gid, ls in ties if groups[gid].branch in best]
        domains = self.c.domains
        return self._best_node([domains[i] for _, ls in ties for i in ls], k)

    def _best_node(self, cands: list[Domain], k: int) -> Domain:
        """Among nodes that rank alike so far: the best GPU-set score, then the tie-break."""
        if len(cands) > 1:
            choose = self.c.chooser.choose
            scores = {d.id: choose(d.node.table, d.node.free, k).score for d in cands if d.node is not None}
            most = max(scores.values())
            cands = [d for d in cands if scores[d.id] == most]
        return min(cands, key=lambda d: d.tie)

    def _indexed_ties(self, view: View, k: int, solo: int, shared: list[int]
                      ) -> list[tuple[int, set[int]]] | None:
        """The groups `_leaf_fit`'s scan would find tied best, through the view's `BranchIndex`,
        in the scan's order (lone nodes first, then shared NVLink domains by free GPUs): the
        lone nodes all rank solo * big + solo and tie up to the branch key, so of them only the
        least-loaded branches of bucket `solo` can win (they come off the index instead of a
        scan of every group); a node of a shared NVLink domain with f >= k free ranks nvf * big
        + f (protected) or f * big + nvf (then only f = solo competes), with f <= nvf: as well
        as the lone nodes or better exactly when its domain has nvf <= solo free, so only the
        nodes of the domains with k..solo free GPUs are looked at, fewest free first, up to the
        first count with one that ranks (the domain's count ranks before the node's).  None:
        the caller scans (plain best fit where a shared node has fewer free GPUs, or an empty
        index)."""
        free, groups, big = view.free, self.c.groups, self._big
        protect = self.protect_nvlink
        if not protect and shared and shared[0] < solo:
            return None                         # plain best fit: a node with fewer free GPUs wins
        index = view.index
        assert index is not None
        gids = index.least(solo)
        if not gids:
            return None
        group_of = self.c.group_of
        rivals: dict[tuple[int, int], int] = {}     # (free GPUs, group) in a shared domain -> rank
        for leaves in index.nodes_in_nvlink_by_free(k, solo):
            for leaf in leaves:
                f = free[leaf]
                if f >= k and (protect or f == solo):
                    gid = group_of[leaf]
                    nvf = free[groups[gid].nvlink]
                    rivals[(f, gid)] = nvf * big + f if protect else f * big + nvf
            if rivals:
                break                           # a domain with more free GPUs ranks after these
        lone = solo * big + solo
        best = min(rivals.values(), default=lone)
        bucket = view.buckets[solo]
        ties = [(g, bucket[g]) for g in gids] if best == lone else []
        return ties + [(g, view.shared[f][g]) for (f, g), p in sorted(rivals.items()) if p == best]

    def distribute(self, view: View, d: Domain, k: int) -> list[tuple[NodeState, int]]:
        """Split k GPUs over the nodes of d: whole children largest first, the rest best-fit."""
        if d.node is not None:
            return [(d.node, k)]
        free = view.free
        kids = [c for c in d.children if free[c.id] > 0]
        out: list[tuple[NodeState, int]] = []
        while k > 0:
            fit = self._best_fit(view, kids, k)
            if fit is not None:
                return out + self.distribute(view, fit, k)
            largest = min(kids, key=lambda c: (-free[c.id], c.tie))
            kids.remove(largest)
            out += self.distribute(view, largest, free[largest.id])
            k -= free[largest.id]
        return out

    # ------------------------------------------------------------------
    # Committing
    # ------------------------------------------------------------------

    def place(self, req: Request, view: View, limit: int) -> Placed | None:
        """Allocate the gang (all of it) or nothing."""
        found = self.locate(req, view, limit)
        return None if found is None else self.commit(*found)

    def locate(self, req: Request, view: View, limit: int) -> tuple[Domain, list[tuple[NodeState, int]]] | None:
        """Where the gang would go (its domain, and GPUs per node), taking nothing yet."""
        domain = self.search(view, req.count, limit)
        if domain is None:
            return None
        return domain, self.distribute(view, domain, req.count)

    def commit(self, domain: Domain, shares: list[tuple[NodeState, int]]) -> Placed:
        """Take the GPUs `locate` found: on each node the best set of that many."""
        chosen: list[tuple[NodeState, Choice]] = []
        for node, n in shares:
            choice = self.c.chooser.choose(node.table, node.free, n)
            chosen.append((node, choice))
        for node, choice in chosen:
            self.c.take(node, choice.gpus)
        chosen.sort(key=lambda nc: nc[0].spec.name)
        allocs = tuple(NodeAllocation(n.spec.name, ch.gpus, ch.numa_nodes, ch.nics, ch.link)
                       for n, ch in chosen)
        leaves = [n.leaf for n, _ in chosen]
        if len(leaves) == 1:
            domains = self._domains_of(leaves[0])
        else:
            shared = []
            for depth, level in enumerate(self.c.levels, start=1):
                ds = {leaf.at_depth(depth) for leaf in leaves}
                shared.append((level, next(iter(ds)).name if len(ds) == 1 else None))
            domains = tuple(shared)
        nv = {self._nv[leaf.id] for leaf in leaves}
        if len(nv) > 1:
            interconnect = "network"
        elif len(chosen) > 1 or all(ch.nvlink for _, ch in chosen):
            interconnect = "nvlink"
        else:
            interconnect = "pcie"
        return Placed(allocs, domains, interconnect, domain.depth)

    def _domains_of(self, leaf: Domain) -> tuple[tuple[str, str | None], ...]:
        """(level, domain name) at every level for a gang on one node: the same for every gang
        placed there, so named once per node (most gangs are on one node)."""
        found = self._leaf_domains.get(leaf.id)
        if found is None:
            found = self._leaf_domains[leaf.id] = tuple(
                (level, leaf.at_depth(depth).name) for depth, level in enumerate(self.c.levels, start=1))
        return found

    def level_name(self, depth: int) -> str:
        return ROOT_LEVEL if depth == 0 else self.c.levels[depth - 1]


def _bytes(value: Decimal) -> str:
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    gib = value / 2**30
    return f"{gib:.1f}Gi" if value >= 2**30 else f"{value}"
