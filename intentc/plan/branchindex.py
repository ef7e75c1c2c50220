"""Which racks can hold a one-node job, without looking at every rack.

The one-node best fit (`Placer._leaf_fit`) takes the nodes with the fewest
free GPUs that still hold the job (a bucket of `View.buckets`), and among
them prefers the node whose enclosing domains have the fewest free GPUs,
innermost first: first the *branch* (the first enclosing domain with
several children, usually the rack).  Scanning every group of the bucket
for that costs one step per rack per placement, which made planning grow
with racks × jobs.

This index keeps, per free count f, a heap of (branch's free GPUs, branch)
over the branches that have a node with f free GPUs, so the least-loaded
branches of a bucket come off the top.  Entries go stale when a branch's
free count or its nodes' buckets change; instead of finding and moving the
old entries, a fresh one is pushed for every bucket the branch is in, and
stale ones are dropped when they reach the top (lazy deletion).  Changes
are only logged; a bucket's heap takes the branches changed since it was
last asked when it is asked.  A heap that grows well past its live entries
is rebuilt.

It is exact only where every node it covers ranks alike up to the branch
key: nodes alone in their NVLink domain, one kind of GPU, every branch at
the same depth with as many single-child domains above the node
(`Cluster` builds it only for such views; others keep the plain scan).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator


class BranchIndex:
    """Per view: free count -> branches with a node that has it, least free branch first."""

    def __init__(self, free: list[int], group_of_branch: dict[int, int]) -> None:
        self.free = free                            # the view's free GPUs per domain id (shared list)
        self.group_of_branch = group_of_branch      # branch domain id -> the one group of that branch
        self.presence: dict[int, dict[int, int]] = {b: {} for b in group_of_branch}   # branch -> f -> nodes
        self.heaps: dict[int, list[tuple[int, int]]] = {}
        self.log: list[int] = []                    # branches changed, in order
        self.synced: dict[int, int] = {}            # bucket -> how much of the log its heap has seen
        self.over: dict[int, list[int]] = {}        # leaf domain id -> the branches above it (Cluster fills it)
        # shared NVLink domains (of nodes the index does not cover) by their free GPUs: a node
        # there ranks ahead of the covered ones only if its domain has few free GPUs
        self.nvlink_by_free: dict[int, set[int]] = {}
        self.nvlink_leaves: dict[int, list[int]] = {}   # shared NVLink domain -> its nodes' leaf ids

    def file_nvlink(self, nvlink: int, old: int | None, new: int) -> None:
        """A shared NVLink domain's free count went from `old` (None: new here) to `new`."""
        if old is not None:
            ids = self.nvlink_by_free[old]
            ids.discard(nvlink)
            if not ids:
                del self.nvlink_by_free[old]
        self.nvlink_by_free.setdefault(new, set()).add(nvlink)

    def nodes_in_nvlink_between(self, low: int, high: int) -> Iterator[int]:
        """The leaf ids of the nodes in shared NVLink domains that have between low and high
        free GPUs (the few that can rank with a covered node, without a scan of them all)."""
        for leaves in self.nodes_in_nvlink_by_free(low, high):
            yield from leaves

    def nodes_in_nvlink_by_free(self, low: int, high: int) -> Iterator[list[int]]:
        """The same nodes, one list per free count of their domain, fewest free first (a
        search that ranks by the domain's free GPUs can stop at the first list that has one)."""
        by_free, leaves = self.nvlink_by_free, self.nvlink_leaves
        for f in range(low, high + 1):
            ids = by_free.get(f)
            if ids:
                yield [leaf for nv in ids for leaf in leaves[nv]]

    def add(self, branch: int, f: int, delta: int) -> None:
        """`delta` nodes of `branch` now have (+1) or no longer have (-1) f free GPUs."""
        counts = self.presence[branch]
        n = counts.get(f, 0) + delta
        if n:
            counts[f] = n
        else:
            del counts[f]

    def move(self, branch: int, old: int, new: int) -> None:
        """A node of `branch` went from old to new free GPUs."""
        counts = self.presence[branch]
        n = counts[old] - 1
        if n:
            counts[old] = n
        else:
            del counts[old]
        counts[new] = counts.get(new, 0) + 1

    def touch(self, branch: int) -> None:
        """The branch's free count or buckets changed: each bucket's heap files it afresh when
        it is next asked (`least`), so a change costs one append however many buckets it is in."""
        self.log.append(branch)

    def _sync(self, f: int) -> list[tuple[int, int]]:
        """Bring bucket f's heap up to date with the branches changed since it was last asked."""
        heap = self.heaps.setdefault(f, [])
        start = self.synced.get(f, 0)
        log = self.log
        if start < len(log):
            free, presence = self.free, self.presence
            for b in set(log[start:]):
                if f in presence[b]:
                    heapq.heappush(heap, (free[b], b))
            self.synced[f] = len(log)
            if len(heap) > 4 * len(presence) + 64:
                self._rebuild(f)
                heap = self.heaps[f]
        return heap

    def _rebuild(self, f: int) -> None:
        free = self.free
        heap = [(free[b], b) for b, counts in self.presence.items() if f in counts]
        heapq.heapify(heap)
        self.heaps[f] = heap

    def least(self, f: int) -> list[int]:
        """The groups of the branches with the fewest free GPUs among those with a node of f free."""
        heap = self._sync(f)
        free, presence = self.free, self.presence
        while heap:
            bf, b = heap[0]
            if free[b] == bf and f in presence[b]:
                break
            heapq.heappop(heap)
        if not heap:
            return []
        m = heap[0][0]
        found: dict[int, None] = {}                 # in the order found; a dict, as many racks can tie
        while heap and heap[0][0] == m:
            _, b = heapq.heappop(heap)
            if free[b] == m and f in presence[b]:
                found[b] = None
        for b in found:
            heapq.heappush(heap, (m, b))
        return [self.group_of_branch[b] for b in found]
