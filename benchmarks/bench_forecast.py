"""The live forecast's re-plan after a cluster event, at 10,000 and 100,000 intents (issue 40, item 3).

    python benchmarks/bench_forecast.py [--intents 10000 100000] [--repeat 3] [--cases notready,late,join]
        [--base DIR]

The daemon re-plans the part of the schedule that has not started whenever
the cluster changes (`intentc.forecast.core.forecast`); the goal is under
1 s at 10,000 intents and under 10 s at 100,000, within the daemon's memory
limit (examples/deploy/05-deployment.yaml).  Workload and cluster are
bench_plan_scale's (`plan_workload.build_dag_workload`: six tenants, two of
them under quota, a third of the jobs in pipelines, Alibaba-shaped
durations; `build_cluster` scaled with the job count, quotas with it) on a
cluster half as large as bench_plan_scale's, 2,000 jobs per 256 nodes, so
that part of the queue waits for GPUs and an event moves ETAs.  Each (size,
case) runs in a fresh child process, so its peak RSS is its own:

1. the program and its plan (`make_plan`, timed: the baseline, what planning
   the whole program from scratch on the same topology costs);
2. an observation mid-schedule: the intents the plan ends by `now` (a third
   of them) Succeeded at their planned times, those it runs across `now`
   Running on their planned GPUs, and one of the ended ones, with
   dependants, still Running (it overran its `duration`: schedule drift);
3. the event, one per case: `notready` the node with the most intents
   planned on it that have not started goes NotReady; `late` the
   overrunning job ends now, late; `join` a new 8-GPU HGX node joins;
4. `forecast(...)` of that observation, timed `--repeat` times, each
   followed by another baseline `make_plan` (taken in turn, so the ratio
   is measured under one load).  The kernel's peak (`VmHWM`) is reset
   through /proc/self/clear_refs before each forecast, so the forecast's
   peak is its own on top of what the daemon holds anyway (program,
   topology, plan, observation); the child's whole peak (the baseline
   plans included) comes from the kernel through `proc.run_json`.

With `--base DIR` (another intentc tree, e.g. `git archive` of the commit
before a change) every case is also run by that tree's `forecast`, in a
child right after this tree's: its seconds, and the two forecasts must be
equal (a speed-up may not change a forecast; compared by a digest of it).

Reported per row: forecast seconds (best, and every run), baseline
seconds, forecast / baseline, the forecast's peak and what it adds to what
is held, against the daemon's limit, and the checks.  The run exits
non-zero when it did not measure what it claims: a forecast that misses an
intent, an intent left on the NotReady node, a late job not shown ending
late or its dependants starting before it ended, no intent placed on the
joined node, two forecasts of the same input that differ, or a base tree
whose forecast differs.

Writes benchmarks/results/bench_forecast.json (rows of sizes not run are kept).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# the tree whose forecast is measured: this one, or --base's in a child process
IMPORT_ROOT = Path(os.environ.get("BENCH_FORECAST_ROOT", ROOT))
if str(IMPORT_ROOT) not in sys.path:
    sys.path.insert(0, str(IMPORT_ROOT))

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload  # noqa: E402
from intentc import ir  # noqa: E402
from intentc.forecast.core import forecast  # noqa: E402
from intentc.forecast.model import Forecast, JobObservation, NodeObservation, Observation, Phase  # noqa: E402
from intentc.plan.model import Busy, Placement, Plan  # noqa: E402
from intentc.plan.planner import make_plan  # noqa: E402
from intentc.topology.load import LoadedTopology  # noqa: E402

CASES = ("notready", "late", "join")
CROWDING = 0.5          # the cluster's size against bench_plan_scale's for the same jobs
GOALS_S = {10_000: 1.0, 100_000: 10.0}
EPOCH = 1_800_000_000.0
DEPLOYMENT = ROOT / "examples" / "deploy" / "05-deployment.yaml"
JOINED = "hgx-joined"


def daemon_limit_mb() -> float:
    """The daemon container's `resources.limits.memory` in MB (MiB), read from the example deployment."""
    text = DEPLOYMENT.read_text(encoding="utf-8")
    got = re.search(r"limits:\s*\{[^}]*memory:\s*([0-9.]+)(Mi|Gi)", text)
    if got is None:
        raise SystemExit(f"no memory limit in {DEPLOYMENT}")
    return float(got.group(1)) * (1024 if got.group(2) == "Gi" else 1)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def workload(n: int) -> tuple[ir.Program, LoadedTopology]:
    """bench_plan_scale's DAG workload of `n` jobs on half its cluster (quotas scaled with it).

    At bench_plan_scale's size the cluster stays half idle and every job that has not
    started waits for its dependencies only: a node going or coming would change no
    ETA.  On half of it, part of the queue waits for GPUs, as on a busy cluster."""
    scale = n / 2000 * CROWDING
    topo = build_cluster(max(1, round(368 * scale)), 16, 8, max(1, round(8 * scale)), 18)
    return build_dag_workload(random.Random(SEED), n, scale), topo


