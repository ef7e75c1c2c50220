"""Issue 37: the cases the independent verifier found, each as a regression test.

SLA order through quotas (a lower class of the same tenant holding the quota a
waiting higher class needs, on nodes the waiting one cannot use), reservations
for the head of a class (a large gang overtaken again and again by smaller
intents of its own class), the critical path over the intents that run only,
and isolation planned for rather than only checked (E1020); then the orderings
the planner tries, all of which keep SLA order (`schedule.ORDERINGS`).
"""

from __future__ import annotations

import pytest

from benchmarks.plan_quality_gen import make_instance, to_program, to_topology
from intentc import ir
from intentc.frontend.dsl import parse
from intentc.frontend.sources import SourceFile
from intentc.plan import planner
from intentc.plan.admission import TenantTerms
from intentc.plan.cluster import Cluster
from intentc.plan.jsonio import plan_to_obj
from intentc.plan.model import NodeAllocation, Placement, Plan
from intentc.plan.planner import _quota_slips, make_plan, matrix_source
from intentc.plan.placer import Request
from intentc.plan.repack import Seated
from intentc.plan.schedule import ORDERINGS, Job, Outcome
from intentc.topology.load import LoadedTopology
from intentc.topology.nvsmi import default_matrix
from tests.plan_verify import sla_inversions
from tests.test_plan import job, loaded, node, program


def _start(plan: Plan, name: str) -> int:
    p = plan.placement(name)
    assert p is not None, name
    return p.start_s


def _quota_program(quota: int) -> ir.Program:
    """Tenant team-a with a quota of `quota` GPUs; a P0 of team-b holds 8 H100s within a
    node for 1 h; team-a's P1 `h` wants the same, so it waits; its P3 `l` wants 8 GPUs
    of any kind for 10 h."""
    return program(
        job("other", tenant="team-b", gpus=8, product="H100-80GB", within="node", sla="P0", duration="1h"),
        job("h", gpus=8, product="H100-80GB", within="node", sla="P1", duration="1h"),
        job("l", gpus=8, sla="P3", duration="10h"),
        tenants=(ir.Tenant("team-a", quota_gpus=quota), ir.Tenant("team-b")))


def _quota_case(p3_node: ir.TopologyNode) -> Plan:
    """`_quota_program(8)` on the only H100 node and `p3_node`, where `l` could run at 0
    and `h` cannot."""
    topo = loaded(node("h100", 8, "H100-80GB", rack="r1"), p3_node)
    plan, diags = make_plan(_quota_program(8), topo)
    assert not plan.unplaced and not [d for d in diags if d.is_error]
    return plan


def test_a_lower_class_does_not_hold_the_quota_a_waiting_higher_class_needs() -> None:
    plan = _quota_case(node("a100", 8, "A100-80GB", rack="r2"))
    assert _start(plan, "other") == 0
    assert _start(plan, "h") == 3600                # not 10 h: `l` did not take the quota at 0
    assert _start(plan, "l") >= 7200


def test_the_quota_rule_counts_nodes_in_a_domain_too_small_for_the_waiting_one() -> None:
    """The P1 gang needs 16 GPUs within a rack; the P0 of another tenant holds half of the one
    rack that can hold it for 1 h.  The P3 (A100s only) fits on a rack of two 4-GPU nodes
    that can never hold the gang: the GPU gate never looks there (that rack cannot delay the gang through
    GPUs), the quota still ties them."""
    topo = loaded(node("big-0", 8, rack="r1", zone="z"), node("big-1", 8, rack="r1", zone="z"),
                  node("small-0", 4, "A100-80GB", rack="r2", zone="z"),
                  node("small-1", 4, "A100-80GB", rack="r2", zone="z"))
    prog = program(
        job("other", tenant="team-b", gpus=8, within="node", sla="P0", duration="1h"),
        job("h", gpus=16, within="rack", sla="P1", duration="1h"),
        job("l", gpus=8, product="A100-80GB", within="rack", sla="P3", duration="10h"),
        tenants=(ir.Tenant("team-a", quota_gpus=16), ir.Tenant("team-b")))
    plan, _ = make_plan(prog, topo)
    assert not plan.unplaced
    other = plan.placement("other")
    assert other is not None and other.nodes[0].startswith("big")
    assert _start(plan, "h") == 3600
    assert _start(plan, "l") >= 7200


