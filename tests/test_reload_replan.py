"""A planner-affecting edit in the hot reload: an incremental plan swapped in at once,
the full plan behind it in the background (daemon/reload, plan/incremental.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from intentc.pipeline import compile_paths
from intentc.daemon.reload import Reloader, ReloadResult
from tests.plan_verify import order_violations, over_capacity, overlaps

COMMIT = "f" * 40
TOPOLOGY = """apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: small}
spec:
  levels: [zone, rack, node]
  nodes:
""" + "".join(f"""    - name: n{i}
      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}
      cpu: "64"
      memory: 1Ti
      domains: {{zone: z1, rack: r{i % 2}}}
""" for i in range(3))
TENANTS = "tenant team-a {\n  tier: gold\n  quota: gpus 24\n}\ntenant team-b {\n  tier: silver\n}\n"


def job(i: int, gpus: int = 2, sla: str = "P2", after: int | None = None, duration: str = "1h") -> str:
    trigger = f"after job-{after:02d}" if after is not None else "on push"
    gpu = f', gpus {gpus} x "H100-80GB" within node' if gpus else ""
    return (f"intent job-{i:02d} {{\n  trigger: {trigger}\n  action: batch image \"busybox:1\" command [\"true\"]\n"
            f"  context: tenant team-{'ab'[i % 2]}\n"
            f"  constraints: cpu 1, memory 1Gi{gpu}, duration {duration}, sla {sla}\n}}\n")


def make_tree(root: Path, jobs: dict[int, str]) -> tuple[Path, Path]:
    src = root / "src"
    src.mkdir()
    (src / "tenants.intent").write_text(TENANTS)
    for i, text in jobs.items():
        (src / f"job-{i:02d}.intent").write_text(text)
    topo = root / "topology.yaml"
    topo.write_text(TOPOLOGY)
    return src, topo


def chains() -> dict[int, str]:
    """Twelve jobs in chains of three (job-01 after job-00, ...), 2-4 GPUs each."""
    return {i: job(i, gpus=2 + 2 * (i % 2), after=i - 1 if i % 3 else None) for i in range(12)}


def assert_valid(result: ReloadResult) -> None:
    """plan_verify's independent checks on the plan in force."""
    snap = result.snapshot
    assert snap is not None
    doc = json.loads(snap.plan_json)
    assert overlaps(doc) == []
    assert over_capacity(doc, {f"n{i}": 8 for i in range(3)}) == []
    after = {i.name: [r.name for r in i.trigger.after] for i in snap.program.intents}
    assert order_violations(doc, after) == []
    held: dict[int, int] = {}
    for p in doc["placements"]:
        if p["tenant"] == "team-a":
            for t in range(p["start_s"], p["end_s"], 60):
                held[t] = held.get(t, 0) + p["gpus"]
    assert max(held.values(), default=0) <= 24           # team-a's quota at every minute
    assert {p["intent"] for p in doc["placements"]} == {i.name for i in snap.program.intents}


def same_as_full(r: Reloader, src: Path, topo: Path) -> None:
    full = compile_paths([str(src)], str(topo), COMMIT)
    snap = r.current
    assert full.ok and snap is not None
    assert snap.files() == full.files()
    assert list(snap.diagnostics) == list(full.diagnostics)


def listening(src: Path, topo: Path) -> tuple[Reloader, list[ReloadResult], threading.Event]:
    """A loaded Reloader, the results of its background swaps, and an event set at each."""
    seen: list[ReloadResult] = []
    swapped = threading.Event()
    r = Reloader([str(src)], str(topo), COMMIT)
    r.listen(lambda res: (seen.append(res), swapped.set()))
    assert r.load().ok
    return r, seen, swapped


def test_a_gpu_count_edit_is_placed_incrementally_then_the_full_plan_follows(tmp_path: Path) -> None:
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT)
    assert r.load().ok
    (src / "job-03.intent").write_text(job(3, gpus=6))
    result = r.update([src / "job-03.intent"])
    assert result.ok and result.replanned
    # the edited job and the two that wait for it, nothing else
    assert result.plan_note == "incremental plan: 3 intents re-placed"
    assert_valid(result)
    snap = r.current
    assert snap is not None and snap.plan.placement("job-03").gpu_count == 6   # type: ignore[union-attr]
    # the patched render is the render of the patched plan
    whole = r._renderer._whole(snap.program, snap.plan, snap.uris, None, snap.topology)
    assert whole.rendered == snap.rendered
    assert r.settle(120)
    same_as_full(r, src, topo)


