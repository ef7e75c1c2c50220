"""The GPU link matrix inside one node, as `nvidia-smi topo -m` describes it.

Contract between the parser (`intentc.topology.nvsmi`) and the planner:
the planner only asks for link types between GPU pairs, each GPU's NUMA
node and the NICs nearest a GPU.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Link(enum.Enum):
    """Connection types from the `nvidia-smi topo -m` legend, best first."""

    NVLINK = "NV"       # NV# — a bonded set of # NVLinks
    PIX = "PIX"         # at most a single PCIe bridge
    PXB = "PXB"         # multiple PCIe bridges, no host bridge
    PHB = "PHB"         # through a PCIe host bridge (the CPU)
    NODE = "NODE"       # across host bridges within one NUMA node
    SYS = "SYS"         # across the SMP interconnect between NUMA nodes

    @property
    def rank(self) -> int:
        """Lower is better; used to score GPU sets."""
        return list(Link).index(self)


@dataclass(frozen=True)
class LinkInfo:
    link: Link
    nvlinks: int = 0    # the # in NV#, 0 for non-NVLink

    def __str__(self) -> str:
        return f"NV{self.nvlinks}" if self.link is Link.NVLINK else self.link.value


@dataclass(frozen=True)
class GpuInfo:
    index: int
    numa_node: int | None
    cpu_affinity: str | None            # e.g. "0-47,96-143"


@dataclass(frozen=True)
class GpuMatrix:
    gpus: tuple[GpuInfo, ...]
    links: tuple[tuple[int, int, LinkInfo], ...]      # (i, j, link) for i < j
    nics: tuple[str, ...] = ()
    nic_links: tuple[tuple[str, int, LinkInfo], ...] = ()  # (nic, gpu, link)

    def link(self, i: int, j: int) -> LinkInfo:
        a, b = min(i, j), max(i, j)
        for x, y, info in self.links:
            if x == a and y == b:
                return info
        return LinkInfo(Link.SYS)
