"""The plan over time: intervals, queueing, reuse of GPUs, and the live-state input.

The 30-step chain of issue 12 goes through the real CLI (`intentc compile`)
and its plan.json is checked by `plan_verify`, which knows nothing of the
planner.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from intentc import ir
from intentc.cli import app
from intentc.plan.model import Busy, Occupancy
from intentc.plan.planner import make_plan
from tests.plan_verify import order_violations, over_capacity, overlaps
from tests.test_plan import job, loaded, node, queued, serve

ROOT = Path(__file__).parent.parent
CLUSTER = ROOT / "examples" / "topologies" / "cluster.yaml"
runner = CliRunner()

TENANT = 'tenant team-a {\n  tier: gold\n  quota: gpus 96\n}\n'


def _chain(n: int, gpus: int) -> str:
    out = [TENANT]
    for i in range(n):
        trigger = f"after step-{i - 1:02d}" if i else "push"
        out.append(f'intent step-{i:02d} {{\n  trigger: {trigger}\n'
                   f'  action: training image "ghcr.io/acme/train:1" command ["train"]\n'
                   f'  context: tenant team-a\n'
                   f'  constraints: cpu 8, memory 64Gi, gpus {gpus}, duration 1h\n}}\n')
    return "\n".join(out)


def test_chain_of_30_sequential_8_gpu_jobs_compiles_and_reuses_gpus(tmp_path: Path) -> None:
    (tmp_path / "chain.intent").write_text(_chain(30, 8), encoding="utf-8")
    out = tmp_path / "build"
    result = runner.invoke(app, ["compile", str(tmp_path / "chain.intent"), "-t", str(CLUSTER),
                                 "-o", str(out), "--commit", "0" * 40])
    assert result.exit_code == 0, result.stderr
    doc = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert doc["unplaced"] == [] and len(doc["placements"]) == 30
    assert overlaps(doc) == []
    after = {f"step-{i:02d}": [f"step-{i - 1:02d}"] for i in range(1, 30)}
    assert order_violations(doc, after) == []
    starts = sorted(p["start_s"] for p in doc["placements"])
    assert starts == [3600 * i for i in range(30)]          # one after the other, no gap
    assert doc["metrics"]["makespan_s"] == 30 * 3600 == doc["metrics"]["critical_path_s"]
    assert doc["metrics"]["gpus_allocated"] == 8             # never more than one at once


def test_the_verifier_sees_an_overlap() -> None:
    doc = {"placements": [
        {"intent": "a", "start_s": 0, "end_s": 10, "ready_s": 0, "allocations": [{"node": "n", "gpus": [0, 1]}]},
        {"intent": "b", "start_s": 5, "end_s": None, "ready_s": 0, "allocations": [{"node": "n", "gpus": [1]}]},
        {"intent": "c", "start_s": 10, "end_s": 20, "ready_s": 10, "allocations": [{"node": "n", "gpus": [0]}]},
    ]}
    assert overlaps(doc) == ["n GPU 1: a [0, 10) and b [5, inf)"]
    assert order_violations(doc, {"b": ["a"], "c": ["a"]}) == ["b starts at 5 before a is done at 10"]
    assert over_capacity(doc, {"n": 1}) == ["a: n GPU 1", "b: n GPU 1"]


def test_a_job_that_does_not_fit_yet_is_queued_with_its_start() -> None:
    plan, diags = make_plan(ir.Program(intents=(job("a", gpus=8, duration="2h"), job("b", gpus=8, duration="30m"))),
                            loaded(node("n1", zone="z", rack="r")))
    assert not diags and not plan.unplaced
    a = plan.placement("a")
    assert a is not None and (a.start_s, a.end_s, a.ready_s) == (0, 7200, 0)      # same size: by name
    b = plan.placement("b")
    assert b is not None and (b.start_s, b.end_s, b.queued_s) == (7200, 7200 + 1800, 7200)
    assert plan.metrics.queued == 1


def test_missing_duration_warns_and_uses_the_kind_default() -> None:
    plan, diags = make_plan(ir.Program(intents=(job("a", gpus=1, duration=None),)),
                            loaded(node("n1", zone="z", rack="r")))
    [d] = diags
    assert d.code == "W0602" and not d.is_error
    assert d.message == '"a" has no `duration`: planned as 30m, the default for batch'
    assert plan.placement("a").end_s == 1800  # type: ignore[union-attr]


def test_serve_runs_open_ended_and_what_follows_it_starts_when_it_is_up() -> None:
    after = ir.Trigger("after", after=(ir.Ref("srv"),))
    follow = job("probe", gpus=1, duration="10m")
    follow = ir.Intent(follow.name, after, follow.action, follow.context, follow.constraints)
    plan, diags = make_plan(ir.Program(intents=(serve("srv", gpus=4), follow)), loaded(node("n1", zone="z", rack="r")))
    assert not diags
    srv = plan.placement("srv")
    assert srv is not None and (srv.start_s, srv.end_s) == (0, None)
    assert plan.placement("probe").start_s == 0  # type: ignore[union-attr]
    assert plan.metrics.makespan_s == 600


def test_dependants_of_a_refused_intent_are_refused_too() -> None:
    after = ir.Trigger("after", after=(ir.Ref("big"),))
    nxt = job("next", gpus=1)
    nxt = ir.Intent(nxt.name, after, nxt.action, nxt.context, nxt.constraints)
    plan, diags = make_plan(ir.Program(intents=(job("big", gpus=64), nxt)), loaded(node("n1", zone="z", rack="r")))
    assert [(u.intent, u.reason) for u in plan.unplaced] == [("big", "no-domain"), ("next", "dependency")]
    assert [d.code for d in diags] == ["E0601", "E0601"]


def test_busy_gpus_and_unavailable_nodes_are_avoided() -> None:
    topo = loaded(node("n1", zone="z", rack="r"), node("n2", zone="z", rack="r"), node("n3", zone="z", rack="r"))
    occupied = Occupancy(busy=(Busy("n1", (0, 1, 2, 3), until_s=7200), Busy("n2", (0,))),
                         unavailable=frozenset({"n3"}))
    plan, diags = make_plan(ir.Program(intents=(job("a", gpus=4, within="node"), job("b", gpus=8, within="node"),
                                                job("c", gpus=7, within="node"))), topo, occupied=occupied)
    assert not diags
    a, b, c = (plan.placement(n) for n in "abc")
    assert a is not None and b is not None and c is not None
    assert a.nodes == ("n1",) and set(a.allocations[0].gpus) == {4, 5, 6, 7} and a.start_s == 0
    assert c.nodes == ("n2",) and 0 not in c.allocations[0].gpus and c.start_s == 0
    assert b.nodes == ("n1",) and b.start_s == 7200          # n1's busy GPUs free at 2h, a ended at 1h
    assert all("n3" not in p.nodes for p in plan.placements)


def test_everything_held_forever_is_refused_not_queued() -> None:
    topo = loaded(node("n1", zone="z", rack="r"))
    plan, _ = make_plan(ir.Program(intents=(job("a", gpus=2),)), topo,
                        occupied=Occupancy(busy=(Busy("n1", tuple(range(7))),)))
    [u] = plan.unplaced
    assert u.reason == "capacity" and "only 1 of 8 GPUs are free once every finite intent has ended" in u.message


def test_quota_holds_at_every_instant() -> None:
    tenants = (ir.Tenant("capped", quota_gpus=4),)
    intents = tuple(job(f"j{i}", "capped", gpus=2, duration=f"{i + 1}h") for i in range(6))
    plan, _ = make_plan(ir.Program(tenants=tenants, intents=intents), loaded(node("n1", zone="z", rack="r")))
    points = sorted({p.start_s for p in plan.placements} | {p.end_s or 0 for p in plan.placements})
    for t in points:
        held = sum(p.gpu_count for p in plan.placements if p.start_s <= t < (p.end_s or 1 << 62))
        assert held <= 4
    assert len(queued(plan)) == 4 and not plan.unplaced
