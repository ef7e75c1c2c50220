"""NCCL settings that follow from where the planner put a gang.

NCCL picks transports by probing, but inside containers the probe often
sees less than the host does; pinning the P2P level to what the plan
measured (from `nvidia-smi topo -m`) and the IB HCAs to the NICs nearest
the chosen GPUs keeps collectives on the path the placement paid for.
Levels are NCCL's (LOC, NVL, PIX, PXB, PHB, SYS); the nvidia-smi `NODE`
link (host bridges within one NUMA node) is NCCL's `PHB` cut-off, and a
`SYS` link (across the SMP interconnect) disables P2P altogether.
"""

from __future__ import annotations

from typing import Sequence

from intentc.plan.model import NodeAllocation, Placement

# nvidia-smi link → NCCL_P2P_LEVEL; NV# handled by prefix.
_P2P_LEVEL = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB"}
_LINK_RANK = {"NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}


def _rank(link: str) -> int:
    if link.startswith("NV"):
        return _LINK_RANK["NV"]
    return _LINK_RANK.get(link, -1)


def weakest_link(allocations: Sequence[NodeAllocation]) -> str:
    """The worst intra-node link over the allocations that carry more than one
    GPU ("unknown" when the plan had no matrix for them)."""
    links = [a.link for a in allocations if len(a.gpus) > 1]
    known = [link for link in links if _rank(link) >= 0]
    if not known or len(known) != len(links):
        return "unknown"
    return max(known, key=_rank)


def nccl_env(placement: Placement, allocations: Sequence[NodeAllocation]) -> dict[str, str]:
    """Environment for the pods that run on `allocations` (a subset of the placement)."""
    env: dict[str, str] = {}
    if placement.gpu_count <= 1:
        return env
    link = weakest_link(allocations)
    if link.startswith("NV"):
        env["NCCL_P2P_LEVEL"] = "NVL"
    elif link in _P2P_LEVEL:
        env["NCCL_P2P_LEVEL"] = _P2P_LEVEL[link]
    elif link == "SYS":
        env["NCCL_P2P_DISABLE"] = "1"
    if len(placement.allocations) > 1 or placement.interconnect == "network":
        nics = sorted({nic for a in allocations for nic in a.nics})
        if nics:  # unknown NICs: leave the choice to NCCL rather than guess
            env["NCCL_IB_HCA"] = ",".join(nics)
    return env