def test_the_full_plan_replaces_an_incremental_one_that_differs(tmp_path: Path) -> None:
    """job-00..02 hold n0..n2 from time 0, job-04 (P3) waits for them; made P0, it still waits in the
    incremental plan (nothing moves for it), the full plan starts it first."""
    jobs = {i: job(i, gpus=8, after=None, sla="P2") for i in range(3)}
    jobs[4] = job(4, gpus=8, sla="P3")
    src, topo = make_tree(tmp_path, jobs)
    r, seen, swapped = listening(src, topo)
    before = r.current
    assert before is not None
    (src / "job-04.intent").write_text(job(4, gpus=8, sla="P0"))
    result = r.update([src / "job-04.intent"])
    assert result.ok and result.plan_note == "incremental plan: 1 intents re-placed"
    assert_valid(result)
    incremental = result.snapshot
    assert incremental is not None and incremental.plan.placement("job-04").start_s > 0   # type: ignore[union-attr]
    assert swapped.wait(120) and r.settle(120)
    assert len(seen) == 1 and seen[0].ok and seen[0].snapshot is r.current
    assert seen[0].plan_note == "full plan swapped in for the incremental one"
    assert_valid(seen[0])
    assert r.current.plan.placement("job-04").start_s == 0          # type: ignore[union-attr]
    same_as_full(r, src, topo)


def test_an_edit_that_can_never_be_placed_reports_what_a_full_compile_reports(tmp_path: Path) -> None:
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT)
    good = r.load().snapshot
    (src / "job-04.intent").write_text(job(4, gpus=12, after=3))
    bad = r.update([src / "job-04.intent"])
    full = compile_paths([str(src)], str(topo), COMMIT)
    assert not bad.ok and not full.ok and r.current is good
    # (compile also says which tenants it holds back, W0901: the reloader keeps the last good snapshot)
    assert list(bad.diagnostics) == [d for d in full.diagnostics if d.code != "W0901"]
    assert any(d.code == "E0601" for d in bad.diagnostics)


def test_edits_in_a_row_each_valid_and_settled_equal_a_full_compile(tmp_path: Path) -> None:
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT, background=False)
    assert r.load().ok
    edits = {1: job(1, gpus=8, after=0), 5: job(5, gpus=1, after=4, sla="P1"), 6: job(6, gpus=4, duration="3h"),
             10: job(10, gpus=0, after=9), 2: job(2, gpus=6, after=1, duration="20m")}
    notes = []
    for i, text in edits.items():
        (src / f"job-{i:02d}.intent").write_text(text)
        result = r.update([src / f"job-{i:02d}.intent"])
        assert result.ok, [str(d) for d in result.diagnostics]
        assert_valid(result)
        notes.append(result.plan_note)
    assert all(n.startswith("incremental plan: ") for n in notes), notes
    # a full compile of the same tree reports the same findings (warnings included)
    full = compile_paths([str(src)], str(topo), COMMIT)
    snap = r.current
    assert full.ok and snap is not None
    assert list(snap.diagnostics) == list(full.diagnostics)


def test_a_refusal_points_where_a_moved_dependant_is_now(tmp_path: Path) -> None:
    """job-05 (after job-04) moved down a line by an edit the planner does not read; then
    job-04 asks for more than any node has: both are refused at their current positions."""
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT)
    good = r.load().snapshot
    moved = src / "job-05.intent"
    moved.write_text("# moved down a line\n" + moved.read_text())
    kept = r.update([moved])
    assert kept.ok and not kept.replanned
    (src / "job-04.intent").write_text(job(4, gpus=12, after=3))
    bad = r.update([src / "job-04.intent"])
    full = compile_paths([str(src)], str(topo), COMMIT)
    assert not bad.ok and r.current is not good
    refusals = [d for d in bad.diagnostics if d.code == "E0601"]
    assert [d.span.file.rsplit("/", 1)[-1] for d in refusals] == ["job-04.intent", "job-05.intent"]
    assert refusals == [d for d in full.diagnostics if d.code == "E0601"]


def test_per_intent_findings_of_an_edit_are_those_of_a_full_compile(tmp_path: Path) -> None:
    """An SLA above the tenant's ceiling (E0904) and a product no node has (E0601) are
    found for the edited intent without running every cross-reference pass again."""
    src, topo = make_tree(tmp_path, chains())
    r = Reloader([str(src)], str(topo), COMMIT)
    assert r.load().ok
    for path, text in [(src / "job-01.intent", job(1, after=0, sla="P0")),
                       (src / "job-02.intent", job(2, after=1).replace("H100-80GB", "B200"))]:
        saved = path.read_text()
        path.write_text(text)
        bad = r.update([path])
        full = compile_paths([str(src)], str(topo), COMMIT)
        assert not bad.ok and not full.ok
        assert list(bad.diagnostics) == [d for d in full.diagnostics if d.code != "W0901"]
        path.write_text(saved)
        assert r.update([path]).ok
    same_as_full(r, src, topo)
