"""Edits that change the program's shape in the hot reload: an incremental plan swapped
in at once (dependency edges, new and removed intents, tenants' terms), the full plan
behind it in the background; what the incremental planner cannot do exactly (a cycle,
a dataset produced twice, a quota the kept plan is over) goes to the full planner,
which reports what a full compile reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from intentc.pipeline import compile_paths
from intentc.daemon.reload import Reloader, ReloadResult
from tests.test_reload_replan import COMMIT, TENANTS, assert_valid, chains, job, make_tree, same_as_full


def data_job(i: int, consumes: str | None = None, produces: str | None = None, after: int | None = None) -> str:
    text = job(i, after=after)
    lines = (f"  consumes: {consumes}\n" if consumes else "") + (f"  produces: {produces}\n" if produces else "")
    return text[:-2] + lines + "}\n"


def loaded(tmp_path: Path, jobs: dict[int, str] | None = None, extra: str = "") -> tuple[Reloader, Path, Path]:
    src, topo = make_tree(tmp_path, chains() if jobs is None else jobs)
    if extra:
        (src / "tenants.intent").write_text(TENANTS + extra)
    r = Reloader([str(src)], str(topo), COMMIT)
    assert r.load().ok
    return r, src, topo


def swapped(r: Reloader, src: Path, topo: Path, paths: list[Path], note: str) -> ReloadResult:
    """The update is in force with an incremental plan (its note), valid, rendered as a whole
    render of it would be; then the background full plan settles to a full compile's."""
    result = r.update(paths)
    assert result.ok, [str(d) for d in result.diagnostics if d.is_error]
    assert result.replanned and result.plan_note == note
    assert_valid(result)
    snap = r.current
    assert snap is not None
    whole = r._renderer._whole(snap.program, snap.plan, snap.uris, None, snap.topology)
    assert whole.rendered == snap.rendered
    assert r.settle(120)
    same_as_full(r, src, topo)
    return result


