"""The live forecast's core (intentc/forecast/core.py): phases, ETAs and their causes.

Each case makes a plan with the real planner, says what the cluster did
(an `Observation`, as `forecast/observe.py` reads it from the API server),
and checks the forecast against what that implies: a job ending early pulls
its dependants in, one overrunning its declared duration pushes them out by
the overrun, a failed dependency blocks, an unusable planned node moves the
intent.  Times are plan seconds; `now` is passed in, never read.
"""

from __future__ import annotations

from dataclasses import replace

from intentc import ir
from intentc.forecast.core import forecast, phase_of
from intentc.forecast.model import JobObservation, NodeObservation, Observation, Phase
from intentc.plan.model import Busy, Plan
from intentc.plan.planner import make_plan
from tests.test_plan import job, loaded, node, serve

EPOCH = 1_800_000_000.0          # the Unix time of plan time 0 in these cases
HOUR = 3600


def after(intent: ir.Intent, *names: str) -> ir.Intent:
    return replace(intent, trigger=ir.Trigger("after", tuple(ir.Ref(n) for n in names)))


TOPOLOGY = loaded(node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r"))
NODES = (NodeObservation("n1"), NodeObservation("n2"))


def chain() -> tuple[ir.Program, Plan]:
    """a (1 h) -> b (1 h) -> c (1 h), 8 GPUs each, on two 8-GPU nodes."""
    program = ir.Program(intents=(job("a", gpus=8), after(job("b", gpus=8), "a"), after(job("c", gpus=8), "b")))
    plan, diags = make_plan(program, TOPOLOGY)
    assert not plan.unplaced, diags
    return program, plan


def held(plan: Plan, intent: str) -> tuple[Busy, ...]:
    p = plan.placement(intent)
    assert p is not None
    return tuple(Busy(a.node, a.gpus) for a in p.allocations)


def test_phases_from_what_the_job_shows() -> None:
    assert phase_of(None) is Phase.QUEUED
    assert phase_of(JobObservation("a", EPOCH, suspended=True, admitted=False)) is Phase.QUEUED
    assert phase_of(JobObservation("a", EPOCH, suspended=True, admitted=True)) is Phase.ADMITTED
    assert phase_of(JobObservation("a", EPOCH)) is Phase.ADMITTED
    assert phase_of(JobObservation("a", EPOCH, started=EPOCH, running=True)) is Phase.RUNNING
    assert phase_of(JobObservation("a", EPOCH, started=EPOCH, completed=EPOCH + 5)) is Phase.SUCCEEDED
    assert phase_of(JobObservation("a", EPOCH, started=EPOCH, failed=EPOCH + 5)) is Phase.FAILED


def test_nothing_created_yet_forecasts_the_plan_from_now() -> None:
    program, plan = chain()
    f = forecast(program, plan, TOPOLOGY, Observation(nodes=NODES), now=EPOCH)
    assert f.epoch == EPOCH and f.now_s == 0
    for name in ("a", "b", "c"):
        p, r = plan.placement(name), f.of(name)
        assert p is not None and r is not None
        assert r.phase is Phase.QUEUED
        assert (r.eta_start_s, r.eta_end_s) == (p.start_s, p.end_s) and r.behind_s == 0


def test_a_running_job_ends_at_its_start_plus_its_duration_and_dependants_follow() -> None:
    program, plan = chain()
    a = JobObservation("a", EPOCH, started=EPOCH + 60, running=True, gpus=held(plan, "a"))
    f = forecast(program, plan, TOPOLOGY, Observation((a,), NODES, epoch=EPOCH), now=EPOCH + 600)
    ra, rb, rc = f.of("a"), f.of("b"), f.of("c")
    assert ra is not None and rb is not None and rc is not None
    assert ra.phase is Phase.RUNNING and ra.actual_start_s == 60 and ra.eta_end_s == 60 + HOUR
    assert not ra.drift and ra.behind_s == 60
    assert (rb.eta_start_s, rb.eta_end_s) == (60 + HOUR, 60 + 2 * HOUR) and rb.behind_s == 60
    assert rc.eta_start_s == 60 + 2 * HOUR


def test_an_early_end_pulls_the_dependants_in() -> None:
    program, plan = chain()
    a = JobObservation("a", EPOCH, started=EPOCH, completed=EPOCH + 1200)
    f = forecast(program, plan, TOPOLOGY, Observation((a,), NODES, epoch=EPOCH), now=EPOCH + 1500)
    ra, rb, rc = f.of("a"), f.of("b"), f.of("c")
    assert ra is not None and rb is not None and rc is not None
    assert ra.phase is Phase.SUCCEEDED and (ra.actual_start_s, ra.actual_end_s) == (0, 1200)
    assert ra.behind_s == 1200 - HOUR                       # ahead of plan
    # b can start at once (now), c an hour later: both ahead of their planned times
    assert (rb.eta_start_s, rb.eta_end_s) == (1500, 1500 + HOUR)
    assert rb.behind_s == 1500 + HOUR - 2 * HOUR < 0
    assert rc.eta_start_s == 1500 + HOUR


def test_an_overrun_is_schedule_drift_and_pushes_every_dependant() -> None:
    program, plan = chain()
    now = EPOCH + HOUR + 900                                # a is 15 min past its declared hour
    a = JobObservation("a", EPOCH, started=EPOCH, running=True, gpus=held(plan, "a"))
    f = forecast(program, plan, TOPOLOGY, Observation((a,), NODES, epoch=EPOCH), now=now)
    ra, rb, rc = f.of("a"), f.of("b"), f.of("c")
    assert ra is not None and rb is not None and rc is not None
    assert ra.phase is Phase.RUNNING and ra.drift
    assert ra.eta_end_s == HOUR + 900 and ra.behind_s == 900       # its end is now-based
    assert "schedule drift" in ra.reason and "15m" in ra.reason
    assert ra.pushed == ("b", "c") and "pushes 2 dependant(s) by up to 15m" in ra.reason
    pb, pc = plan.placement("b"), plan.placement("c")
    assert pb is not None and pc is not None
    assert rb.eta_start_s == HOUR + 900 == pb.start_s + 900 and rb.behind_s == 900
    assert rc.eta_start_s == pc.start_s + 900 and rc.behind_s == 900
    assert rb.delayed_by == ("a",) == rc.delayed_by and "waits for a (schedule drift)" in rb.reason
    assert f.lag() == {"team-a": 900}


def test_a_failed_dependency_blocks_everything_after_it() -> None:
    program, plan = chain()
    a = JobObservation("a", EPOCH, started=EPOCH, failed=EPOCH + 300, failure="BackoffLimitExceeded")
    f = forecast(program, plan, TOPOLOGY, Observation((a,), NODES, epoch=EPOCH), now=EPOCH + 400)
    ra, rb, rc = f.of("a"), f.of("b"), f.of("c")
    assert ra is not None and rb is not None and rc is not None
    assert ra.phase is Phase.FAILED and ra.actual_end_s == 300 and ra.reason == "BackoffLimitExceeded"
    assert rb.phase is Phase.BLOCKED and rb.reason == "waits for failed a" and rb.eta_start_s is None
    assert rc.phase is Phase.BLOCKED and rc.reason == "waits for failed a" and rc.behind_s is None


def test_an_intent_planned_on_a_node_that_went_notready_is_re_placed_and_its_eta_moves() -> None:
    # x (8 GPUs, 1 h) and y (8 GPUs, 1 h) run side by side on n1 and n2; z waits for y
    program = ir.Program(intents=(job("x", gpus=8), job("y", gpus=8), after(job("z", gpus=8), "y")))
    plan, _ = make_plan(program, TOPOLOGY)
    px, py = plan.placement("x"), plan.placement("y")
    assert px is not None and py is not None and px.start_s == py.start_s == 0
    bad = py.nodes[0]
    good = px.nodes[0]
    x = JobObservation("x", EPOCH, started=EPOCH, running=True, gpus=held(plan, "x"))
    nodes = tuple(NodeObservation(n.name, "NotReady" if n.name == bad else None) for n in NODES)
    f = forecast(program, plan, TOPOLOGY, Observation((x,), nodes, epoch=EPOCH), now=EPOCH + 60)
    ry, rz = f.of("y"), f.of("z")
    assert ry is not None and rz is not None
    # y cannot run on its node; the only other node is x's until x ends
    assert ry.phase is Phase.QUEUED and ry.planned_nodes == (bad,) and ry.nodes == (good,)
    assert ry.eta_start_s == HOUR and ry.behind_s == HOUR
    assert f"re-placed: {bad} NotReady" in ry.reason
    assert rz.eta_start_s == 2 * HOUR and rz.nodes == (good,)
    # the same cluster with the node back: the plan holds again (y starts now)
    back = forecast(program, plan, TOPOLOGY, Observation((x,), NODES, epoch=EPOCH), now=EPOCH + 60)
    ry2 = back.of("y")
    assert ry2 is not None and ry2.eta_start_s == 60 and ry2.nodes == (bad,) and ry2.reason == ""


def test_a_node_gone_from_the_cluster_or_gpus_held_by_foreign_pods_count_too() -> None:
    program = ir.Program(intents=(job("x", gpus=8),))
    plan, _ = make_plan(program, TOPOLOGY)
    px = plan.placement("x")
    assert px is not None
    only = tuple(n for n in NODES if n.name not in px.nodes)
    f = forecast(program, plan, TOPOLOGY, Observation(nodes=only), now=EPOCH)
    rx = f.of("x")
    assert rx is not None and rx.nodes == (only[0].name,) and "not in the cluster" in rx.reason
    foreign = tuple(Busy(n.name, tuple(range(8))) for n in NODES)
    g = forecast(program, plan, TOPOLOGY, Observation(nodes=NODES, foreign=foreign), now=EPOCH)
    gx = g.of("x")
    assert gx is not None and gx.phase is Phase.BLOCKED and "cannot be placed" in gx.reason


def test_a_running_job_keeps_its_gpus_counted_in_its_tenants_quota() -> None:
    """Tenant `capped` may hold 8 GPUs: x and y (8 each, 1 h) run one after the other although
    two nodes are free.  With x running, the re-plan of the rest still charges x's GPUs to the
    tenant, so y is expected when x ends, not now on the idle node."""
    program = ir.Program(intents=(job("x", tenant="capped", gpus=8), job("y", tenant="capped", gpus=8)),
                         tenants=(ir.Tenant("capped", quota_gpus=8),))
    plan, _ = make_plan(program, TOPOLOGY)
    px, py = plan.placement("x"), plan.placement("y")
    assert px is not None and py is not None and py.start_s == px.end_s == HOUR
    x = JobObservation("x", EPOCH, started=EPOCH, running=True, gpus=held(plan, "x"))
    f = forecast(program, plan, TOPOLOGY, Observation((x,), NODES, epoch=EPOCH), now=EPOCH + 600)
    ry = f.of("y")
    assert ry is not None and ry.phase is Phase.QUEUED
    assert ry.eta_start_s == HOUR and ry.behind_s == 0


def test_a_running_serve_intent_is_open_ended_and_its_dependants_may_start() -> None:
    program = ir.Program(intents=(serve("api", gpus=4), after(job("load", gpus=4), "api")))
    plan, _ = make_plan(program, TOPOLOGY)
    api = JobObservation("api", EPOCH, started=EPOCH, running=True, gpus=held(plan, "api"))
    f = forecast(program, plan, TOPOLOGY, Observation((api,), NODES, epoch=EPOCH), now=EPOCH + 30)
    ra, rl = f.of("api"), f.of("load")
    assert ra is not None and rl is not None
    assert ra.phase is Phase.RUNNING and ra.eta_end_s is None and not ra.drift
    assert rl.eta_start_s == 30


def test_the_forecast_is_deterministic() -> None:
    program, plan = chain()
    a = JobObservation("a", EPOCH, started=EPOCH, running=True, gpus=held(plan, "a"))
    obs = Observation((a,), NODES, epoch=EPOCH)
    first = forecast(program, plan, TOPOLOGY, obs, now=EPOCH + HOUR + 10)
    again = forecast(program, plan, TOPOLOGY, obs, now=EPOCH + HOUR + 10)
    assert first == again
    shuffled = ir.Program(intents=tuple(reversed(program.intents)))
    assert forecast(shuffled, plan, TOPOLOGY, obs, now=EPOCH + HOUR + 10) == first


def test_the_table_and_the_document_say_the_same_in_plan_time_and_in_utc() -> None:
    from intentc.forecast.text import document, render_table

    program, plan = chain()
    a = JobObservation("a", EPOCH, started=EPOCH, running=True, gpus=held(plan, "a"))
    f = forecast(program, plan, TOPOLOGY, Observation((a,), NODES, epoch=EPOCH), now=EPOCH + HOUR + 900)
    lines = render_table(f).splitlines()
    assert lines[0] == "plan time +1h15m now (epoch 2027-01-15T08:00:00Z)"
    assert lines[1].split() == ["NAME", "TENANT", "PHASE", "PLANNED", "START", "START", "ETA", "BEHIND", "REASON"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["a"][:7] == ["a", "team-a", "Running", "0", "0", "+1h15m", "+15m"]
    assert rows["b"][:7] == ["b", "team-a", "Queued", "+1h", "~+1h15m", "+2h15m", "+15m"]
    doc = document(f)
    assert doc["epoch"] == "2027-01-15T08:00:00Z" and doc["now"] == "2027-01-15T09:15:00Z"
    b = next(i for i in doc["intents"] if i["name"] == "b")
    assert (b["phase"], b["plannedStart"], b["etaStart"], b["eta"]) == (
        "Queued", "2027-01-15T09:00:00Z", "2027-01-15T09:15:00Z", "2027-01-15T10:15:00Z")
    assert (b["behindSeconds"], b["behind"], b["delayedBy"]) == (900, "+15m", ["a"])
    assert doc["tenants"] == [{"tenant": "team-a", "lagSeconds": 900}]


def test_watch_reads_and_prints_again_after_each_interval() -> None:
    from intentc.cli.status import _repeat

    said: list[str] = []

    def once() -> int:
        said.append("forecast")
        return 0
    _repeat(once, 7.5, lambda s: said.append(f"sleep {s}"), lambda: said.append("---"), rounds=2)
    assert said == ["sleep 7.5", "---", "forecast", "sleep 7.5", "---", "forecast"]
