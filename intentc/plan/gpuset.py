"""Choosing *which* GPUs of a node a job gets, from the node's link matrix.

"The first free N" is what a device plugin does, and it is how a 4-GPU job
ends up split over two NUMA nodes with its all-reduce crossing the SMP
link.  Here every candidate set is scored, best first, by:

1. its weakest pair link (the bottleneck of a ring all-reduce);
2. the sum of its pair links (total NVLink connectivity);
3. how few NUMA nodes it touches (host memory and CPU affinity);
4. how few distinct nearest NICs it touches (GPUDirect RDMA locality);
5. how few NUMA nodes the GPUs left free touch (keep the rest aligned for
   the next job);
6. the lowest GPU indices (a stable tie-break).

Nodes have at most 8 GPUs in practice, so the search is exhaustive
(C(8,k) <= 70 sets); bigger nodes fall back to a greedy growth from each
free GPU.  Results are cached per (matrix, free set, k): a large cluster
has a handful of distinct matrices and free sets.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from intentc.topology.matrix import GpuMatrix, Link, LinkInfo
from intentc.topology.nvsmi import nearest_nics

# Above this many candidate sets, grow sets greedily instead of enumerating.
MAX_EXHAUSTIVE = 5000

SELF_LINK = "X"   # nvidia-smi's notation for a GPU with itself: a one-GPU set has no pair


def link_value(info: LinkInfo) -> int:
    """Higher is better: any NVLink beats any PCIe path, more bonded links beat fewer."""
    if info.link is Link.NVLINK:
        return 1000 + info.nvlinks
    return (len(Link) - info.link.rank) * 10


@dataclass(frozen=True)
class NodeLinks:
    """A matrix flattened into lookup tables for one node's GPU count."""

    size: int
    value: tuple[tuple[int, ...], ...]          # value[i][j], link_value of the pair
    info: tuple[tuple[LinkInfo, ...], ...]
    numa: tuple[int | None, ...]
    nearest_nics: tuple[tuple[str, ...], ...]   # per GPU, the NICs with its best link
    nvlinked: tuple[bool, ...]                  # per GPU: has an NVLink to some other GPU

    @classmethod
    def of(cls, matrix: GpuMatrix, size: int) -> NodeLinks:
        info = tuple(tuple(matrix.link(i, j) if i != j else LinkInfo(Link.NVLINK, 0)
                           for j in range(size)) for i in range(size))
        value = tuple(tuple(link_value(x) for x in row) for row in info)
        by_index = {g.index: g.numa_node for g in matrix.gpus}
        numa = tuple(by_index.get(i) for i in range(size))
        nics = [tuple(sorted(nearest_nics(matrix, i)[0])) for i in range(size)]
        nvlinked = tuple(any(info[i][j].link is Link.NVLINK for j in range(size) if j != i)
                         for i in range(size))
        return cls(size, value, info, numa, tuple(nics), nvlinked)


@dataclass(frozen=True)
class Choice:
    gpus: tuple[int, ...]
    numa_nodes: tuple[int, ...]
    nics: tuple[str, ...]
    link: str                   # weakest link in the set, or "X" for a single GPU
    nvlink: bool                # the set talks over NVLink (single GPU: the GPU has NVLink)
    score: tuple[int, ...]      # higher is better (see the module docstring)


def _bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


class GpuChooser:
    """Scores and caches GPU sets for the nodes of one plan."""

    def __init__(self) -> None:
        self._tables: list[NodeLinks] = []
        self._ids: dict[tuple[GpuMatrix, int], int] = {}
        self._cache: dict[tuple[int, int, int], Choice] = {}
        self._same: dict[tuple[int, int], int] = {}
        self._keep: list[GpuMatrix] = []

    def table_id(self, matrix: GpuMatrix, size: int) -> int:
        """Equal matrices share one table (and so one cache).

        Hashing a matrix walks all its links, so the same object (the loader
        shares one per `nvidia-smi` file) is looked up by identity first.
        """
        same = self._same.get((id(matrix), size))
        if same is not None:
            return same
        key = (matrix, size)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._tables)
            self._tables.append(NodeLinks.of(matrix, size))
        self._same[(id(matrix), size)] = found
        self._keep.append(matrix)           # keeps id() unique while the chooser lives
        return found

    def choose(self, table: int, free: int, k: int) -> Choice:
        """The best `k` GPUs out of the `free` bit mask (which has at least k bits set)."""
        key = (table, free, k)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._best(self._tables[table], free, k)
        return found

    def _best(self, t: NodeLinks, free: int, k: int) -> Choice:
        idx = _bits(free)
        if len(idx) < k or k <= 0:
            raise ValueError(f"cannot choose {k} GPUs out of {len(idx)} free")
        n_sets = 1
        for i in range(k):
            n_sets = n_sets * (len(idx) - i) // (i + 1)
        if n_sets <= MAX_EXHAUSTIVE:
            candidates: list[tuple[int, ...]] = list(itertools.combinations(idx, k))
        else:
            candidates = [self._grow(t, idx, seed, k) for seed in idx]
        best = max(candidates, key=lambda s: (self._score(t, s, idx), [-g for g in s]))
        return self._describe(t, best, self._score(t, best, idx))

    @staticmethod
    def _grow(t: NodeLinks, idx: list[int], seed: int, k: int) -> tuple[int, ...]:
        chosen = [seed]
        rest = [g for g in idx if g != seed]
        while len(chosen) < k:
            nxt = max(rest, key=lambda g: (min(t.value[g][c] for c in chosen),
                                           sum(t.value[g][c] for c in chosen), -g))
            chosen.append(nxt)
            rest.remove(nxt)
        return tuple(sorted(chosen))

    @staticmethod
    def _score(t: NodeLinks, s: tuple[int, ...], free: list[int]) -> tuple[int, ...]:
        pairs = [t.value[a][b] for a, b in itertools.combinations(s, 2)]
        weakest = min(pairs) if pairs else 0
        numa = {t.numa[g] for g in s if t.numa[g] is not None}
        nics = {n for g in s for n in t.nearest_nics[g]}
        chosen = set(s)
        left_numa = {t.numa[g] for g in free if g not in chosen and t.numa[g] is not None}
        return (weakest, sum(pairs), -len(numa), -len(nics), -len(left_numa))

    @staticmethod
    def _describe(t: NodeLinks, s: tuple[int, ...], score: tuple[int, ...]) -> Choice:
        numa = tuple(sorted({n for g in s if (n := t.numa[g]) is not None}))
        nics = tuple(sorted({n for g in s for n in t.nearest_nics[g]}))
        if len(s) == 1:
            return Choice(s, numa, nics, SELF_LINK, t.nvlinked[s[0]], score)
        weakest = min(((a, b) for a, b in itertools.combinations(s, 2)),
                      key=lambda p: (t.value[p[0]][p[1]], p))
        info = t.info[weakest[0]][weakest[1]]
        return Choice(s, numa, nics, str(info), info.link is Link.NVLINK, score)
