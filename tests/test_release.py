"""The release order `apply --wait` follows (reconcile/release.py) and re-binding intents
released together (plan/rebind.py `unfit(together=True)`), without a cluster.

The cluster side — Jobs started as the order says, read back from the API
server — is tests/test_release_kube.py."""

from __future__ import annotations

from dataclasses import replace

from intentc import ir
from intentc.plan.live_occupancy import occupancy
from intentc.plan.model import NodeAllocation, Placement
from intentc.plan.planner import make_plan
from intentc.plan.rebind import blocked, unfit
from intentc.reconcile.release import gpu_predecessors, gpu_room, prerequisites, quota_predecessors, release_order
from tests.render_cases import intent
from tests.test_apply_live_unit import TOPOLOGY, node, within_node


def placed(name: str, node_name: str, gpus: tuple[int, ...], start: int, end: int | None) -> Placement:
    return Placement(name, "team-a", (NodeAllocation(node_name, gpus),), (), start_s=start, end_s=end)


def test_prerequisites_are_the_graphs_edges_after_and_datasets() -> None:
    p = ir.Program(tenants=(ir.Tenant("team-a"),), intents=(
        replace(intent("make", "team-a"), produces=(ir.Ref("d"),)),
        replace(intent("use", "team-a", after=("root",)), consumes=(ir.Ref("d"),)),
        intent("root", "team-a")))
    assert prerequisites(p) == {"use": ("make", "root")}


def test_the_gpu_predecessor_is_the_intent_just_before_on_each_gpu() -> None:
    found = gpu_predecessors([
        placed("a", "n1", (0, 1), 0, 100),
        placed("b", "n1", (0, 1), 100, 200),       # after a on both GPUs
        placed("c", "n1", (1, 2), 200, 300),       # after b on GPU 1 only (a is not the one just before)
        placed("d", "n2", (0,), 0, None),          # open-ended: precedes nothing
        placed("e", "n2", (0,), 50, 60),           # overlaps d: no edge
    ])
    assert found == {"b": ("a",), "c": ("b",)}


def test_a_quota_bound_tenants_intents_wait_for_those_it_starts_just_before() -> None:
    """Per tenant with a GPU quota, in the plan's order of starts: each start group waits for
    the last earlier one (not every earlier one: those are released in turn); intents of a
    tenant without a quota, GPU-less and open-ended ones are not ordered."""
    p = ir.Program(tenants=(ir.Tenant("team-a", quota_gpus=8), ir.Tenant("team-b")), intents=tuple(
        intent(n, "team-b" if n.startswith("b") else "team-a") for n in ("a1", "a2", "a3", "a4", "cpu", "b1", "b2")))
    plan = [placed("a1", "n1", (0,), 0, 10), placed("a2", "n2", (0,), 5, 9), placed("a3", "n3", (0,), 5, 20),
            placed("a4", "n1", (1,), 30, 40), Placement("cpu", "team-a", (), (), start_s=1, end_s=2),
            replace(placed("b1", "n4", (0,), 0, 1), tenant="team-b"),
            replace(placed("b2", "n4", (0,), 3, 4), tenant="team-b")]
    assert quota_predecessors(p, plan) == {"a2": ("a1",), "a3": ("a1",), "a4": ("a2", "a3")}
    order = release_order(p, plan)
    assert order.released_after("a4") == ("a2", "a3") and order.released_after("b2") == ()
    assert release_order(p, plan, gpu_order=False).released_after("a4") == (), "the edges baseline: Kueue's order"
    assert release_order(p, plan, tenant_order=False).released_after("a4") == (), "the unordered baseline"


def test_gpu_predecessors_hold_back_unless_asked_not_to() -> None:
    p = ir.Program(tenants=(ir.Tenant("team-a"),), intents=(intent("a", "team-a"), intent("b", "team-a")))
    plan = [placed("a", "n1", (0,), 0, 10), placed("b", "n1", (0,), 10, 20)]
    assert release_order(p, plan, gpu_order=True).gpus_after("b") == ("a",)
    assert release_order(p, plan, gpu_order=False).gpus_after("b") == ()
    assert release_order(p, {x.intent: x for x in plan}, gpu_order=True).gpus_after("b") == ("a",)


def test_intents_released_together_do_not_keep_one_node_the_plan_uses_one_after_the_other() -> None:
    """Planned one after the other on one node and released at the same moment: the later
    one is re-planned, and goes where there is room now, not Pending beside the first."""
    two = ir.Program(tenants=(ir.Tenant("team-a", tier="gold"),),
                     intents=(within_node(intent("a", "team-a", gpus=8)), within_node(intent("b", "team-a", gpus=8))))
    busy = [n.name for n in TOPOLOGY.topology.nodes]
    plan = make_plan(two, TOPOLOGY)[0]
    pa, pb = plan.placement("a"), plan.placement("b")
    assert pa is not None and pb is not None
    # the preview as if the plan had queued b behind a on a's node
    preview = replace(plan, placements=(pa, replace(pb, allocations=pa.allocations, start_s=pa.end_s or 0,
                                                    end_s=(pa.end_s or 0) * 2)))
    free = occupancy(TOPOLOGY.topology, [node(n) for n in busy], [])[0]
    assert unfit(preview, ["a", "b"], free) == (), "each alone fits"
    assert unfit(preview, ["a", "b"], free, together=True) == ("b",), "together, b would sit Pending"


def test_what_the_fresh_plan_only_queues_waits_for_room() -> None:
    """A re-plan of intents released at once that places one only later (behind another of
    them) blocks it: created now, it would sit Pending."""
    two = ir.Program(tenants=(ir.Tenant("team-a", tier="gold"),),
                     intents=tuple(within_node(intent(n, "team-a", gpus=8)) for n in ("a", "b", "c", "d")))
    fresh = make_plan(two, TOPOLOGY)[0]
    later = sorted(p.intent for p in fresh.placements if p.start_s > 0)
    assert later, "four 8-GPU intents on three nodes: one waits"
    assert [b.intent for b in blocked(fresh, ["a", "b", "c", "d"], now=True)] == later
    assert blocked(fresh, ["a", "b", "c", "d"]) == ()


def quota(hard: dict[str, str], used: dict[str, str]) -> dict[str, object]:
    return {"status": {"hard": hard, "used": used}}


def test_gpu_room_is_what_the_quota_controller_last_counted() -> None:
    gpu = "requests.nvidia.com/gpu"
    assert gpu_room(quota({gpu: "16", "requests.cpu": "4"}, {gpu: "8", "requests.cpu": "4"})) == 8
    dra = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
    assert gpu_room(quota({dra: "8"}, {})) == 8                       # nothing counted yet
    assert gpu_room(quota({"requests.cpu": "4"}, {})) is None          # says nothing of GPUs
    assert gpu_room(None) is None and gpu_room({"spec": {"hard": {gpu: "8"}}}) is None   # not counted yet


def test_the_plan_gives_each_intent_its_gpus_for_the_quota_check() -> None:
    p = ir.Program(tenants=(ir.Tenant("team-a"),), intents=(intent("a", "team-a"), intent("b", "team-a")))
    plan = [placed("a", "n1", (0, 1), 0, 10), placed("b", "n1", (0,), 10, 20)]
    assert dict(release_order(p, plan).gpus) == {"a": 2, "b": 1}
