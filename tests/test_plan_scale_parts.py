"""The pieces that keep a large plan fast do what the plain computation does.

Each is checked against the computation it replaces: the intents a repack may
move, filed by node (`repack.Movable`); the sets of movers a refused job tries (`repack.make_room`, against trying every
node's); the nodes of shared NVLink domains
with few free GPUs (`BranchIndex.nodes_in_nvlink_between`); the waves and
critical path given the cyclic intents found once; and the collector pause
around `make_plan` leaves the collector as it found it.
"""

from __future__ import annotations

import gc
import random

import pytest

from intentc import collector
from intentc import ir
from intentc.graph import digraph
from intentc.plan.cluster import Cluster, Filter, View
from intentc.plan.model import NodeAllocation, Placement
from intentc.plan.placer import Placer, Request
from intentc.plan.repack import CANDIDATES, Movable, Room, Seated, _fewest, _movers, _try, make_room
from tests.test_plan_index import _take_or_release


def _seat(name: str, node: str, gpus: tuple[int, ...]) -> Seated:
    req = Request(name, "t", len(gpus), None, None, None, None)
    return Seated(req, Placement(name, "t", (NodeAllocation(node, gpus),), ()))


def test_movable_files_seats_by_node_and_reaches_what_the_sum_reaches() -> None:
    from benchmarks.plan_workload import build_cluster
    topo = build_cluster(8, 4, 2, 1, 4)
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), 0)
    view = cluster.view(Filter(None, None))
    rng = random.Random(7)
    movable = Movable()
    seats: dict[str, tuple[int, Seated]] = {}
    for step in range(200):
        if seats and rng.random() < 0.3:
            name = rng.choice(sorted(seats))
            i, _ = seats.pop(name)
            movable.remove(i, name)
        else:
            i = rng.randrange(len(cluster.nodes))
            node = cluster.nodes[i]
            seat = _seat(f"j{step}", node.spec.name, tuple(range(rng.randint(1, node.capacity))))
            seats[seat.placement.intent] = (i, seat)
            movable.add(i, seat)
        assert set(movable) == set(seats)
        for k in (1, 4, 8):
            held = sum(s.placement.gpu_count for i, s in seats.values()
                       if view.eligible[i] and cluster.nodes[i].capacity >= k)
            for need in (0, 1, 5, 9, 40):
                assert movable.reaches(view, cluster.nodes, k, need) == (held >= need)


def test_nodes_in_nvlink_between_lists_the_nodes_of_domains_with_that_many_free() -> None:
    from benchmarks.plan_workload import build_cluster
    topo = build_cluster(16, 4, 2, 3, 5)          # 16 lone HGX nodes, three 5-tray NVLink domains
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), 0)
    view = cluster.view(Filter(None, None))
    index = view.index
    assert index is not None and len(index.nvlink_leaves) == 3
    rng = random.Random(3)
    for _ in range(60):
        _take_or_release(cluster, rng)
        for low, high in ((1, 4), (2, 8), (0, 20), (5, 5)):
            expected = sorted(n.leaf.id for n in cluster.nodes if cluster.in_shared_nvlink(n)
                              and low <= view.free[n.leaf.at_depth(cluster.nvlink_depth).id] <= high)
            assert sorted(index.nodes_in_nvlink_between(low, high)) == expected


def _job(name: str, after: tuple[str, ...] = ()) -> ir.Intent:
    return ir.Intent(name, ir.Trigger("after" if after else "push", after=tuple(ir.Ref(a) for a in after)),
                     ir.Action("batch", "img"), ir.Context(ir.Ref("t")),
                     ir.Constraints(gpus=ir.GpuRequest(1), duration="1h"))


def test_waves_and_critical_path_are_the_same_given_the_cyclic_intents() -> None:
    program = ir.Program(intents=(_job("a"), _job("b", ("a",)), _job("c", ("b", "d")), _job("d", ("c",)),
                                  _job("e", ("b",)), _job("f", ("e", "c"))))
    g, _ = digraph.build(program)
    cyclic = digraph.nodes_in_cycles(g)
    assert cyclic == {"c", "d"}
    durations = {n: 60 * (i + 1) for i, n in enumerate(sorted(g))}
    assert digraph.waves(g, cyclic) == digraph.waves(g)
    assert digraph.critical_path(g, durations, cyclic) == digraph.critical_path(g, durations)


