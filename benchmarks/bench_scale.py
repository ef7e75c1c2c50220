"""How `intentc check` grows: 1k / 10k / 100k (/ 300k) intents, time and peak memory.

    python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--repeat 2] [--jobs 0]

The repositories are benchmarks/bench_frontend.py's (`generate`: one intent
per file, or --per-file of them, half DSL, half YAML, four tenants, fifty
datasets, `after` chains).
For each size, `intentc check DIR --format json` runs as a user runs it, in a
fresh process, cold (parse cache off) and then with a warm parse cache
(with --baseline, the run that fills the cache is recorded too, as "fill").
Measured per run, from the kernel's accounting of that process and its
workers (`os.wait4`): wall time, CPU time (user + system) and peak resident
memory (the largest process of the tree, which is the parent).

The growth exponent of each measure is the slope of log(measure) against
log(intents), fitted by least squares over the sizes: 1.0 is linear.  Peak
memory includes a constant (the interpreter and the imported modules,
measured by checking a one-file repository in the same run), so its slope
is also given for the memory above that constant.

The machine is shared: the load average (`/proc/loadavg`) is recorded
before and after every run, and the best of --repeat runs is kept.
`--baseline DIR` also runs another checkout's `intentc` (DIR on PYTHONPATH,
e.g. a work tree at the base commit) on the same repositories, its runs
alternating with this tree's, so that before and after share the load.
Writes benchmarks/results/bench_scale.json.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_frontend import generate  # noqa: E402
from benchmarks.proc import best, measure  # noqa: E402
from benchmarks.results import write_results  # noqa: E402


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x (None with fewer than two usable points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return round(sum((p[0] - mx) * (p[1] - my) for p in pts) / den, 3)


def _side_by_side(cmd: list[str], envs: dict[str, dict[str, str]], repeat: int,
                  before_each: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The best of `repeat` runs of `cmd` under each environment, the runs taken in turn."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in envs}
    for _ in range(repeat):
        for name, env in envs.items():
            if before_each is not None:
                before_each[name]()
            runs[name].append(measure(cmd, env))
    out = {}
    for name, rs in runs.items():
        top = min(rs, key=lambda r: r["wall_s"])
        out[name] = {**top, "wall_s_all": [r["wall_s"] for r in rs], "cpu_s_all": [r["cpu_s"] for r in rs],
                     "peak_rss_mb_all": [r["peak_rss_mb"] for r in rs]}
    return out


def run_with_baseline(sizes: list[int], repeat: int, jobs: int, baseline: str, per_file: int = 1) -> dict[str, Any]:
    """Each size: cold and cached, this tree and `baseline` in turn on the same repository."""
    work = Path(tempfile.mkdtemp(prefix="intentc-scale-"))
    check = [sys.executable, "-m", "intentc", "check", "--format", "json"] + (["--jobs", str(jobs)] if jobs else [])
    trees = {"after": str(ROOT), "before": str(Path(baseline).resolve())}
    # PYTHONSAFEPATH: `python -m intentc` would otherwise put the current directory first on
    # sys.path, and run from a work tree both sides would import that tree's intentc
    base_env = dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, PYTHONSAFEPATH="1")
    try:
        rows: list[dict[str, Any]] = []
        for n in sizes:
            repo = work / f"repo-{n}"
            generate(repo, n, per_file)
            cold_envs = {name: dict(base_env, PYTHONPATH=tree, INTENTC_CACHE_DIR="") for name, tree in trees.items()}
            cold = _side_by_side(check + [str(repo)], cold_envs, repeat)
            warm_envs = {name: dict(base_env, PYTHONPATH=tree, INTENTC_CACHE_DIR=str(work / f"cache-{name}"))
                         for name, tree in trees.items()}
            fill = {name: measure(check + [str(repo)], env) for name, env in warm_envs.items()}   # fills the cache
            warm = _side_by_side(check + [str(repo)], warm_envs, repeat)
            rows.append({"intents": n, "cold": cold, "fill": fill, "cached": warm})
            for mode, res in (("cold", cold), ("fill", fill), ("cached", warm)):
                a, b = res["after"], res["before"]
                print(f"{n:>8} {mode:>6}: before {b['wall_s']:>7} s wall {b['cpu_s']:>7} s cpu {b['peak_rss_mb']:>7} MB"
                      f" | after {a['wall_s']:>7} s wall {a['cpu_s']:>7} s cpu {a['peak_rss_mb']:>7} MB"
                      f" | load {a['load_before']}-{b['load_after']}", flush=True)
            shutil.rmtree(repo, ignore_errors=True)
            for name in trees:
                shutil.rmtree(work / f"cache-{name}", ignore_errors=True)
        return {"sizes": sizes, "jobs": jobs or os.cpu_count(), "baseline": trees["before"], "per_file": per_file,
                "rows": rows}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(sizes: list[int], repeat: int, jobs: int, per_file: int = 1) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="intentc-scale-"))
    cache = work / "cache"
    check = [sys.executable, "-m", "intentc", "check", "--format", "json"] + (["--jobs", str(jobs)] if jobs else [])
    try:
        tiny = work / "tiny"
        tiny.mkdir()
        (tiny / "t.intent").write_text("tenant t { tier: gold }\n")
        floor = best(check + [str(tiny)], dict(os.environ, INTENTC_CACHE_DIR=""), repeat)
        rows: list[dict[str, Any]] = []
        for n in sizes:
            repo = work / f"repo-{n}"
            generate(repo, n, per_file)
            cold = best(check + [str(repo)], dict(os.environ, INTENTC_CACHE_DIR=""), repeat)
            env = dict(os.environ, INTENTC_CACHE_DIR=str(cache))
            shutil.rmtree(cache, ignore_errors=True)
            measure(check + [str(repo)], env)                   # fills the cache
            warm = best(check + [str(repo)], env, repeat)
            rows.append({"intents": n, "cold": cold, "cached": warm})
            print(f"{n:>8} cold {cold['wall_s']:>7} s cpu {cold['cpu_s']:>7} s {cold['peak_rss_mb']:>7} MB | "
                  f"cached {warm['wall_s']:>7} s {warm['peak_rss_mb']:>7} MB | load {cold['load_before']}", flush=True)
            shutil.rmtree(repo, ignore_errors=True)
            shutil.rmtree(cache, ignore_errors=True)
        xs = [float(r["intents"]) for r in rows]
        base = floor["peak_rss_mb"]
        exponents: dict[str, dict[str, float | None]] = {}
        for mode in ("cold", "cached"):
            exponents[mode] = {
                "wall": slope(xs, [r[mode]["wall_s"] for r in rows]),
                "cpu": slope(xs, [r[mode]["cpu_s"] for r in rows]),
                "peak_rss": slope(xs, [r[mode]["peak_rss_mb"] for r in rows]),
                "peak_rss_above_floor": slope(xs, [r[mode]["peak_rss_mb"] - base for r in rows]),
            }
        return {"sizes": sizes, "jobs": jobs or os.cpu_count(), "per_file": per_file, "one_file_floor": floor,
                "rows": rows, "exponents": exponents}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (0: one per core)")
    ap.add_argument("--per-file", type=int, default=1, help="intents per file (default 1; e.g. 100: a team's "
                                                             "intents in one file)")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout to run side by side (before/after)")
    ap.add_argument("--name", help="results file name under benchmarks/results/ (default: bench_scale, "
                                   "or bench_scale_before_after with --baseline)")
    args = ap.parse_args()
    if args.baseline:
        write_results(args.name or "bench_scale_before_after",
                      run_with_baseline(args.sizes, args.repeat, args.jobs, args.baseline, args.per_file))
        return
    result = run(args.sizes, args.repeat, args.jobs, args.per_file)
    write_results(args.name or "bench_scale", result)
    print("growth exponents (log-log slope; 1.0 = linear):")
    exponents: dict[str, dict[str, float | None]] = result["exponents"]
    for mode, e in exponents.items():
        print(f"  {mode:>6}: " + ", ".join(f"{k} {v}" for k, v in e.items()))


if __name__ == "__main__":
    main()
