"""The cluster as a tree of domains, with free-GPU counts kept up to date.

The topology's levels (outermost first, e.g. zone > rack > nvlink > node)
become a tree rooted at the whole cluster, as Kueue's topology-aware
scheduling builds it.  A domain is identified by its *path* (its label at
every level down to it), so a rack label reused in two zones names two
racks, and sharing a domain always means sharing every enclosing one.

A node without a label at some level is a domain of its own there, named
after the node: an HGX box with no `nvidia.com/gpu.clique` label is its own
NVLink domain, which is exactly what it is.  A scope whose level the
topology does not declare maps to the next declared level inside it (down
to the node), so a required `within` is never loosened by omission.

Different jobs see different parts of the cluster (a GPU product, a minimum
GPU memory); each such filter gets a `View` with its own free and capacity
counts per domain, updated on every allocation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from intentc import ir
from intentc.ir.quantity import parse_quantity
from intentc.plan.branchindex import BranchIndex
from intentc.plan.gpuset import GpuChooser
from intentc.topology.matrix import GpuMatrix
from intentc.topology.products import product_key

ROOT_LEVEL = "cluster"

# GPU memory as nodes report it (`nvidia.com/gpu.memory`, MiB after driver and
# ECC reservations) sits a little under the nominal size: an H100-80GB reports
# 81559Mi, less than 80Gi.  A request is met by a node with at least this share
# of it, so `memory: 80Gi` still matches the card everybody calls 80 GB.
MEMORY_SLACK = Decimal("0.97")
SCOPE_ORDER = ("node", "nvlink", "rack", "zone")   # innermost first (ir.Scope)


def tiebreak(name: str, seed: int) -> str:
    """Seed 0 breaks exact ties by name; another seed permutes them, reproducibly."""
    if seed == 0:
        return name
    return hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).hexdigest() + name


@dataclass(eq=False)
class Domain:
    id: int
    level: str
    name: str
    depth: int
    parent: Domain | None
    tie: str
    children: list[Domain] = field(default_factory=list)
    node: NodeState | None = None

    def ancestors(self) -> list[Domain]:
        """Self first, then each enclosing domain up to the root."""
        out: list[Domain] = []
        d: Domain | None = self
        while d is not None:
            out.append(d)
            d = d.parent
        return out

    def at_depth(self, depth: int) -> Domain:
        d = self
        while d.depth > depth and d.parent is not None:
            d = d.parent
        return d


@dataclass(eq=False)
class NodeState:
    spec: ir.TopologyNode
    leaf: Domain
    capacity: int
    free: int                   # bit mask of free GPU indices
    table: int                  # GpuChooser table id
    product: str | None         # `products.product_key`: GFD's long name and the intents' short one alike
    memory: Decimal | None      # per GPU, bytes

    @property
    def free_count(self) -> int:
        return self.free.bit_count()


@dataclass(frozen=True)
class Filter:
    product: str | None         # `products.product_key`
    memory: Decimal | None

    def admits(self, n: NodeState) -> bool:
        if n.capacity <= 0:
            return False
        if self.product is not None and n.product != self.product:
            return False
        return self.memory is None or (n.memory is not None and n.memory >= self.memory * MEMORY_SLACK)


@dataclass(frozen=True)
class Group:
    """What nodes of one group share, so a best fit ranks them alike up to the GPU-set score:
    `branch` (how many single-child domains enclose the node, then the first enclosing domain
    with several children, or -1), the multi-node NVLink domain (-1: the node is alone in its
    own, whose free GPUs are the node's), and the kind (product, memory per GPU)."""

    branch: tuple[int, int]
    nvlink: int
    kind: tuple[str | None, Decimal | None]


@dataclass(eq=False)
class View:
    """Free and total GPUs per domain, counting only the nodes a filter admits."""

    filter: Filter
    eligible: list[bool]        # per node index
    free: list[int]             # per domain id
    cap: list[int]              # per domain id
    # eligible nodes by free GPUs, then by group (free count -> group id -> leaf domain ids; only
    # non-empty entries): the best fit for k GPUs on one node is in the first bucket from k up,
    # and nodes of one group rank alike until the GPU-set score (`Cluster.groups`), so the
    # search looks at groups (about one per rack), never at every node.  Nodes in a multi-node
    # NVLink domain are kept apart in `shared`: while such domains are protected they rank by
    # the domain's free GPUs, not their own.
    buckets: dict[int, dict[int, set[int]]] = field(default_factory=dict)
    shared: dict[int, dict[int, set[int]]] = field(default_factory=dict)
    # the least-loaded branches per bucket (`branchindex.py`), where the view's nodes outside
    # shared NVLink domains all rank alike up to the branch key; None: the search scans groups
    index: BranchIndex | None = None


class Cluster:
    """Mutable placement state for one plan run."""

    def __init__(self, topology: ir.Topology, matrix_of: Callable[[ir.TopologyNode], GpuMatrix],
                 seed: int = 0) -> None:
        self.topology = topology
        outer = [lvl for lvl in topology.levels if lvl != "node"]
        self.levels: tuple[str, ...] = (*outer, "node")          # outermost first
        self.chooser = GpuChooser()
        self.domains: list[Domain] = []
        self.root = self._domain(ROOT_LEVEL, topology.name or ROOT_LEVEL, 0, None, seed)
        self.nodes: list[NodeState] = []
        index: dict[tuple[str, ...], Domain] = {}
        seen: set[str] = set()
        for spec in sorted(topology.nodes, key=lambda n: n.name):
            if spec.name in seen:
                continue
            seen.add(spec.name)
            parent = self.root
            path: tuple[str, ...] = ()
            for depth, level in enumerate(outer, start=1):
                label = spec.domain(level) or spec.name
                path = (*path, label if spec.domain(level) else "\0" + spec.name)
                d = index.get(path)
                if d is None:
                    d = index[path] = self._domain(level, label, depth, parent, seed)
                parent = d
            leaf = self._domain("node", spec.name, len(self.levels), parent, seed)
            count = max(spec.gpu_count, 0)
            table = self.chooser.table_id(matrix_of(spec), count)
            memory = parse_quantity(spec.gpu_memory) if spec.gpu_memory else None
            state = NodeState(spec, leaf, count, (1 << count) - 1, table,
                              product_key(spec.gpu_product) if spec.gpu_product else None, memory)
            leaf.node = state
            self.nodes.append(state)
        self.by_depth: list[list[Domain]] = [[] for _ in range(len(self.levels) + 1)]
        for d in self.domains:
            self.by_depth[d.depth].append(d)
        self.leaf_depth = len(self.levels)
        self.nvlink_depth = self.depth_of("nvlink")
        self._shared = {n.leaf.id: self.in_shared_nvlink(n) for n in self.nodes}
        # per node's leaf id: the ids of its domains, leaf first (every take and release updates them)
        self._chain = {n.leaf.id: [d.id for d in n.leaf.ancestors()] for n in self.nodes}
        # nodes that rank alike in a best fit up to the GPU-set score: same enclosing branch,
        # same multi-node NVLink domain, same kind (see `Group`)
        self.groups: list[Group] = []
        self.group_of: dict[int, int] = {}
        self._group_ids: dict[Group, int] = {}
        for n in self.nodes:
            self.group_of[n.leaf.id] = self._group(n)
        # domains with several children, per depth: a domain with one child has its child's free
        # GPUs, so a search that found no child with room needs not look at it
        self.branching: list[list[Domain]] = [[d for d in ds if len(d.children) > 1] for ds in self.by_depth]
        self._views: dict[Filter, View] = {}
        self._views_of: dict[int, list[View]] = {}     # leaf id -> the views that admit its node
        self.version = 0            # bumped on every take / release (lets callers cache failed searches)
        self.named: dict[str, NodeState] = {n.spec.name: n for n in self.nodes}    # read only
        self.free_gpus = sum(n.free_count for n in self.nodes)     # on every node, whatever its kind

    def _group(self, node: NodeState) -> int:
        single, a = 0, node.leaf.parent
        while a is not None and len(a.children) == 1:
            single, a = single + 1, a.parent
        nv = node.leaf.at_depth(self.nvlink_depth)
        while len(nv.children) == 1:
            nv = nv.children[0]
        key = Group((single, a.id if a is not None else -1), nv.id if nv.node is None else -1,
                    (node.product, node.memory))
        found = self._group_ids.get(key)
        if found is None:
            found = self._group_ids[key] = len(self.groups)
            self.groups.append(key)
        return found

    def unlink(self) -> None:
        """Break the domain tree's reference cycles (parent <-> children, leaf <-> node), so
        that reference counting frees it with the cluster; the cluster is unusable afterwards.

        For a cluster kept beyond one plan (the Reloader's `PlanIndex`): the daemon freezes
        its long-lived heap (`gc.freeze`) after a load and after each background full plan,
        and a frozen cycle is never collected, so every index replaced after a freeze kept
        its tree for good (a tree of the whole cluster per full plan swapped in; found by
        the 100k soak, benchmarks/bench_soak_100k.py)."""
        for d in self.domains:
            d.children = []
            d.node = None

    def _domain(self, level: str, name: str, depth: int, parent: Domain | None, seed: int) -> Domain:
        d = Domain(len(self.domains), level, name, depth, parent, tiebreak(name, seed))
        self.domains.append(d)
        if parent is not None:
            parent.children.append(d)
        return d

    # ------------------------------------------------------------------
    # Levels and scopes
    # ------------------------------------------------------------------

    def _level_depth(self, scope: str) -> int | None:
        for depth, level in enumerate(self.levels, start=1):
            if level == scope or level.startswith(scope + "-"):
                return depth
        return None

    def depth_of(self, scope: str) -> int:
        """Tree depth of a placement scope; an undeclared level maps to the next one inside."""
        if scope not in SCOPE_ORDER:
            return 0
        for inner in reversed(SCOPE_ORDER[:SCOPE_ORDER.index(scope) + 1]):
            depth = self._level_depth(inner)
            if depth is not None:
                return depth
        return self.leaf_depth

    # ------------------------------------------------------------------
    # Views and allocation
    # ------------------------------------------------------------------

    def view(self, flt: Filter) -> View:
        found = self._views.get(flt)
        if found is None:
            eligible = [flt.admits(n) for n in self.nodes]
            free = [0] * len(self.domains)
            cap = [0] * len(self.domains)
            for n, ok in zip(self.nodes, eligible):
                if ok:
                    for d in n.leaf.ancestors():
                        free[d.id] += n.free_count
                        cap[d.id] += n.capacity
            found = self._views[flt] = View(flt, eligible, free, cap)
            for n, ok in zip(self.nodes, eligible):
                if ok:
                    _file(self._bucket(found, n), n.free_count, self.group_of[n.leaf.id], n.leaf.id)
            found.index = self._branch_index(found)
            self._views_of.clear()              # `_count` files each node under the views admitting it
        return found

    def _branch_index(self, view: View) -> BranchIndex | None:
        """The view's `BranchIndex`, when its nodes outside shared NVLink domains all have one
        kind, no NVLink domain shared further up, a branch, and the same shape above them (so
        a branch holds one group of them, and they rank alike up to the branch key)."""
        solo = [n for n, ok in zip(self.nodes, view.eligible) if ok and not self._shared[n.leaf.id]]
        groups = {self.group_of[n.leaf.id] for n in solo}
        shapes = {(self.groups[g].branch[0], self.domains[self.groups[g].branch[1]].depth
                   if self.groups[g].branch[1] >= 0 else -1) for g in groups}
        if not solo or len({self.groups[g].kind for g in groups}) != 1 or len(shapes) != 1 \
                or next(iter(shapes))[1] < 0 or any(self.groups[g].nvlink >= 0 for g in groups):
            return None
        index = BranchIndex(view.free, {self.groups[g].branch[1]: g for g in groups})
        for n in solo:
            index.add(self.groups[self.group_of[n.leaf.id]].branch[1], n.free_count, 1)
        for b in index.presence:
            index.touch(b)
        for n, ok in zip(self.nodes, view.eligible):
            nv = self.groups[self.group_of[n.leaf.id]].nvlink
            if ok and self._shared[n.leaf.id] and nv >= 0:
                index.nvlink_leaves.setdefault(nv, []).append(n.leaf.id)
        for nv in sorted(index.nvlink_leaves):
            index.file_nvlink(nv, None, view.free[nv])
        return index

    def in_shared_nvlink(self, node: NodeState) -> bool:
        """True if the node's NVLink domain holds other nodes too (an NVL72-style rack)."""
        if self.nvlink_depth >= self.leaf_depth:
            return False
        return len(node.leaf.at_depth(self.nvlink_depth).children) > 1

    def _bucket(self, view: View, node: NodeState) -> dict[int, dict[int, set[int]]]:
        return view.shared if self._shared[node.leaf.id] else view.buckets

    def take(self, node: NodeState, gpus: tuple[int, ...]) -> None:
        mask = _mask(gpus)
        if node.free & mask != mask:
            raise ValueError(f"GPUs {gpus} of {node.spec.name} are not all free")
        node.free &= ~mask
        self.free_gpus -= len(gpus)
        self._count(node, -len(gpus))

    def release(self, node: NodeState, gpus: tuple[int, ...]) -> None:
        """Undo `take` (used when the planner moves a job to make room for another)."""
        mask = _mask(gpus)
        if node.free & mask:
            raise ValueError(f"GPUs {gpus} of {node.spec.name} are not all taken")
        node.free |= mask
        self.free_gpus += len(gpus)
        self._count(node, len(gpus))

    def _count(self, node: NodeState, delta: int) -> None:
        self.version += 1
        leaf = node.leaf.id
        views = self._views_of.get(leaf)
        if views is None:
            views = self._views_of[leaf] = [v for v in self._views.values() if v.filter.admits(node)]
        if not views:
            return
        chain = self._chain[leaf]
        group = self.group_of[leaf]
        shared = self._shared[leaf]
        for view in views:
            free = view.free
            old = free[leaf]
            for d in chain:
                free[d] += delta
            buckets = view.shared if shared else view.buckets
            # out of bucket old, into old + delta (as `_file`, inlined: two calls per view per take)
            groups = buckets[old]
            leaves = groups[group]
            leaves.discard(leaf)
            if not leaves:
                del groups[group]
                if not groups:
                    del buckets[old]
            buckets.setdefault(old + delta, {}).setdefault(group, set()).add(leaf)
            index = view.index
            if index is not None:
                if not shared:
                    index.move(self.groups[group].branch[1], old, old + delta)
                else:
                    nv = self.groups[group].nvlink
                    if nv >= 0:
                        index.file_nvlink(nv, free[nv] - delta, free[nv])
                over = index.over.get(leaf)
                if over is None:
                    over = index.over[leaf] = [d for d in chain if d in index.presence]
                index.log += over


def _file(buckets: dict[int, dict[int, set[int]]], free: int, group: int, leaf: int) -> None:
    buckets.setdefault(free, {}).setdefault(group, set()).add(leaf)


def _mask(gpus: tuple[int, ...]) -> int:
    mask = 0
    for g in gpus:
        mask |= 1 << g
    return mask