def _succ(program: ir.Program) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for i in program.intents:
        for r in i.trigger.after:
            out.setdefault(r.name, []).append(i.name)
    return out


def _running(p: Placement, start_s: int) -> JobObservation:
    return JobObservation(p.intent, EPOCH + start_s, started=EPOCH + start_s, running=True,
                          gpus=tuple(Busy(a.node, a.gpus) for a in p.allocations))


def mid_schedule(program: ir.Program, plan: Plan, topo: LoadedTopology) -> tuple[Observation, int, str]:
    """The cluster a third of the way through `plan`, and `now` (plan time), and the overrunning intent."""
    finite = sorted(p.end_s for p in plan.placements if p.end_s is not None)
    now_s = finite[len(finite) // 3]
    by_name = {p.intent: p for p in plan.placements}
    succ = _succ(program)
    # the overrunning job: the latest to end (at least a minute) before now whose dependants have not started
    candidates = [p for p in plan.placements if p.end_s is not None and p.end_s < now_s - 60 and succ.get(p.intent)
                  and all(by_name[d].start_s > now_s for d in succ[p.intent] if d in by_name)]
    late = max(candidates, key=lambda p: (p.end_s or 0, p.intent))
    jobs = []
    for p in plan.placements:
        if p.intent == late.intent:
            jobs.append(_running(p, p.start_s))
        elif p.end_s is not None and p.end_s <= now_s:
            jobs.append(JobObservation(p.intent, EPOCH + p.start_s, started=EPOCH + p.start_s,
                                       completed=EPOCH + p.end_s))
        elif p.start_s <= now_s:
            jobs.append(_running(p, p.start_s))
    nodes = tuple(NodeObservation(n.name) for n in topo.topology.nodes)
    return Observation(jobs=tuple(jobs), nodes=tuple(sorted(nodes, key=lambda o: o.name)), epoch=EPOCH), now_s, \
        late.intent


def busiest_ahead(plan: Plan, now_s: int) -> str:
    """The node with the most intents planned on it that have not started at `now_s`."""
    count: dict[str, int] = {}
    for p in plan.placements:
        if p.start_s > now_s:
            for node in p.nodes:
                count[node] = count.get(node, 0) + 1
    return max(sorted(count), key=lambda n: count[n])


def joined(topo: LoadedTopology) -> LoadedTopology:
    """`topo` with one more HGX node, in the last HGX node's rack and zone, with its matrix."""
    last = max((n for n in topo.topology.nodes if n.name.startswith("hgx-")), key=lambda n: n.name)
    matrix = dict(topo.matrices)[last.name]
    node = replace(last, name=JOINED)
    return LoadedTopology(replace(topo.topology, nodes=(*topo.topology.nodes, node)),
                          (*topo.matrices, (JOINED, matrix)))


def event(case: str, program: ir.Program, plan: Plan, topo: LoadedTopology
          ) -> tuple[Observation, LoadedTopology, int, dict[str, Any]]:
    """The observation and topology after `case`'s event, `now` (plan time), and what to check."""
    seen, now_s, late = mid_schedule(program, plan, topo)
    facts: dict[str, Any] = {"overrunning": late}
    if case == "notready":
        node = busiest_ahead(plan, now_s)
        facts["node"] = node
        seen = replace(seen, nodes=tuple(NodeObservation(o.name, "NotReady" if o.name == node else o.problem)
                                         for o in seen.nodes))
    elif case == "late":
        seen = replace(seen, jobs=tuple(replace(j, running=False, gpus=(), completed=EPOCH + now_s)
                                        if j.intent == late else j for j in seen.jobs))
    elif case == "join":
        topo = joined(topo)
        seen = replace(seen, nodes=tuple(sorted((*seen.nodes, NodeObservation(JOINED)), key=lambda o: o.name)))
    else:
        raise SystemExit(f"unknown case {case!r}")
    return seen, topo, now_s, facts


def verify(case: str, made: Forecast, program: ir.Program, plan: Plan, now_s: int, facts: dict[str, Any]
           ) -> list[str]:
    """What is wrong with `made` for `case` (empty: it measured what it claims)."""
    wrong: list[str] = []
    names = {i.name for i in program.intents}
    got = {f.intent: f for f in made.intents}
    if set(got) != names:
        wrong.append(f"the forecast covers {len(set(got) & names)} of {len(names)} intents")
    ahead = [f for f in made.intents if f.phase in (Phase.QUEUED, Phase.ADMITTED)]
    if any(f.eta_start_s is None or f.eta_start_s < now_s for f in ahead):
        wrong.append("an intent that has not started has no ETA at or after now")
    if case == "notready":
        node = facts["node"]
        moved = [p.intent for p in plan.placements if p.start_s > now_s and node in p.nodes]
        facts["moved_off"] = len(moved)
        left = [f.intent for f in ahead if node in f.nodes]
        if not moved or left:
            wrong.append(f"{len(left)} intent(s) still on NotReady {node} ({len(moved)} planned there)")
        if any("re-placed" not in got[n].reason for n in moved if got[n].phase is not Phase.BLOCKED):
            wrong.append("an intent moved off the NotReady node does not say so")
    if case == "late":
        f = got[facts["overrunning"]]
        deps = [got[d] for d in _succ(program).get(f.intent, ())]
        if f.phase is not Phase.SUCCEEDED or f.actual_end_s != now_s or (f.behind_s or 0) <= 0:
            wrong.append(f"the late job is {f.phase.value}, ended {f.actual_end_s}, behind {f.behind_s}")
        if not deps or any(d.eta_start_s is None or d.eta_start_s < now_s for d in deps if d.phase in
                           (Phase.QUEUED, Phase.ADMITTED)):
            wrong.append("a dependant of the late job starts before it ended")
    if case in ("notready", "join"):
        drift = got[facts["overrunning"]]
        if not drift.drift or not drift.pushed:
            wrong.append("the overrunning job is not reported as schedule drift with its dependants")
    if case == "join":
        on_new = [f.intent for f in ahead if JOINED in f.nodes]
        facts["placed_on_joined"] = len(on_new)
        if not on_new:
            wrong.append("no intent placed on the joined node")
    facts["phases"] = {ph.value: sum(1 for f in made.intents if f.phase is ph) for ph in Phase}
    return wrong


def _timed_forecast(program: ir.Program, plan: Plan, live: LoadedTopology, seen: Observation, now: float
                    ) -> tuple[Forecast, float, float, float, float]:
    """One forecast: it, wall and CPU seconds, the RSS held before it and its peak (MB)."""
    gc.collect()
    held = _status_kb("VmRSS") / 1024
    _reset_peak()
    w0, c0 = time.perf_counter(), time.process_time()
    made = forecast(program, plan, live, seen, now)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return made, wall, cpu, held, _status_kb("VmHWM") / 1024


def child(case: str, n: int, repeat: int) -> dict[str, Any]:
    program, topo = workload(n)
    t0 = time.perf_counter()
    plan, _ = make_plan(program, topo)
    first_baseline = time.perf_counter() - t0
    seen, live, now_s, facts = event(case, program, plan, topo)
    baseline_s = [first_baseline] if live is topo else []
    runs: dict[str, list[float]] = {"wall": [], "cpu": [], "held": [], "peak": []}
    made: Forecast | None = None
    wrong: list[str] = []
    for _ in range(repeat):
        got, wall, cpu, held, peak = _timed_forecast(program, plan, live, seen, EPOCH + now_s)
        for key, value in (("wall", wall), ("cpu", cpu), ("held", held), ("peak", peak)):
            runs[key].append(value)
        if made is not None and made != got:
            wrong.append("two forecasts of the same observation differ")
        made = got
        del got
        gc.collect()
        t0 = time.perf_counter()        # the baseline, taken in turn with the forecast
        again, _ = make_plan(program, live)
        baseline_s.append(time.perf_counter() - t0)
        del again
    assert made is not None
    wrong += verify(case, made, program, plan, now_s, facts)
    best, base = min(runs["wall"]), min(baseline_s)
    return {"case": case, "intents": n, "nodes": len(live.topology.nodes), "now_s": now_s,
            "forecast_s": round(best, 3), "forecast_s_all": [round(t, 3) for t in runs["wall"]],
            "forecast_cpu_s": round(min(runs["cpu"]), 3),
            "baseline_s": round(base, 3), "baseline_s_all": [round(t, 3) for t in baseline_s],
            "ratio": round(best / base, 3),
            "forecast_peak_mb": round(max(runs["peak"]), 1), "held_before_forecast_mb": round(max(runs["held"]), 1),
            "forecast_extra_mb": round(max(p - h for p, h in zip(runs["peak"], runs["held"])), 1),
            "digest": hashlib.sha256(repr(made).encode()).hexdigest(), "facts": facts, "wrong": sorted(set(wrong))}


def run_child(tree: Path, case: str, n: int, repeat: int) -> dict[str, Any]:
    """`child` in a fresh process importing intentc from `tree`; its row with the kernel's peak RSS."""
    from benchmarks.proc import run_json

    env = dict(os.environ, PYTHONPATH=str(tree), BENCH_FORECAST_ROOT=str(tree))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case, str(n), str(repeat)]
    return run_json(cmd, env, f"{case} at {n} ({tree})")


