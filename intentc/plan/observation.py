"""Nodes under GPU observation are not planned onto (docs/failure-fallback.md).

When a GPU fails, the daemon taints its node `intentc.dev/gpu-observation`
(value: the Unix time the observation ends, effect NoSchedule) for 15
minutes (`daemon/fallback.py` decides when).  The planner leaves such a node
out of the topology it places onto, so the re-plan the failure triggers
moves the intent elsewhere instead of back onto the suspect GPU.  The
taint reaches the planner through the inventory: `topology import` copies
node taints, and a topology file may list them.
"""

from __future__ import annotations

from dataclasses import replace

from intentc import ir
from intentc.topology.load import LoadedTopology

OBSERVATION_TAINT = "intentc.dev/gpu-observation"


def under_observation(node: ir.TopologyNode) -> bool:
    return any(key == OBSERVATION_TAINT for key, _, _ in node.taints)


def without_observed(loaded: LoadedTopology) -> LoadedTopology:
    """The topology minus nodes under observation (the same object when there are none)."""
    keep = tuple(n for n in loaded.topology.nodes if not under_observation(n))
    if len(keep) == len(loaded.topology.nodes):
        return loaded
    names = {n.name for n in keep}
    return LoadedTopology(replace(loaded.topology, nodes=keep),
                          tuple((name, m) for name, m in loaded.matrices if name in names))
