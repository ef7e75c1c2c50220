"""The pure parts of apply's live binding and wave timeouts (no cluster).

* how long a wave may take, derived from its intents (reconcile/timeouts.py);
* re-binding one wave: its own program, the merged plan, where and why the
  live binding differs from the preview, what cannot be placed (plan/rebind.py);
* what a timeout says (reconcile/sync.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from intentc import ir
from intentc.objectmeta import ObjectRef
from intentc.plan.live_occupancy import occupancy
from intentc.plan.model import NodeAllocation, Unplaced
from intentc.plan.planner import make_plan
from intentc.plan.rebind import blocked, changes, merged, wave_program, where
from intentc.reconcile.health import Health, HealthStatus
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.reconcile.timeouts import FALLBACK_S, SERVE_READY_S, START_GRACE_S, budget, wave_budgets, wave_timeout
from intentc.topology.load import LoadedTopology
from tests.render_cases import intent, sample_plan, sample_program

H, M = 3600, 60


def with_constraints(i: ir.Intent, **kw: Any) -> ir.Intent:
    return replace(i, constraints=replace(i.constraints, **kw))


@pytest.mark.parametrize("made, seconds, says", [
    (with_constraints(intent("a", "t", gpus=8), duration="2h"), 2 * H * 3 // 2 + START_GRACE_S,
     "duration 2h x (1 + slack 0.5) + 5m to start"),
    (with_constraints(intent("a", "t", "training", gpus=8), duration="4h", slack=0.25), 5 * H + START_GRACE_S,
     "duration 4h x (1 + slack 0.25)"),
    (with_constraints(intent("a", "t", "training", gpus=8), duration="90m", slack=0.0), 90 * M + START_GRACE_S,
     "duration 1h30m x (1 + slack 0)"),
    (intent("a", "t", "inference", gpus=1), 90 * M + START_GRACE_S, "default duration of inference 1h"),
    (intent("a", "t"), 45 * M + START_GRACE_S, "default duration of batch 30m"),
    (with_constraints(intent("a", "t", "serve", gpus=2), duration="4h"), SERVE_READY_S, "serve: available within 10m"),
    (replace(intent("a", "t", gpus=1), trigger=ir.Trigger("schedule", schedule="0 2 * * *")), START_GRACE_S,
     "schedule: a CronJob"),
])
def test_an_intents_budget_follows_its_duration_and_slack(made: ir.Intent, seconds: int, says: str) -> None:
    b = budget(made)
    assert (b.intent, b.seconds) == ("a", seconds)
    assert says in b.derivation, b.derivation


def test_queueing_inside_the_wave_extends_the_budget() -> None:
    b = budget(with_constraints(intent("a", "t", gpus=8), duration="1h"), queued_s=1800)
    assert b.seconds == 90 * M + START_GRACE_S + 1800 and "30m queued behind its wave" in b.derivation


def test_a_wave_waits_as_long_as_its_longest_intent() -> None:
    program, plan = sample_program(), sample_plan()
    budgets = wave_budgets(program, plan)
    assert set(budgets) == {n for wave in plan.waves for n in wave}
    wave = plan.waves[0]
    seconds, why = wave_timeout(wave, budgets)
    longest = max(budgets[n].seconds for n in wave)
    assert seconds == longest and why.startswith(f"{seconds // H}h" if seconds >= H else "")
    assert any(why.endswith(budgets[n].derivation) for n in wave), why
    assert wave_timeout([], budgets) == (FALLBACK_S, "5m (no intent budget known)")


# -- re-binding ----------------------------------------------------------------

NODES = tuple(ir.TopologyNode(f"n{i}", gpu_count=8, gpu_product="H100-80GB", domains=(("node", f"n{i}"),))
              for i in (1, 2, 3))
TOPOLOGY = LoadedTopology(ir.Topology("t", levels=("node",), nodes=NODES), ())


def within_node(i: ir.Intent) -> ir.Intent:
    return with_constraints(i, duration="1h", gpus=ir.GpuRequest(8, "H100-80GB", within="node"))


def program() -> ir.Program:
    return ir.Program(
        tenants=(ir.Tenant("team-a", tier="gold"),),
        intents=(within_node(intent("first", "team-a", gpus=8)),
                 within_node(intent("second", "team-a", gpus=8, after=("first",)))))


def node(name: str, unschedulable: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"unschedulable": unschedulable},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "8"}}}


def pod(ns: str, name: str, on: str, gpus: int, intent_name: str | None = None) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": intent_name} if intent_name else {}
    return {"metadata": {"namespace": ns, "name": name, "labels": labels},
            "spec": {"nodeName": on, "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def test_a_wave_is_planned_alone_without_its_edges_to_earlier_waves() -> None:
    sub = wave_program(program(), ["second"])
    assert [i.name for i in sub.intents] == ["second"]
    assert sub.intents[0].trigger.kind == "push" and sub.intents[0].trigger.after == ()
    assert sub.tenants == program().tenants
    plan, diags = make_plan(sub, TOPOLOGY)
    assert plan.placement("second") is not None and not plan.unplaced


def test_a_cordoned_node_moves_the_wave_and_says_so() -> None:
    preview, _ = make_plan(program(), TOPOLOGY)
    before = preview.placement("second")
    assert before is not None
    was = before.nodes[0]
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name, unschedulable=n.name == was) for n in NODES], [])
    fresh, _ = make_plan(wave_program(program(), ["second"]), TOPOLOGY, occupied=occ)
    bound = merged(preview, fresh, ["second"])
    after = bound.placement("second")
    assert after is not None and after.nodes[0] != was
    assert (after.start_s, after.end_s) == (before.start_s, before.end_s), "times stay the preview's"
    assert bound.placement("first") == preview.placement("first") and bound.waves == preview.waves
    [change] = changes(preview, bound, ["first", "second"], occ, notes)
    assert change.intent == "second" and change.reasons == (f"{was} unavailable (cordoned)",)
    assert change.text() == f"second: preview {was} GPU 0-7 -> live {after.nodes[0]} GPU 0-7 ({was} unavailable (cordoned))"


def test_gpus_held_by_a_foreign_pod_are_named_as_the_reason() -> None:
    preview, _ = make_plan(program(), TOPOLOGY)
    before = preview.placement("first")
    assert before is not None
    was = before.nodes[0]
    pods = [pod("research", "notebook", was, 4), pod("team-a", "second-xyz", was, 8, "second")]
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES], pods, ["team-a"], ["first"])
    assert [b.node for b in occ.busy] == [was] and occ.busy[0].gpus == tuple(range(8)), \
        "another wave's own pods hold their GPUs while the re-planned wave's do not"
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES], pods[:1], ["team-a"], ["first"])
    fresh, _ = make_plan(wave_program(program(), ["first"]), TOPOLOGY, occupied=occ)
    [change] = changes(preview, merged(preview, fresh, ["first"]), ["first"], occ, notes)
    assert change.reasons == (f"{was} GPU 4,5,6,7 taken (pod research/notebook, 4 GPU(s) by count)",)


def test_moved_only_because_others_moved_says_that() -> None:
    preview, _ = make_plan(program(), TOPOLOGY)
    before = preview.placement("first")
    assert before is not None
    other = next(n.name for n in NODES if n.name != before.nodes[0])
    moved = replace(preview, placements=tuple(
        replace(p, allocations=(NodeAllocation(other, tuple(range(8))),)) if p.intent == "first" else p
        for p in preview.placements))
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES], [])
    [change] = changes(preview, moved, ["first"], occ, notes)
    assert "the preview's GPUs are free" in change.reasons[0]


def test_what_cannot_be_placed_now_is_blocked_with_the_planners_reason() -> None:
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES],
                           [pod("research", f"hog-{n.name}", n.name, 1) for n in NODES])
    fresh, _ = make_plan(wave_program(program(), ["first"]), TOPOLOGY, occupied=occ)
    [b] = blocked(fresh, ["first", "second"])
    assert b.intent == "first" and b.reason == "fragmentation" and b.text().startswith("first does not fit now (fragmentation): ")
    preview, _ = make_plan(program(), TOPOLOGY)
    assert merged(preview, fresh, ["first"]).placement("first") == preview.placement("first"), \
        "what cannot be placed keeps its preview binding (the caller waits)"
    assert blocked(replace(fresh, unplaced=(Unplaced("x", "team-a", "quota", "over quota"),)), ["first"]) == ()


def test_where_reads_like_the_plan() -> None:
    assert where([NodeAllocation("a", (0, 1, 2, 3))]) == "a GPU 0-3"
    assert where([NodeAllocation("a", (0, 2)), NodeAllocation("b", (1,))]) == "a GPU 0,2 + b GPU 1"
    assert where([]) == "no GPUs"


# -- the timeout message -------------------------------------------------------

class _NeverDone:
    def get(self, ref: ObjectRef) -> dict[str, Any]:
        return {"kind": "Job", "spec": {"completions": 1},
                "status": {"startTime": "2026-12-01T10:00:00Z", "active": 1}}


def test_a_timeout_names_the_intent_and_how_long_it_ran() -> None:
    refs = [ObjectRef("batch/v1", "Job", "team-a", "train")]
    reconciler = Reconciler(_NeverDone(), ApplyOptions(workers=1),  # type: ignore[arg-type]
                            clock=lambda: "2026-12-01T12:15:00Z")
    health = {r: Health(HealthStatus.PROGRESSING, "0/1 pods succeeded") for r in refs}
    message = reconciler._timed_out(4, refs, health, {refs[0]: _NeverDone().get(refs[0])}, {refs[0]: "train"},
                                    8100.0, "2h15m, from train: duration 1h30m x (1 + slack 0.5)", 8100.0)
    assert message == ("timed out after 2h15m waiting for wave-0, its budget 2h15m (2h15m, from train: duration "
                       "1h30m x (1 + slack 0.5)): intent train: Job team-a/train is Progressing "
                       "(0/1 pods succeeded), running for 2h15m")


# -- when there is nothing to bind to ----------------------------------------------

def _binder(read: Any) -> Any:
    from pathlib import Path

    from intentc.pipeline import compile_paths
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.render.capabilities import KubeVersion

    repo = Path(__file__).parent / "fixtures" / "repo"
    result = compile_paths([str(repo / "intents")], str(repo / "clusters" / "small.yaml"), "f" * 40,
                           KubeVersion(1, 37))
    assert result.program and result.plan and result.rendered and result.topology
    return LiveBinder(result.program, result.topology, result.plan, result.rendered, KubeVersion(1, 37), read), result


def test_a_cluster_without_the_topologys_nodes_gets_the_preview_as_compiled() -> None:
    from intentc.kube.cluster_state import ClusterState

    binder, result = _binder(lambda: ClusterState((node("some-other-node"),), ()))
    b = binder.whole({})
    assert not b.live and b.manifests == result.rendered.manifests and not b.changes
    assert b.notes == ("the cluster has none of the topology's 3 GPU nodes: applied as previewed "
                       "(pods wait Pending until those nodes join)",)
    wave = binder.bind_wave(1, {})
    assert not wave.live and wave.manifests == tuple(m for m in result.rendered.manifests if m.step == 5)


def test_a_caller_who_may_not_list_nodes_gets_the_preview_not_a_failure() -> None:
    from intentc.kube.errors import AccessDenied

    def read() -> Any:
        raise AccessDenied('nodes is forbidden: User "ci" cannot list resource "nodes"', 403)
    binder, result = _binder(read)
    b = binder.bind_wave(0, {})
    assert not b.live and b.notes[0].startswith("cannot read the cluster's nodes and pods (nodes is forbidden")


def test_on_the_topologys_own_empty_nodes_the_live_binding_is_the_preview() -> None:
    from intentc.kube.cluster_state import ClusterState

    binder, result = _binder(lambda: ClusterState(tuple(node(f"node-{i}") for i in (1, 2, 3)), ()))
    b = binder.whole({})
    assert b.live and not b.changes and not b.blocked
    assert b.manifests == result.rendered.manifests, "nothing moved: byte-identical objects"


def test_only_what_no_longer_fits_moves_and_it_moves_around_what_stays() -> None:
    from intentc.plan.rebind import holding, unfit

    two = ir.Program(tenants=(ir.Tenant("team-a", tier="gold"),),
                     intents=(within_node(intent("a", "team-a", gpus=8)), within_node(intent("b", "team-a", gpus=8))))
    preview, _ = make_plan(two, TOPOLOGY)
    pa, pb = preview.placement("a"), preview.placement("b")
    assert pa is not None and pb is not None and pa.nodes != pb.nodes
    free = next(n.name for n in NODES if n.name not in pa.nodes + pb.nodes)
    occ, notes = occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES], [pod("research", "nb", pa.nodes[0], 1)])
    assert unfit(preview, ["a", "b"], occ) == ("a",)
    around = holding(occ, preview, ["b"])
    assert {(x.node, x.gpus) for x in around.busy} == {(pa.nodes[0], (7,)), (pb.nodes[0], tuple(range(8)))}
    fresh, _ = make_plan(wave_program(two, ["a"]), TOPOLOGY, occupied=around)
    bound = merged(preview, fresh, ["a"])
    assert bound.placement("b") == pb, "b still fits where the preview put it: it stays"
    moved = bound.placement("a")
    assert moved is not None and moved.nodes == (free,), "a goes where neither the pod nor b is"
    assert unfit(preview, ["a", "b"], occupancy(TOPOLOGY.topology, [node(n.name) for n in NODES], [])[0]) == ()


def test_an_intent_whose_live_binding_makes_other_objects_keeps_the_previews() -> None:
    from intentc.reconcile.live_binding import LiveBinder
    from intentc.render.model import Manifest

    def job(name: str, intent_name: str, h: str) -> Manifest:
        ref = ObjectRef("batch/v1", "Job", "team-a", name)
        return Manifest(ref, 4, {"kind": "Job", "metadata": {"name": name}}, h, intent_name, "team-a")
    previewed = (job("a", "a", "p1"), job("a-fallback-batch", "a", "p2"), job("b", "b", "p3"))
    bound = (job("a", "a", "l1"), job("b", "b", "l3"))        # a's batch on the new GPUs leaves no variant
    out, notes = LiveBinder._same_objects(bound, previewed)
    assert [(m.ref.name, m.spec_hash) for m in out] == [("a", "p1"), ("a-fallback-batch", "p2"), ("b", "l3")]
    assert notes == ("a: the live binding makes other objects than the preview; applied as previewed "
                     "(its pods may wait for the preview's GPUs)",)