def _line(n: int, case: str, tree: str, row: dict[str, Any], limit: float) -> str:
    return (f"{n:>7} {case:<8} {tree:<4} forecast {row['forecast_s']:>7.3f} s (CPU {row['forecast_cpu_s']:.3f})  "
            f"make_plan {row['baseline_s']:>7.3f} s  ratio {row['ratio']:.3f}  "
            f"peak {row['forecast_peak_mb']:.1f} MB (held {row['held_before_forecast_mb']:.1f}, "
            f"+{row['forecast_extra_mb']:.1f}, "
            f"child {row['peak_rss_mb']:.1f}) / {limit:.0f} MB  load {row['load_before']:.1f}-{row['load_after']:.1f}"
            + (f"  WRONG: {'; '.join(row['wrong'])}" if row["wrong"] else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, of " + ", ".join(CASES))
    ap.add_argument("--base", type=Path, help="another intentc tree (e.g. the commit before a change): each case "
                                              "forecast by it too, right after this tree, for a ratio")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "INTENTS", "REPEAT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        case, n, repeat = args.child
        print(json.dumps(child(case, int(n), int(repeat))))
        return 0
    from benchmarks.results import results_dir, write_results

    limit = daemon_limit_mb()
    rows: list[dict[str, Any]] = []
    for n in args.intents:
        for case in args.cases.split(","):
            row = run_child(ROOT, case, n, args.repeat)
            goal = GOALS_S.get(n)
            row |= {"goal_s": goal, "meets_goal": None if goal is None else row["forecast_s"] < goal,
                    "limit_mb": limit, "within_limit": row["forecast_peak_mb"] < limit}
            print(_line(n, case, "head", row, limit), flush=True)
            if args.base is not None:
                base = run_child(args.base.resolve(), case, n, args.repeat)
                print(_line(n, case, "base", base, limit), flush=True)
                if base["digest"] != row["digest"]:
                    row["wrong"] = [*row["wrong"], "the base tree's forecast differs"]
                row |= {"base": {k: base[k] for k in ("forecast_s", "forecast_s_all", "forecast_cpu_s", "baseline_s",
                                                      "forecast_peak_mb", "peak_rss_mb", "load_before",
                                                      "load_after")},
                        "base_path": str(args.base.resolve()),
                        "speedup_over_base": round(base["forecast_s"] / row["forecast_s"], 2)}
            rows.append(row)
    # rows of other sizes from an earlier run are kept: 100,000 intents is run at a lower --repeat
    earlier = results_dir() / "bench_forecast.json"
    if earlier.exists():
        kept = [r for r in json.loads(earlier.read_text(encoding="utf-8")).get("rows", [])
                if r.get("intents") not in args.intents]
        rows = sorted(kept + rows, key=lambda r: (r["intents"], CASES.index(r["case"])))
    path = write_results("bench_forecast", {"rows": rows, "limit_mb": limit, "goals_s": GOALS_S})
    print(f"wrote {path}")
    bad = [f"{r['intents']} {r['case']}: {w}" for r in rows for w in r["wrong"]]
    for line in bad:
        print("WRONG", line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