def test_a_lower_class_still_starts_when_the_quota_leaves_room_for_both() -> None:
    topo = loaded(node("h100", 8, "H100-80GB", rack="r1"), node("a100", 8, "A100-80GB", rack="r2"))
    plan, _ = make_plan(_quota_program(16), topo)
    assert _start(plan, "l") == 0 and _start(plan, "h") == 3600


def test_the_head_of_a_class_is_not_overtaken_again_and_again() -> None:
    """A 24-GPU gang on three 8-GPU nodes held by staggered 1-GPU P1 jobs (they end one a
    minute from 30 m to 53 m).  Same-class 1-GPU jobs go first in their tenant's queue
    (smaller gangs first); without a reservation each takes a GPU as it frees, and the gang
    waits for the whole stream of them.  With it, the gang starts when the P1 jobs have ended."""
    topo = loaded(*(node(f"n{i}", 8, rack="r1") for i in range(3)))
    first = [job(f"a{i:02d}", gpus=1, sla="P1", duration=f"{30 + i}m") for i in range(24)]
    gang = job("gang", gpus=24, sla="P2", duration="1h")
    later = [job(f"z{i:02d}", gpus=1, sla="P2", duration="2h") for i in range(24)]
    plan, _ = make_plan(program(*first, gang, *later), topo)
    assert not plan.unplaced
    assert _start(plan, "gang") == 53 * 60
    for i in range(24):                 # nothing of its class held a GPU past its start
        assert _start(plan, f"z{i:02d}") >= 53 * 60 + 3600


def test_the_critical_path_counts_only_intents_that_run() -> None:
    """A chain of 11 h behind an intent no node can hold is refused; the plan runs 1 h."""
    topo = loaded(node("n0", 8, rack="r1"))
    chain = [job("big", gpus=16, within="node", duration="1h")]
    for i in range(10):
        step = job(f"step-{i}", gpus=1, duration="1h")
        chain.append(ir.Intent(step.name, ir.Trigger("after", (ir.Ref(chain[-1].name),)), step.action,
                               step.context, step.constraints))
    plan, _ = make_plan(program(job("small", gpus=1, duration="1h"), *chain), topo)
    m = plan.metrics
    assert {u.intent for u in plan.unplaced} == {"big", *(f"step-{i}" for i in range(10))}
    assert m.makespan_s == 3600 == m.critical_path_s
    assert m.critical_path == ("small",)
    assert m.refused_path == ("big", *(f"step-{i}" for i in range(10))) and m.refused_path_s == 11 * 3600


def test_with_nothing_refused_the_critical_path_is_the_graph_s() -> None:
    topo = loaded(node("n0", 8, rack="r1"))
    a = job("a", gpus=1, duration="2h")
    b = job("b", gpus=1, duration="1h")
    b = ir.Intent("b", ir.Trigger("after", (ir.Ref("a"),)), b.action, b.context, b.constraints)
    plan, _ = make_plan(program(a, b, job("c", gpus=1, duration="2h")), topo)
    assert plan.metrics.critical_path == ("a", "b") and plan.metrics.critical_path_s == 3 * 3600
    assert plan.metrics.refused_path == () and plan.metrics.refused_path_s == 0


PCI = """\
tenant payments { tier: gold }
tenant research { tier: bronze }

intent fraud-model {
  trigger: on push
  action: training image "fraud:1"
  context: tenant payments, tags [pci-dss-compliant]
  constraints: gpus 4, sla P2, duration 2h
}

intent research-job {
  trigger: on push
  action: training image "research:1"
  context: tenant research
  constraints: gpus 4, sla P2, duration 1h
}
"""


def _pci_topology(*nvlink: str) -> LoadedTopology:
    nodes = tuple(ir.TopologyNode(f"a{i + 1}", 8, "H100-80GB", "80Gi", domains=(("nvlink", d),))
                  for i, d in enumerate(nvlink))
    return LoadedTopology(ir.Topology("t", ("nvlink", "node"), nodes),
                          tuple((n.name, default_matrix(8, n.gpu_product)) for n in nodes))


def _pci_plan(text: str, *nvlink: str) -> tuple[Plan, list[str]]:
    prog, diags = parse(SourceFile("t.intent", text))
    assert not diags
    plan, found = make_plan(prog, _pci_topology(*nvlink))
    return plan, [d.code for d in found if d.is_error]


