"""The decision table applied to the plan: each placed GPU intent's strategy.

The table itself is `intentc/ir/tolerance.py`; what only the plan knows is
how fragmented the domain it chose is: the share of that domain's GPUs
left free on nodes that are partly used (free GPUs on untouched nodes are
whole nodes, not fragments).  The domain is the innermost level the gang
shares (`Placement.domains`), or its node.
"""

from __future__ import annotations

from typing import Iterable

from intentc import ir
from intentc.ir.tolerance import allowed_precisions, strategy
from intentc.plan.model import Placement, Strategy


def chosen(p: Placement) -> tuple[str, str]:
    shared = [(lvl, dom) for lvl, dom in p.domains if dom is not None]
    if shared:
        return shared[-1][0], str(shared[-1][1])
    return "node", p.nodes[0]


def domains_of(topology: ir.Topology) -> dict[tuple[str, str], list[ir.TopologyNode]]:
    """Nodes by (level, domain name), the node level included: built once per plan."""
    out: dict[tuple[str, str], list[ir.TopologyNode]] = {}
    for n in topology.nodes:
        out.setdefault(("node", n.name), []).append(n)
        for level, name in n.domains:
            if level != "node":
                out.setdefault((level, name), []).append(n)
    return out


def fragmentation(used: dict[str, int], members: list[ir.TopologyNode]) -> float:
    """Share of the members' GPUs left free on nodes that are partly used."""
    total = sum(n.gpu_count for n in members)
    scattered = sum(n.gpu_count - used.get(n.name, 0) for n in members if 0 < used.get(n.name, 0) < n.gpu_count)
    return round(scattered / total, 4) if total else 0.0


def decide(intents: Iterable[ir.Intent], placements: Iterable[Placement], topology: ir.Topology
           ) -> tuple[Strategy, ...]:
    placed = [p for p in placements if p.allocations]
    by_name = {i.name: i for i in intents}
    domains = domains_of(topology)
    used = used_gpus(placed)
    out = []
    for p in sorted(placed, key=lambda p: p.intent):
        intent = by_name.get(p.intent)
        if intent is not None:
            out.append(decide_one(intent, p, used, domains))
    return tuple(out)


def used_gpus(placements: Iterable[Placement]) -> dict[str, int]:
    """GPUs planned per node, over the whole plan."""
    used: dict[str, int] = {}
    for p in placements:
        for a in p.allocations:
            used[a.node] = used.get(a.node, 0) + len(a.gpus)
    return used


def decide_one(intent: ir.Intent, p: Placement, used: dict[str, int],
               domains: dict[tuple[str, str], list[ir.TopologyNode]]) -> Strategy:
    """One placed GPU intent's strategy, given the GPUs planned per node (`used_gpus`)."""
    c = intent.constraints
    level, name = chosen(p)
    members = domains.get((level, name)) or [n for node in p.nodes for n in domains.get(("node", node), [])]
    frag = fragmentation(used, members)
    return Strategy(p.intent, strategy(c.sla, frag), frag, f"{level} {name}", allowed_precisions(c.sla, c.tolerance))
