"""The decision table applied to the plan: each placed GPU intent's strategy.

The table itself is `intentc/tolerance.py`; what only the plan knows is
how fragmented the domain it chose is: the share of that domain's GPUs
left free on nodes that are partly used (free GPUs on untouched nodes are
whole nodes, not fragments).  The domain is the innermost level the gang
shares (`Placement.domains`), or its node.
"""

from __future__ import annotations

from typing import Iterable

from intentc import ir
from intentc.plan.model import Placement, Strategy
from intentc.tolerance import allowed_precisions, strategy


def _chosen(p: Placement) -> tuple[str, str]:
    shared = [(lvl, dom) for lvl, dom in p.domains if dom is not None]
    if shared:
        return shared[-1][0], str(shared[-1][1])
    return "node", p.nodes[0]


def _members(level: str, name: str, nodes: Iterable[ir.TopologyNode]) -> list[ir.TopologyNode]:
    if level == "node":
        return [n for n in nodes if n.name == name]
    return [n for n in nodes if n.domain(level) == name]


def fragmentation(p: Placement, used: dict[str, int], topology: ir.Topology) -> float:
    level, name = _chosen(p)
    members = _members(level, name, topology.nodes) or [n for n in topology.nodes if n.name in p.nodes]
    total = sum(n.gpu_count for n in members)
    scattered = sum(n.gpu_count - used.get(n.name, 0) for n in members if 0 < used.get(n.name, 0) < n.gpu_count)
    return round(scattered / total, 4) if total else 0.0


def decide(intents: Iterable[ir.Intent], placements: Iterable[Placement], topology: ir.Topology
           ) -> tuple[Strategy, ...]:
    placed = [p for p in placements if p.allocations]
    used: dict[str, int] = {}
    for p in placed:
        for a in p.allocations:
            used[a.node] = used.get(a.node, 0) + len(a.gpus)
    by_name = {i.name: i for i in intents}
    out = []
    for p in sorted(placed, key=lambda p: p.intent):
        intent = by_name.get(p.intent)
        if intent is None:
            continue
        c = intent.constraints
        frag = fragmentation(p, used, topology)
        level, name = _chosen(p)
        out.append(Strategy(p.intent, strategy(c.sla, frag), frag, f"{level} {name}",
                            allowed_precisions(c.sla, c.tolerance)))
    return tuple(out)