def _pci_placed(text: str, *nvlink: str) -> tuple[Placement, Placement]:
    """The placements of the PCI job (fraud-model) and the other tenant's (research-job)
    in a plan of `text` with no error."""
    plan, errors = _pci_plan(text, *nvlink)
    assert errors == []
    fraud, research = plan.placement("fraud-model"), plan.placement("research-job")
    assert fraud is not None and research is not None
    return fraud, research


def test_isolation_keeps_another_tenant_off_the_node_in_space() -> None:
    """One 8-GPU node per NVLink domain: the two 4-GPU jobs could share a node (best fit
    would put them together); the research job goes to the other domain instead."""
    fraud, research = _pci_placed(PCI, "nvl-a", "nvl-b")
    assert fraud.start_s == research.start_s == 0 and fraud.nodes != research.nodes


def test_isolation_keeps_another_tenant_out_of_the_nvlink_domain_in_time() -> None:
    """Both nodes in one NVLink domain: the research job waits until the PCI job has ended."""
    fraud, research = _pci_placed(PCI, "nvl-a", "nvl-a")
    assert fraud.start_s == 0 and research.start_s == fraud.end_s == 7200


def test_isolation_holds_in_time_the_other_way_round() -> None:
    """The other tenant's job comes first (a higher class): the PCI job waits for it to end."""
    text = PCI.replace("sla P2, duration 1h", "sla P0, duration 1h")
    fraud, research = _pci_placed(text, "nvl-a", "nvl-a")
    assert research.start_s == 0 and fraud.start_s == research.end_s == 3600


def test_e1020_remains_where_isolation_is_impossible() -> None:
    """Both open-ended in the one NVLink domain: nothing ever frees it, so the research
    server is placed beside the PCI one, and the plan says so (E1020), rather than refused."""
    text = (PCI.replace('action: training image "fraud:1"', 'action: serve image "fraud:1"')
            .replace('action: training image "research:1"', 'action: serve image "research:1"'))
    plan, errors = _pci_plan(text, "nvl-a", "nvl-a")
    assert errors == ["E1020"]
    assert not plan.unplaced


# --------------------------------------------------------------------------
# The orderings the planner tries (`schedule.ORDERINGS`, `planner._place_all`)
# --------------------------------------------------------------------------

def _three_on_two(sla: str) -> Plan:
    """Two 8-GPU nodes; whole-node jobs of one class: a and b of 1 h, c of 2 h.  In the
    default order (smaller gangs, then the name) a and b start first and c runs last."""
    topo = loaded(node("n0", 8, rack="r1"), node("n1", 8, rack="r1"))
    prog = program(job("a", gpus=8, sla=sla, duration="1h"), job("b", gpus=8, sla=sla, duration="1h"),
                   job("c", gpus=8, sla=sla, duration="2h"))
    plan, _ = make_plan(prog, topo)
    return plan


def test_a_low_class_runs_its_longest_intent_first_when_that_ends_the_plan_sooner() -> None:
    plan = _three_on_two("P3")
    assert _start(plan, "c") == 0
    assert plan.metrics.makespan_s == 7200          # not 3 h: c is not left for the end


def test_p0_and_p1_keep_their_order_for_latency() -> None:
    """In the classes that pay for latency the shortest intents go first (the least waiting
    in all); the orderings for the makespan are for the classes below them."""
    plan = _three_on_two("P1")
    assert _start(plan, "a") == _start(plan, "b") == 0 and _start(plan, "c") == 3600


def test_every_ordering_keeps_sla_order_and_the_choice_is_deterministic() -> None:
    """The same input planned twice gives the same plan; each ordering alone leaves no
    intent of a higher class waiting while a lower class holds GPUs it could use (the
    independent check of tests/plan_verify.py on a quota-bound instance of the benchmark;
    through the quota two of them do here, which is why `_quota_slips` decides first)."""
    inst = make_instance(6, "quota")
    prog, topo = to_program(inst), to_topology(inst)
    quotas = {t["name"]: t["quota"] for t in inst["tenants"]}
    first, _ = make_plan(prog, topo)
    again, _ = make_plan(prog, topo)
    assert plan_to_obj(first) == plan_to_obj(again)
    found = sla_inversions(plan_to_obj(first), inst["jobs"], inst["nodes"], quotas)
    assert found == {"gpu": set(), "quota": set()}
    default = planner.ORDERINGS
    try:
        for ordering in ORDERINGS:
            planner.ORDERINGS = (ordering,)
            alone, _ = make_plan(prog, topo)
            found = sla_inversions(plan_to_obj(alone), inst["jobs"], inst["nodes"], quotas)
            assert not found["gpu"], ordering         # the GPU gates are the same in each
            if ordering == ORDERINGS[0]:                # the default: what the choice may only improve on
                assert not found["quota"] and alone.metrics.makespan_s >= first.metrics.makespan_s
    finally:
        planner.ORDERINGS = default


