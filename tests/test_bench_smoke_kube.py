"""Every cluster benchmark, run as a user runs it at a small size on the test bed.

Like tests/test_bench_smoke.py: no timings, only that the run exited 0 and
measured what it says — every object it counts applied, every commit the
daemon was given applied, every node it times Ready, every planned intent
run.  Each script starts the control planes it measures (bench_apply a fresh
one per tool, so that one tool's objects never make the other's work
lighter), so they cannot share the test module's; the sizes keep each to
seconds of cluster time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_bench_smoke import result, run_bench

pytestmark = pytest.mark.kube


def test_apply_writes_every_object(tmp_path: Path) -> None:
    """The repository compiles cleanly under the tiers' SLA ceilings (it did not: every
    tenant was held back and 5 objects were applied instead of 500)."""
    from benchmarks.bench_apply import expected_objects

    run_bench(tmp_path, "bench_apply", "--tenants", "2", "--intents", "20", "--noop-runs", "1")
    doc = result(tmp_path, "bench_apply")
    # 6 per-tenant objects, 4 PriorityClasses, 20 Jobs and the power-capped fallback step of the one GPU Job
    assert doc["objects"] == expected_objects(2, 20) == 31 and doc["problems"] == []
    runs = doc["runs"]
    assert set(runs) == {"kubectl", "reconciler", "cli"}
    assert all(r["first_writes"] >= 31 for r in runs.values())
    assert runs["reconciler"]["noop_writes"] == runs["cli"]["noop_writes"] == 0
    assert runs["kubectl"]["noop_writes"] == 31                 # the baseline writes every object again


def test_drift_on_a_real_server(tmp_path: Path) -> None:
    run_bench(tmp_path, "bench_drift", "--objects", "100", "--repeat", "1", "--baseline-sample", "10",
              "--kube-repeat", "1", "--kube-objects", "80")
    kube = result(tmp_path, "bench_drift")["kube"]
    assert kube["objects"] >= 80 and kube["observe_in_sync"] and kube["intentc_drift_cli_exit"] == 0
    assert kube["kubectl_diff_exit"] == 0                      # kubectl agrees nothing drifted


def test_inventory_is_sharded(tmp_path: Path) -> None:
    run_bench(tmp_path, "bench_inventory", "--objects", "20000", "--repeat", "1")
    doc = result(tmp_path, "bench_inventory")
    assert doc["sharded"]["objects"] == 20000 and doc["sharded"]["configmaps"] >= 2
    assert doc["single"]["configmaps"] == 1


def test_testenv_nodes_ready(tmp_path: Path) -> None:
    run_bench(tmp_path, "bench_testenv", "--nodes", "16")
    doc = result(tmp_path, "bench_testenv")
    assert doc["nodes_16_ready_s"]["nodes_ready"] == 16
    assert doc["kube_env_start_s"] > 0 and doc["kube_cluster_start_s"] > 0


def test_soak_applies_every_commit(tmp_path: Path) -> None:
    run_bench(tmp_path, "bench_soak", "--minutes", "0.4", "--commit-every", "8", "--intents", "4",
              "--sample-every", "2")
    doc = result(tmp_path, "bench_soak")
    assert doc["commits"] >= 2 and doc["last_commit_applied"] == doc["commits"]
    assert doc["rss_mb_peak"] > 0


def test_fidelity_runs_every_planned_intent(tmp_path: Path) -> None:
    run_bench(tmp_path, "bench_fidelity", "--smoke", "--shapes", "chain", "--targets", "device-plugin",
              "--modes", "intents", "--ms-per-hour", "1000")
    (row,) = result(tmp_path, "bench_fidelity")["runs"]
    assert row["apply_exit"] == 0 and row["intents_ran"] == row["intents_planned"] == row["intents"]
    assert row["missing"] == [] and row["within_broken"] == 0


def test_faults_counts_the_scenario_it_ran(tmp_path: Path) -> None:
    """One fault scenario once: the script ran the suite's scenario, the audit log gave
    its recovery figure, and the goal held (no window with two writers)."""
    run_bench(tmp_path, "bench_faults", "--repeats", "1", "-k", "lease_deleted", timeout=600)
    doc = result(tmp_path, "bench_faults")
    assert doc["pytest_exit"] == 0 and doc["repeats"] == 1
    (scenario,) = doc["scenarios"].values()
    assert scenario["runs"] == 1 and scenario["recovery_s"]
    assert scenario["overlapping_windows"] == 0 and scenario["inventory_entries_lost"] == 0
