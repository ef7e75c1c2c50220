"""The pieces that keep a large plan fast do what the plain computation does.

Each is checked against the computation it replaces: the intents a repack may
move, filed by node (`repack.Movable`); the nodes of shared NVLink domains
with few free GPUs (`BranchIndex.nodes_in_nvlink_between`); the waves and
critical path given the cyclic intents found once; and the collector pause
around `make_plan` leaves the collector as it found it.
"""

from __future__ import annotations

import gc
import random

import pytest

from intentc import collector
from intentc import graph, ir
from intentc.plan.cluster import Cluster, Filter
from intentc.plan.model import NodeAllocation, Placement
from intentc.plan.placer import Request
from intentc.plan.repack import Movable, Seated
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
    g, _ = graph.build(program)
    cyclic = graph.nodes_in_cycles(g)
    assert cyclic == {"c", "d"}
    durations = {n: 60 * (i + 1) for i, n in enumerate(sorted(g))}
    assert graph.waves(g, cyclic) == graph.waves(g)
    assert graph.critical_path(g, durations, cyclic) == graph.critical_path(g, durations)


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
