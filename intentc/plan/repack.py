"""Making room for a job that does not fit by moving smaller ones.

Admission is greedy: intents are placed one at a time, in SLA and fair-share
order.  An early one-GPU job can take the last free GPU of the only kind of
node a later 8-GPU job fits on, while the GPUs it could equally have used sit
idle on nodes the 8-GPU job cannot use (4-GPU trays, another product).  A
plan is computed before anything runs, so moving a placed job costs nothing;
a scheduler working on live pods would have to preempt instead.

When a job that fits on one node does not fit at an instant, `make_room`
looks for a node that would hold it if a few of its single-node occupants
moved elsewhere, and moves them, but only if every one of them lands on a
single node again.  Otherwise nothing changes.  Moved jobs therefore keep
their `within`, their filters (they are placed through the same `Placer`)
and their single-node NVLink; only which node they sit on changes.

Per node, every set of single-node occupants that would free enough GPUs
is a candidate (not just the largest occupants: the largest may have
nowhere to go while two small ones do), cheapest first: fewest GPUs moved,
then fewest jobs moved.  At most `CANDIDATES` sets are tried per refusal
over all nodes, so the cost stays small next to the plan itself.

In a plan over time only intents that start at the same instant as the
refused one can move: one that started earlier already ran on its GPUs.
The schedule keeps those in a `Movable`, filed by node as they start and
move, because thousands of intents can start at one instant (plan time 0
of a large plan) and each refusal would otherwise look at all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from intentc.plan.cluster import NodeState, View
from intentc.plan.model import Placement
from intentc.plan.placer import Placed, Placer, Request

CANDIDATES = 8
MAX_SUBSET_OCCUPANTS = 6       # above this many occupants on a node, only the greedy set is tried


@dataclass(frozen=True, slots=True)
class Seated:
    """A placed intent, with the request that placed it (needed to place it again)."""

    request: Request
    placement: Placement


@dataclass(frozen=True)
class Room:
    """The outcome of a successful `make_room`: where the refused job went, and who moved."""

    placed: Placed
    moved: dict[str, Placement]


class Movable:
    """The single-node intents started at this instant that may still move, by node index."""

    def __init__(self) -> None:
        self.on: dict[int, dict[str, Seated]] = {}      # node index -> intent -> its seat
        self.gpus: dict[int, int] = {}                  # node index -> GPUs those intents hold
        self.sizes: dict[int, dict[str, int]] = {}      # node index -> intent -> the GPUs it holds

    def __iter__(self) -> Iterator[str]:
        """The names of the movable intents."""
        return (name for seats in self.on.values() for name in seats)

    def add(self, node: int, seat: Seated) -> None:
        name, gpus = seat.placement.intent, seat.placement.gpu_count
        self.on.setdefault(node, {})[name] = seat
        self.sizes.setdefault(node, {})[name] = gpus
        self.gpus[node] = self.gpus.get(node, 0) + gpus

    def remove(self, node: int, name: str) -> None:
        del self.on[node][name]
        self.gpus[node] -= self.sizes[node].pop(name)
        if not self.on[node]:
            del self.on[node], self.gpus[node], self.sizes[node]

    def reaches(self, view: View, cluster_nodes: list[NodeState], k: int, need: int) -> bool:
        """True if they hold at least `need` GPUs on nodes of `view` with room for k: less
        and no way of moving them can make room for a k-GPU job."""
        if need <= 0:
            return True
        held = 0
        for i, n in self.gpus.items():
            if view.eligible[i] and cluster_nodes[i].capacity >= k:
                held += n
                if held >= need:
                    return True
        return False


def _greedy(occupants: list[Seated], need: int) -> list[Seated] | None:
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


def _movers(occupants: list[Seated], need: int) -> list[list[Seated]]:
    """Sets of occupants freeing at least `need` GPUs, cheapest first (GPUs moved, jobs moved,
    names); only minimal sets (no member can be left out)."""
    if need <= 0:
        return []
    if len(occupants) > MAX_SUBSET_OCCUPANTS:
        greedy = _greedy(occupants, need)
        return [greedy] if greedy else []
    seats = sorted(occupants, key=lambda s: s.placement.intent)
    sizes = [s.placement.gpu_count for s in seats]
    found: list[tuple[int, int, tuple[str, ...], list[Seated]]] = []
    for mask in range(1, 1 << len(seats)):
        members = [i for i in range(len(seats)) if mask >> i & 1]
        freed = sum(sizes[i] for i in members)
        if freed < need or any(freed - sizes[i] >= need for i in members):
            continue
        chosen = [seats[i] for i in members]
        found.append((freed, len(members), tuple(s.placement.intent for s in chosen), chosen))
    found.sort(key=lambda f: f[:3])
    return [f[3] for f in found[:CANDIDATES]]


def make_room(placer: Placer, req: Request, view: View, limit: int, movable: Movable) -> Room | None:
    """Place `req` on a node by moving some of its `movable` occupants elsewhere, or return None.

    Leaves the cluster exactly as it found it when it returns None.
    """
    cluster = placer.c
    if cluster.free_gpus < req.count:
        # The movers must land on GPUs free elsewhere, as many as they free here, and the
        # job takes those plus what was free here: fewer free GPUs than it asks for in the
        # whole cluster, and no set of movers can make room.
        return None
    # Every set a node offers frees at least what the node lacks, with at least as many
    # movers as its largest occupants needed to free that: a lower bound on the set's sort
    # key.  Nodes are enumerated in the order of that bound, until CANDIDATES options sort
    # before the next node's bound: no later node can then enter the first CANDIDATES.  The
    # same options as enumerating every node (a plan thousands of jobs deep refuses
    # thousands of times, and each refusal looked at every node).
    bounds: list[tuple[int, int, str, int]] = []
    for i, held in movable.sizes.items():
        node = cluster.nodes[i]
        need = req.count - node.free_count
        if need <= 0 or not view.eligible[i] or node.capacity < req.count:
            continue
        fewest = _fewest(held.values(), need)
        if fewest is not None:
            bounds.append((need, fewest, node.leaf.tie, i))
    bounds.sort()
    options: list[tuple[int, int, str, tuple[str, ...], NodeState, list[Seated]]] = []
    for need, fewest, tie, i in bounds:
        if len(options) >= CANDIDATES:
            options.sort(key=_option_key)
            del options[CANDIDATES:]
            if options[-1][:3] < (need, fewest, tie):
                break
        node = cluster.nodes[i]
        for movers in _movers(list(movable.on[i].values()), need):
            options.append((sum(m.placement.gpu_count for m in movers), len(movers), node.leaf.tie,
                            tuple(m.placement.intent for m in movers), node, movers))
    options.sort(key=_option_key)
    for freed, _, _, _, node, movers in options[:CANDIDATES]:
        if cluster.free_gpus - node.free_count < freed:
            continue                # the movers cannot all land elsewhere: `_try` would fail
        room = _try(placer, req, view, limit, node, movers)
        if room is not None:
            return room
    return None


def _fewest(sizes: Iterable[int], need: int) -> int | None:
    """How many of these occupants, largest first, free `need` GPUs (None: all of them cannot)."""
    freed = 0
    for count, size in enumerate(sorted(sizes, reverse=True), start=1):
        freed += size
        if freed >= need:
            return count
    return None


def _option_key(option: tuple[int, int, str, tuple[str, ...], NodeState, list[Seated]]
                ) -> tuple[int, int, str, tuple[str, ...]]:
    """GPUs moved, jobs moved, the node's tie-break, the movers' names: cheapest first."""
    return option[:4]


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
    for again in landed:
        for a in again.allocations:
            cluster.release(cluster.named[a.node], a.gpus)
    for seat in movers:
        cluster.take(node, seat.placement.allocations[0].gpus)
    return None
