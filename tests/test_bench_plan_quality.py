"""Smoke test of benchmarks/bench_plan_quality.py at its smallest size: no timing, only
that it measures what it says (issue 37).

The checker it relies on (tests/plan_verify.py) must not share code with the planner,
must find an inversion planted in a schedule, and the summary must be the rows' numbers.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

from benchmarks.bench_plan_quality import SLA_CLASSES, run
from benchmarks.plan_quality_gen import SHAPES, lower_bound, make_instance
from tests.plan_verify import sla_inversions

ROOT = Path(__file__).resolve().parent.parent


def test_the_checker_imports_nothing_of_intentc() -> None:
    tree = ast.parse((ROOT / "tests" / "plan_verify.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not [m for m in imported if m.startswith(("intentc", "benchmarks"))]


def _doc(*rows: tuple[str, str, int, int, str, int]) -> dict[str, object]:
    return {"placements": [{"intent": n, "tenant": t, "start_s": s, "end_s": e,
                            "allocations": [{"node": node, "gpus": list(range(k))}]}
                           for n, t, s, e, node, k in rows]}


def _job(name: str, sla: str, gpus: int, tenant: str = "a", product: str | None = None) -> dict[str, object]:
    return {"name": name, "tenant": tenant, "gpus": gpus, "product": product, "within": "node", "sla": sla,
            "duration": 3600, "after": []}


NODES = [{"name": "h", "gpus": 8, "product": "H100-80GB", "rack": "r1", "nvlink": "h", "zone": "z"},
         {"name": "a", "gpus": 8, "product": "A100-80GB", "rack": "r2", "nvlink": "a", "zone": "z"}]


def test_the_checker_finds_both_kinds_of_inversion() -> None:
    # a P3 starts on the GPUs a waiting P1 needs, while the P1 waits
    gpu = _doc(("low", "a", 0, 3600, "h", 8), ("high", "a", 3600, 7200, "h", 8))
    jobs = [_job("low", "P3", 8), _job("high", "P1", 8, product="H100-80GB")]
    assert sla_inversions(gpu, jobs, NODES, {"a": None}) == {"gpu": {"high"}, "quota": set()}
    # the case: the P3 holds the tenant's quota on a node the P1 cannot use
    quota = _doc(("other", "b", 0, 3600, "h", 8), ("low", "a", 0, 36000, "a", 8), ("high", "a", 36000, 39600, "h", 8))
    jobs = [_job("other", "P0", 8, "b"), _job("low", "P3", 8), _job("high", "P1", 8, product="H100-80GB")]
    assert sla_inversions(quota, jobs, NODES, {"a": 8, "b": None}) == {"gpu": set(), "quota": {"high"}}
    # the same plan with the P3 after the P1: nothing
    fine = _doc(("other", "b", 0, 3600, "h", 8), ("high", "a", 3600, 7200, "h", 8), ("low", "a", 7200, 43200, "a", 8))
    assert sla_inversions(fine, jobs, NODES, {"a": 8, "b": None}) == {"gpu": set(), "quota": set()}


def test_the_benchmark_measures_what_it_reports() -> None:
    doc = run(1, ROOT, False)                   # this checkout as the "baseline": the same planner
    rows = doc["rows"]
    assert doc["instances"] == len(rows) == len(SHAPES)
    policies = ("intentc", "fifo-bestfit", "longest-chain", "sla-first", "baseline")
    for row in rows:
        inst = make_instance(row["seed"], row["shape"])
        assert row["lower_bound"] == lower_bound(inst)
        for pol in policies:
            r = row[pol]
            assert r["broken"] == 0, (row["shape"], pol)
            assert r["ran"] + r["unplaced"] == len(inst["jobs"]), (row["shape"], pol)
            assert r["makespan"] >= row["lower_bound"], (row["shape"], pol)
        assert row["baseline"] == row["intentc"]       # the child process planned the same instances
        assert row["intentc"]["gpu_inversions"] == row["intentc"]["quota_inversions"] == 0
    summary = doc["summary"]
    for pol in policies:
        ratios = [row[pol]["makespan"] / row["fifo-bestfit"]["makespan"] for row in rows]
        assert summary[pol]["vs_fifo"]["median"] == round(statistics.median(ratios), 4)
        assert summary[pol]["vs_fifo"]["max"] == round(max(ratios), 4)
        assert summary[pol]["gpu_inversions"] == sum(row[pol]["gpu_inversions"] for row in rows)
        assert set(summary[pol]["mean_delay_min"]) == set(SLA_CLASSES)
    assert summary["fifo-bestfit"]["vs_fifo"] == {"median": 1.0, "p90": 1.0, "max": 1.0,
                                                  "at_most_fifo": len(rows), "above_1_10": 0}
