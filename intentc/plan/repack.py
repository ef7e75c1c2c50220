"""Making room for a job refused for fragmentation by moving smaller ones.

Admission is greedy: intents are placed one at a time, in SLA and fair-share
order.  An early one-GPU job can take the last free GPU of the only kind of
node a later 8-GPU job fits on, while the GPUs it could equally have used sit
idle on nodes the 8-GPU job cannot use (4-GPU trays, another product).  A
plan is computed before anything runs, so moving a placed job costs nothing;
a scheduler working on live pods would have to preempt instead.

When a job that fits on one node is refused for fragmentation, `make_room`
looks for a node that would hold it if a few of its single-node occupants
moved elsewhere, and moves them, but only if every one of them lands on a
single node again.  Otherwise nothing changes.  Moved jobs therefore keep
their `within`, their filters (they are placed through the same `Placer`)
and their single-node NVLink; only which node they sit on changes.

At most `CANDIDATES` nodes are tried per refusal, those needing the fewest
moves first, so the cost stays small next to the plan itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from intentc.plan.cluster import NodeState, View
from intentc.plan.model import Placement
from intentc.plan.placer import Placed, Placer, Request

CANDIDATES = 8


@dataclass(frozen=True)
class Seated:
    """A placed intent, with the request that placed it (needed to place it again)."""

    request: Request
    placement: Placement


@dataclass(frozen=True)
class Room:
    """The outcome of a successful `make_room`: where the refused job went, and who moved."""

    placed: Placed
    moved: dict[str, Placement]


def _movers(occupants: list[Seated], need: int) -> list[Seated] | None:
    """The fewest occupants freeing at least `need` GPUs (largest first), then
    without any small one the rest can spare."""
    chosen: list[Seated] = []
    freed = 0
    for seat in sorted(occupants, key=lambda s: (-s.placement.gpu_count, s.placement.intent)):
        if freed >= need:
            break
        chosen.append(seat)
        freed += seat.placement.gpu_count
    if freed < need:
        return None
    chosen.sort(key=lambda s: (s.placement.gpu_count, s.placement.intent))
    while chosen and freed - chosen[0].placement.gpu_count >= need:
        freed -= chosen.pop(0).placement.gpu_count
    return chosen


def make_room(placer: Placer, req: Request, view: View, limit: int,
              seated: Mapping[str, Seated]) -> Room | None:
    """Place `req` on a node by moving some of its occupants elsewhere, or return None.

    Leaves the cluster exactly as it found it when it returns None.
    """
    cluster = placer.c
    occupants: dict[str, list[Seated]] = {}
    for seat in seated.values():
        allocs = seat.placement.allocations
        if len(allocs) == 1:
            occupants.setdefault(allocs[0].node, []).append(seat)
    options: list[tuple[int, int, str, NodeState, list[Seated]]] = []
    for node, ok in zip(cluster.nodes, view.eligible):
        if not ok or node.capacity < req.count:
            continue
        movers = _movers(occupants.get(node.spec.name, []), req.count - node.free_count)
        if movers:
            options.append((len(movers), sum(m.placement.gpu_count for m in movers), node.leaf.tie, node, movers))
    options.sort(key=lambda o: o[:3])
    for _, _, _, node, movers in options[:CANDIDATES]:
        room = _try(placer, req, view, limit, node, movers)
        if room is not None:
            return room
    return None


def _try(placer: Placer, req: Request, view: View, limit: int, node: NodeState,
         movers: list[Seated]) -> Room | None:
    cluster = placer.c
    for seat in movers:
        cluster.release(node, seat.placement.allocations[0].gpus)
    reserved = tuple(g for g in range(node.capacity) if node.free >> g & 1)
    cluster.take(node, reserved)                    # keep the movers off this node
    moved: dict[str, Placement] = {}
    landed: list[Placed] = []
    ok = True
    for seat in sorted(movers, key=lambda s: (-s.placement.gpu_count, s.placement.intent)):
        r = seat.request
        again = placer.place(r, cluster.view(r.filter), cluster.depth_of(r.within) if r.within else 0)
        if again is None:
            ok = False
            break
        landed.append(again)
        if len(again.allocations) != 1:
            ok = False
            break
        p = seat.placement
        moved[p.intent] = Placement(p.intent, p.tenant, again.allocations, again.domains, again.interconnect)
    cluster.release(node, reserved)
    placed = placer.place(req, view, limit) if ok else None
    if placed is not None:
        return Room(placed, moved)
    by_name = {n.spec.name: n for n in cluster.nodes}
    for again in landed:
        for a in again.allocations:
            cluster.release(by_name[a.node], a.gpus)
    for seat in movers:
        cluster.take(node, seat.placement.allocations[0].gpus)
    return None
