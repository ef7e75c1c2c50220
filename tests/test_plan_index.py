"""The indexed one-node search picks what a scan of every node would pick.

`Placer._leaf_fit` ranks groups of nodes (`cluster.Group`) and scores only the
winning groups' nodes; `Placer._best_fit` over every eligible node with room
is the plain definition.  Over random topologies (levels, unlabelled nodes,
products, shared NVLink domains), random GPUs taken, both NVLink-protection
modes and pending pinned demand, the two must return the same node.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc.plan.cluster import Cluster, Filter
from intentc.plan.placer import Placer
from intentc.topology.load import LoadedTopology
from tests.test_plan_properties import topologies

FILTERS = (Filter(None, None), Filter("h100-80gb", None), Filter("gb200", None), Filter("a100-40gb", None))


def _take_or_release(cluster: Cluster, rng: random.Random) -> None:
    """Take or release some GPUs of a random node."""
    node = rng.choice(cluster.nodes)
    free = [g for g in range(node.capacity) if node.free >> g & 1]
    taken = [g for g in range(node.capacity) if not node.free >> g & 1]
    if free and (not taken or rng.random() < 0.6):
        cluster.take(node, tuple(sorted(rng.sample(free, rng.randint(1, len(free))))))
    elif taken:
        cluster.release(node, tuple(sorted(rng.sample(taken, rng.randint(1, len(taken))))))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(topologies(), st.randoms(use_true_random=False), st.integers(0, 2))
def test_indexed_search_matches_the_scan_of_every_node(topo: LoadedTopology, rng: random.Random, seed: int) -> None:
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), seed)
    placer = Placer(cluster)
    views = [cluster.view(f) for f in FILTERS]
    for step in range(30):
        _take_or_release(cluster, rng)
        placer.protect_nvlink = rng.random() < 0.5
        if rng.random() < 0.3:
            placer.add_demand(rng.choice(FILTERS[1:]), 1)
        for view in views:
            for k in (1, 2, 3, 4, 8):
                every = [n.leaf for i, n in enumerate(cluster.nodes)
                         if view.eligible[i] and view.free[n.leaf.id] >= k]
                assert placer._leaf_fit(view, k) is placer._best_fit(view, every, k), (step, k, view.filter)


def test_branch_index_matches_the_scan_on_racks_of_lone_nodes() -> None:
    """Racks of 8-GPU nodes (each alone in its NVLink domain) beside NVL72-style domains: the
    views get a `BranchIndex`, and through it the search still picks the scan's node."""
    from benchmarks.plan_workload import build_cluster
    topo = build_cluster(48, 4, 3, 3, 6)
    cluster = Cluster(topo.topology, lambda n: topo.matrix(n.name), 0)
    placer = Placer(cluster)
    views = [cluster.view(f) for f in FILTERS[:2]]
    assert all(v.index is not None for v in views)
    rng = random.Random(5)
    indexed = merged = 0
    for step in range(400):
        _take_or_release(cluster, rng)
        placer.protect_nvlink = rng.random() < 0.5
        for view in views:
            for k in (1, 2, 3, 4, 8):
                every = [n.leaf for i, n in enumerate(cluster.nodes)
                         if view.eligible[i] and view.free[n.leaf.id] >= k]
                solo = min((f for f in view.buckets if f >= k), default=None)
                shared = sorted(f for f in view.shared if f >= k)
                ties = placer._indexed_ties(view, k, solo, shared) if solo is not None else None
                if ties:
                    indexed += 1
                    # lone nodes and nodes of shared NVLink domains ranking alike, merged
                    merged += len({cluster.groups[g].nvlink >= 0 for g, _ in ties}) > 1
                assert placer._leaf_fit(view, k) is placer._best_fit(view, every, k), (step, k, view.filter)
    assert indexed > 1000 and merged > 0
