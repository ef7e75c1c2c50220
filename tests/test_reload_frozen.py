"""What the Reloader replaces is freed although the heap it was built in was frozen.

`Reloader.load()` and the background full plan's swap freeze the heap
(`gc.freeze`): a frozen object is never walked by the cyclic collector, so a
frozen reference cycle that is later dropped is kept for good.  The
incremental planner's index held one (its cluster's domain tree: parent <->
children, leaf <-> node), and every index replaced after a freeze stayed in
memory: the daemon's growth per full plan found by the 100k soak
(benchmarks/bench_soak_100k.py, docs/frontend-scale.md).  Replaced indexes
now break their cycles (`PlanIndex.discard`), so reference counting frees
them at once; these tests check it with weak references, no collection.
The background full plan no longer replaces the index: it rebases it.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from intentc.daemon.reload import Reloader
from tests.test_reload_replan import COMMIT, chains, job, make_tree


def _index_refs(r: Reloader) -> list[weakref.ref[object]]:
    """Weak references into the domain tree of the index in force (a node, its leaf, the root)."""
    index = r._index
    assert index is not None
    cluster = index.cluster
    return [weakref.ref(cluster.nodes[0]), weakref.ref(cluster.nodes[0].leaf), weakref.ref(cluster.root)]


def test_an_index_replaced_by_a_full_plan_is_freed_after_the_load_froze_it(tmp_path: Path) -> None:
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT, background=False)
    assert r.load().ok                        # freezes what the load built, the index with it
    refs = _index_refs(r)
    topo.write_text(topo.read_text() + "\n")      # the topology: always the full planner, a new index
    result = r.update([topo])
    assert result.ok and result.replanned and result.plan_note == ""
    assert [ref() for ref in refs] == [None, None, None]


def test_the_background_full_plan_rebases_the_index_in_force(tmp_path: Path) -> None:
    """The background full plan replaces no index (so none is left frozen): it files its
    occupancy into the one in force (`PlanIndex.rebase`), whose domain tree stays."""
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT)
    assert r.load().ok
    before = r._index
    refs = _index_refs(r)
    (src / "job-03.intent").write_text(job(3, gpus=6))
    result = r.update([src / "job-03.intent"])
    assert result.ok and result.plan_note.startswith("incremental plan")
    assert r.settle(120)
    index = r._index
    assert index is before and r.current is not None and index.plan is r.current.plan
    assert all(ref() is not None for ref in refs)
    # the index in force is whole: the next edit is planned incrementally on it
    (src / "job-04.intent").write_text(job(4, gpus=4, after=3))
    again = r.update([src / "job-04.intent"])
    assert again.ok and again.plan_note.startswith("incremental plan") and r._index is index
    assert r.settle(120)