def test_where_every_ordering_leaves_a_quota_wait_the_order_of_before_is_tried() -> None:
    """On this instance each of the four orderings alone leaves an intent waiting for quota
    that lower-class intents of its tenant took after it was ready; the plan made of them
    has none (`schedule.FALLBACK`), by the independent check."""
    inst = make_instance(28, "quota")
    prog, topo = to_program(inst), to_topology(inst)
    quotas = {t["name"]: t["quota"] for t in inst["tenants"]}
    default = planner.ORDERINGS
    try:
        for ordering in ORDERINGS:
            planner.ORDERINGS = (ordering,)
            alone, _ = make_plan(prog, topo)
            assert sla_inversions(plan_to_obj(alone), inst["jobs"], inst["nodes"], quotas)["quota"], ordering
    finally:
        planner.ORDERINGS = default
    plan, _ = make_plan(prog, topo)
    assert sla_inversions(plan_to_obj(plan), inst["jobs"], inst["nodes"], quotas) == {"gpu": set(), "quota": set()}


def test_an_ordering_that_leaves_an_intent_waiting_for_a_lower_class_s_quota_loses() -> None:
    """The quota rule lets a lower class start while the quota holds it and every waiting
    higher-class intent; a higher-class intent ready later may take that room, and the one
    that waited is then held off by the lower class's quota (`planner._quota_slips`)."""
    topo = loaded(*(node(f"n{i}", 8, rack="r1") for i in range(3)))
    intents = {i.name: i for i in (job("h", gpus=8, sla="P2"), job("late", gpus=8, sla="P2"),
                                   job("low", gpus=4, sla="P3"))}
    jobs = {n: Job(i, 3600, ()) for n, i in intents.items()}
    terms = {"team-a": TenantTerms(2, 16)}
    run = Outcome(Cluster(topo.topology, matrix_source(topo)))
    where = {"low": ("n0", (0, 1, 2, 3)), "late": ("n1", tuple(range(8))), "h": ("n2", tuple(range(8)))}
    for name, (on, gpus) in where.items():
        run.seated[name] = Seated(Request.of(intents[name]),
                                  Placement(name, "team-a", (NodeAllocation(on, gpus),), ()))
    # h waits from 0 (another tenant holds n2 until 100, say); low starts at 0 (4 + 8 <= 16);
    # late, ready at 100, takes the rest of the quota: from 100 on h would fit on n2, not in the quota
    run.times.update({"low": (0, 3600, 0), "late": (100, 3700, 100), "h": (3600, 7200, 0)})
    assert _quota_slips(run, jobs, terms) == 1
    run.times.update({"late": (3600, 7200, 100), "h": (100, 3700, 0)})
    assert _quota_slips(run, jobs, terms) == 0
    # where h would not find 8 GPUs at once even without low, it waits for GPUs, not quota
    terms["team-b"] = TenantTerms(2, None)
    for name, on, gpus in (("other", "n2", tuple(range(8))), ("beside", "n0", (4, 5, 6, 7))):
        jobs[name] = Job(job(name, tenant="team-b", gpus=len(gpus)), 3600, ())
        run.seated[name] = Seated(Request.of(jobs[name].intent),
                                  Placement(name, "team-b", (NodeAllocation(on, gpus),), ()))
        run.times[name] = (0, 3600, 0)
    run.times.update({"late": (100, 3700, 100), "h": (3600, 7200, 0)})
    assert _quota_slips(run, jobs, terms) == 0


def test_a_plan_too_large_for_several_orderings_is_made_with_the_default_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "PORTFOLIO_MAX_INTENTS", 2)
    plan = _three_on_two("P3")
    assert _start(plan, "a") == _start(plan, "b") == 0 and plan.metrics.makespan_s == 3 * 3600