def test_an_after_dropped_replans_the_intent_and_what_waits_for_it(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    (src / "job-04.intent").write_text(job(4, gpus=4))                   # was: after job-03
    result = swapped(r, src, topo, [src / "job-04.intent"], "incremental plan: 2 intents re-placed")
    assert result.snapshot is not None and result.snapshot.plan.placement("job-04").start_s == 0  # type: ignore[union-attr]


def test_an_after_added_moves_the_intent_behind_its_new_dependency(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    (src / "job-03.intent").write_text(job(3, gpus=4, after=2))          # chain 0-1-2 then 3-4-5
    result = swapped(r, src, topo, [src / "job-03.intent"], "incremental plan: 3 intents re-placed")
    plan = result.snapshot.plan                                           # type: ignore[union-attr]
    assert plan.placement("job-03").start_s >= plan.placement("job-02").end_s  # type: ignore[union-attr,operator]


def test_a_new_producer_puts_its_consumers_behind_it(tmp_path: Path) -> None:
    jobs = {i: data_job(i, consumes="raw") for i in range(3)}
    r, src, topo = loaded(tmp_path, jobs, 'dataset raw { uri: "s3://b/raw" }\n')
    (src / "job-05.intent").write_text(data_job(5, produces="raw"))
    result = swapped(r, src, topo, [src / "job-05.intent"], "incremental plan: 4 intents re-placed")
    plan = result.snapshot.plan                                           # type: ignore[union-attr]
    assert all(plan.placement(f"job-{i:02d}").start_s >= 3600 for i in range(3))   # type: ignore[union-attr]


def test_a_new_intent_file_and_a_new_block_are_placed(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    (src / "job-12.intent").write_text(job(12, gpus=8, after=11))
    swapped(r, src, topo, [src / "job-12.intent"], "incremental plan: 1 intents re-placed")
    path = src / "job-05.intent"
    path.write_text(path.read_text() + job(13, gpus=2, after=5))
    swapped(r, src, topo, [path], "incremental plan: 1 intents re-placed")


def test_a_removed_intent_is_dropped_and_what_waited_for_it_replanned(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    (src / "job-11.intent").unlink()                                       # nothing waits for it
    swapped(r, src, topo, [src / "job-11.intent"], "incremental plan: 0 intents re-placed, 1 removed")
    (src / "job-07.intent").unlink()                                       # job-08 waited for it
    (src / "job-08.intent").write_text(job(8, gpus=2))
    result = swapped(r, src, topo, [src / "job-07.intent", src / "job-08.intent"],
                     "incremental plan: 1 intents re-placed, 1 removed")
    assert result.snapshot is not None and result.snapshot.plan.placement("job-07") is None


def test_a_tenant_edit_that_the_kept_plan_satisfies_is_patched(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    tenants = src / "tenants.intent"
    tenants.write_text(TENANTS.replace("quota: gpus 24", "quota: gpus 16").replace("tier: silver", "tier: gold"))
    result = swapped(r, src, topo, [tenants], "incremental plan: 0 intents re-placed, tenants team-a, team-b changed")
    shares = {s.tenant: s for s in result.snapshot.plan.tenants}              # type: ignore[union-attr]
    assert shares["team-a"].quota_gpus == 16 and shares["team-b"].weight == 4
    tenants.write_text(tenants.read_text() + "tenant team-c {\n  tier: bronze\n}\n")
    swapped(r, src, topo, [tenants], "incremental plan: 0 intents re-placed, tenants team-c changed")


def test_a_quota_below_what_the_kept_plan_holds_goes_to_the_full_planner(tmp_path: Path) -> None:
    r, src, topo = loaded(tmp_path)
    peak = next(s.allocated_gpus for s in r.current.plan.tenants if s.tenant == "team-a")   # type: ignore[union-attr]
    tenants = src / "tenants.intent"
    tenants.write_text(TENANTS.replace("quota: gpus 24", f"quota: gpus {peak - 2}"))
    result = r.update([tenants])
    assert result.ok and result.replanned and result.plan_note == ""       # the full planner's plan
    assert_valid(result)
    same_as_full(r, src, topo)


@pytest.mark.parametrize("files, code", [
    ({"job-00.intent": job(0, after=2)}, "E0501"),                        # job-00 -> 01 -> 02 -> 00
    ({"job-12.intent": data_job(12, produces="out"), "job-13.intent": data_job(13, produces="out")}, "E0503"),
])
def test_what_the_full_planner_reports_is_reported(tmp_path: Path, files: dict[str, str], code: str) -> None:
    r, src, topo = loaded(tmp_path)
    good = r.current
    for name, text in files.items():
        (src / name).write_text(text)
    bad = r.update([src / name for name in files])
    full = compile_paths([str(src)], str(topo), COMMIT)
    assert not bad.ok and not full.ok and r.current is good
    assert any(d.code == code for d in bad.diagnostics)
    assert list(bad.diagnostics) == [d for d in full.diagnostics if d.code != "W0901"]


def test_a_default_deny_tag_rule_added_and_removed_with_the_intents_that_carry_it(tmp_path: Path) -> None:
    """A tag rule requiring only a default-deny NetworkPolicy (no exclusive domain, so the
    plan stays incremental): a new intent with the tag gives its tenant the policy; removing
    the only such intent takes it away (every intent is read again for that)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "isolated.yaml").write_text(
        "apiVersion: intentc.dev/v1alpha1\nkind: Policy\nmetadata: {name: isolated}\n"
        "spec: {tag: isolated, requires: [default-deny-network]}\n")
    r, src, topo = loaded(tmp_path)
    tagged = job(13, gpus=2).replace("context: tenant team-b", "context: tenant team-b, tags [isolated]")
    (src / "job-13.intent").write_text(tagged)
    result = swapped(r, src, topo, [src / "job-13.intent"], "incremental plan: 1 intents re-placed")
    assert any(m.ref.kind == "NetworkPolicy" and m.tenant == "team-b" for m in result.snapshot.setup)  # type: ignore[union-attr]
    (src / "job-13.intent").unlink()
    result = swapped(r, src, topo, [src / "job-13.intent"], "incremental plan: 0 intents re-placed, 1 removed")
    assert not any(m.ref.kind == "NetworkPolicy" for m in result.snapshot.setup)                     # type: ignore[union-attr]


def test_an_sla_class_comes_and_goes_with_the_only_intent_that_uses_it(tmp_path: Path) -> None:
    """Every job is P2; a new P1 job adds its PriorityClass; removing it takes the class
    away (no other intent uses it), while removing one P2 job of many keeps P2's."""
    r, src, topo = loaded(tmp_path)

    def classes() -> set[str]:
        return {m.ref.name for m in r.current.setup if m.ref.kind == "PriorityClass"}   # type: ignore[union-attr]
    p2 = classes()
    (src / "job-14.intent").write_text(job(14, gpus=2, sla="P1"))
    swapped(r, src, topo, [src / "job-14.intent"], "incremental plan: 1 intents re-placed")
    assert len(classes()) == len(p2) + 1
    (src / "job-14.intent").unlink()
    swapped(r, src, topo, [src / "job-14.intent"], "incremental plan: 0 intents re-placed, 1 removed")
    assert classes() == p2
    (src / "job-11.intent").unlink()
    swapped(r, src, topo, [src / "job-11.intent"], "incremental plan: 0 intents re-placed, 1 removed")
    assert classes() == p2