@pytest.mark.parametrize("was_on", [True, False])
def test_the_collector_is_left_as_found(was_on: bool) -> None:
    seen: list[bool] = []
    before = gc.isenabled()
    try:
        (gc.enable if was_on else gc.disable)()
        with collector.paused():
            seen.append(gc.isenabled())
        assert gc.isenabled() is was_on
        with pytest.raises(RuntimeError):
            with collector.paused():
                raise RuntimeError("planning failed")
        assert gc.isenabled() is was_on
    finally:
        (gc.enable if before else gc.disable)()
    assert seen == [False]


def _make_room_everywhere(placer: Placer, req: Request, view: View, limit: int, movable: Movable) -> Room | None:
    """`make_room` as first written: every set of every node enumerated and tried in order."""
    cluster = placer.c
    options = []
    for i, seats in movable.on.items():
        node = cluster.nodes[i]
        if not view.eligible[i] or node.capacity < req.count:
            continue
        for movers in _movers(list(seats.values()), req.count - node.free_count):
            options.append((sum(m.placement.gpu_count for m in movers), len(movers), node.leaf.tie,
                            tuple(m.placement.intent for m in movers), node, movers))
    options.sort(key=lambda o: o[:4])
    for _, _, _, _, node, movers in options[:CANDIDATES]:
        room = _try(placer, req, view, limit, node, movers)
        if room is not None:
            return room
    return None


def _crowded(seed: int) -> tuple[Cluster, Movable, random.Random]:
    """A cluster of HGX nodes and GB200 trays filled at random with single-node occupants."""
    from benchmarks.plan_workload import build_cluster
    topo = build_cluster(12, 4, 2, 2, 4)
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), seed)
    rng = random.Random(seed)
    movable = Movable()
    for k in range(rng.randint(5, 60)):
        i = rng.randrange(len(cluster.nodes))
        node = cluster.nodes[i]
        free = [g for g in range(node.capacity) if node.free >> g & 1]
        if not free:
            continue
        gpus = tuple(sorted(rng.sample(free, rng.randint(1, min(len(free), 4)))))
        product = rng.choice((None, node.spec.gpu_product))
        req = Request(f"o{k:02d}", "t", len(gpus), product, None, None, None)
        cluster.take(node, gpus)
        movable.add(i, Seated(req, Placement(req.intent, "t", (NodeAllocation(node.spec.name, gpus),), ())))
    return cluster, movable, rng


@pytest.mark.parametrize("seed", range(120))
def test_make_room_finds_what_trying_every_node_finds(seed: int) -> None:
    # The bound on each node's sets (what it lacks, how many movers that takes) and the
    # free-GPU checks only skip work: same room, same moves, same cluster afterwards.
    fast, movable_fast, rng = _crowded(seed)
    slow, movable_slow, _ = _crowded(seed)
    count = rng.choice((1, 2, 4, 4, 8, 8, 8))
    product = rng.choice((None, None, "H100-80GB", "GB200"))
    req = Request("new", "t", count, product, None, None, None)
    outcomes = []
    for cluster, movable, find in ((fast, movable_fast, make_room), (slow, movable_slow, _make_room_everywhere)):
        placer = Placer(cluster)
        room = find(placer, req, cluster.view(req.filter), cluster.leaf_depth, movable)
        outcomes.append((None if room is None else (room.placed.allocations, sorted(room.moved.items())),
                         [n.free for n in cluster.nodes], cluster.free_gpus))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2] == sum(n.free_count for n in fast.nodes)


def test_fewest_counts_the_largest_occupants_needed() -> None:
    assert _fewest([1, 4, 2], 5) == 2 and _fewest([1, 4, 2], 4) == 1 and _fewest([1, 4, 2], 7) == 3
    assert _fewest([1, 4, 2], 8) is None and _fewest([], 1) is None


def test_room_is_made_when_the_movers_need_every_free_gpu_elsewhere() -> None:
    # 8 GPUs free in all, exactly what the job asks: 7 on the first node beside a movable
    # one-GPU job, 1 on the second.  Moving the one-GPU job over takes the last free GPU.
    from benchmarks.plan_workload import build_cluster
    topo = build_cluster(2, 2, 1, 0, 0)
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), 0)
    first, second = cluster.nodes
    cluster.take(first, (0,))
    cluster.take(second, tuple(range(7)))
    movable = Movable()
    movable.add(0, _seat("one", first.spec.name, (0,)))
    req = Request("eight", "t", 8, None, None, "node", None)
    room = make_room(Placer(cluster), req, cluster.view(req.filter), cluster.leaf_depth, movable)
    assert room is not None and room.moved["one"].nodes == (second.spec.name,)
    assert room.placed.allocations[0].node == first.spec.name and cluster.free_gpus == 0
