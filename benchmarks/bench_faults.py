"""Partitions and crashes, counted by the API server: recovery times and audit counts.

    python benchmarks/bench_faults.py [--repeats 10] [-k EXPR]

Runs the fault scenarios of tests/test_daemon_partition_kube.py (a leader
cut off by a TCP proxy; the election Lease deleted by hand; the daemon
SIGKILLed mid-heal and mid-rollback) and tests/test_daemon_kueue_faults_kube.py
(kube-apiserver, then etcd, restarted mid Kueue rollout) with INTENTC_FAULT_REPEATS=N instead of
the suite's 2, on the same test bed and with the same assertions, so every
repeat is also checked against its goal (0 windows in which two replicas
wrote, convergence on the commit in force, 0 inventory entries lost).  The
tests append one JSON line per run (recovery times from the audit log's
timestamps, writes by user, acting writes per replica); this script
collects them and writes, per scenario and per recovery figure, the
median and the maximum to benchmarks/results/bench_faults.json, with every
run's line kept.  The test bed must be built (hack/testenv/setup).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results import write_results  # noqa: E402

MODULES = ("tests/test_daemon_partition_kube.py", "tests/test_daemon_kueue_faults_kube.py")


def summarise(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Per scenario: runs, and for each recovery figure its median and max (seconds);
    the overlap windows and inventory entries lost, summed over the runs."""
    out: dict[str, Any] = {}
    for scenario in sorted({line["scenario"] for line in lines}):
        runs = [line for line in lines if line["scenario"] == scenario]
        figures: dict[str, Any] = {}
        for key in sorted({k for r in runs for k in r["recovery_s"]}):
            values = [float(r["recovery_s"][key]) for r in runs if key in r["recovery_s"]]
            figures[key] = {"median": round(statistics.median(values), 3), "max": round(max(values), 3),
                            "runs": [round(v, 3) for v in values]}
        out[scenario] = {"runs": len(runs), "recovery_s": figures,
                         "overlapping_windows": sum(int(r.get("overlapping_windows", 0)) for r in runs),
                         "inventory_entries_lost": sum(int(r.get("lost", 0)) for r in runs)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10, help="runs of each scenario (the suite runs 2)")
    ap.add_argument("-k", default="", help="pytest -k expression: only these scenarios")
    ap.add_argument("--name", default="bench_faults", help="results file name (benchmarks/results/NAME.json)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        lines_file = Path(tmp) / "runs.jsonl"
        env = dict(os.environ, INTENTC_FAULT_REPEATS=str(args.repeats), INTENTC_FAULT_RESULTS=str(lines_file))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp}/pytest",
               *MODULES, *(["-k", args.k] if args.k else [])]
        started = time.monotonic()
        res = subprocess.run(cmd, cwd=ROOT, env=env)
        wall = time.monotonic() - started
        lines = [json.loads(x) for x in lines_file.read_text().splitlines()] if lines_file.exists() else []
    doc = {"repeats": args.repeats, "pytest_exit": res.returncode, "wall_s": round(wall, 1),
           "load_avg": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
           "scenarios": summarise(lines), "runs": lines}
    path = write_results(args.name, doc)
    for scenario, s in doc["scenarios"].items():
        shown = ", ".join(f"{k} median {v['median']}s max {v['max']}s" for k, v in s["recovery_s"].items())
        print(f"{scenario}: {s['runs']} runs; {shown}; overlapping windows {s['overlapping_windows']}; "
              f"inventory entries lost {s['inventory_entries_lost']}")
    print(f"wrote {path} (pytest exit {res.returncode}, {wall:.0f}s)")
    return res.returncode


if __name__ == "__main__":
    raise SystemExit(main())
