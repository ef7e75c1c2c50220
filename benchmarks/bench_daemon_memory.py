"""The daemon's reload state in memory: peak RSS at 10,000 / 100,000 intents, before and after.

    python benchmarks/bench_daemon_memory.py [--sizes 10000 100000] [--base DIR] [--edits 5]

What the daemon's local mode (and `intentc watch`) keeps is one `Reloader`
(intentc.daemon.reload).  For each size, bench_reload's repository (one
intent per file, half DSL, half YAML, a GPU request on every 20th) is
generated once; then each tree — this worktree and, with --base, another
checkout of intentc (e.g. the commit before a change) — runs in a fresh
child process: `Reloader.load()` of the whole tree, then --edits image
edits of one file each, `update()` timed.  The child reports its RSS after
the load and after the edits (`VmRSS`); the parent takes the child's peak
RSS from the kernel (`os.wait4`).  Both trees run in the same run on the
same files, alternately, so their figures can be compared under one load.

The target (issue 17): peak under 600 MB at 100,000 intents, with a
one-file reload still under 50 ms.

Writes benchmarks/results/bench_daemon_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGE = re.compile(r"vllm:\d+\.\d+")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def child(repo: str, topology: str, edits: int, seed: int) -> dict[str, Any]:
    """In the child: load, edit, report (intentc imported from sys.path[0])."""
    import statistics

    from intentc.daemon.reload import Reloader
    started = rss_mb()
    reloader = Reloader([repo], topology, "d" * 40)
    t0 = time.perf_counter()
    loaded = reloader.load()
    load_s = time.perf_counter() - t0
    if not loaded.ok:
        raise SystemExit(f"the tree does not compile: {[str(d) for d in loaded.diagnostics[:3]]}")
    after_load = rss_mb()
    del loaded
    jobs = sorted(p for p in Path(repo).rglob("job-*") if p.is_file())
    times = []
    for k, path in enumerate(random.Random(seed).sample(jobs, edits)):
        text = path.read_text()
        path.write_text(IMAGE.sub(f"vllm:9.{k}", text, count=1))
        try:
            t0 = time.perf_counter()
            result = reloader.update([path])
            times.append(time.perf_counter() - t0)
        finally:
            path.write_text(text)          # the next child reads the same tree
        if not result.ok or result.rerendered != (path.stem,):
            raise SystemExit(f"unexpected reload of {path}: ok {result.ok}, rerendered {result.rerendered[:3]}")
    return {"rss_start_mb": started, "rss_after_load_mb": after_load, "rss_after_edits_mb": rss_mb(),
            "load_s": round(load_s, 2), "reload_ms_each": [round(t * 1000, 2) for t in times],
            "reload_ms_best": round(min(times) * 1000, 2), "reload_ms_median": round(statistics.median(times) * 1000, 2)}


def run_child(tree: Path, repo: Path, topology: Path, edits: int, seed: int) -> dict[str, Any]:
    env = dict(os.environ, INTENTC_CACHE_DIR="", PYTHONPATH=str(tree))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), str(topology),
           "--edits", str(edits), "--seed", str(seed), "--tree", str(tree)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        text = out.read().decode()
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{tree}: child failed:\n{err[-2000:]}")
    return {**json.loads(text), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "load_before": load_before,
            "load_after": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--base", type=Path, help="another intentc checkout, measured alongside")
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--child", nargs=2, metavar=("REPO", "TOPOLOGY"), help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(args.tree))
        print(json.dumps(child(args.child[0], args.child[1], args.edits, args.seed)))
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_reload import make_repo
    from benchmarks.results import write_results
    trees = {"head": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-daemon-memory-") as tmp:
            repo, topology, _ = make_repo(Path(tmp), n)
            for name, tree in trees.items():
                got = run_child(tree, repo, topology, args.edits, args.seed)
                rows.append({"intents": n, "tree": name, "path": str(tree), **got})
                print(f"{n:>7} {name:<5} peak {got['peak_rss_mb']:>7.1f} MB, after load {got['rss_after_load_mb']:>7.1f}"
                      f" MB, load {got['load_s']:>6.1f} s, reload best/median {got['reload_ms_best']}/"
                      f"{got['reload_ms_median']} ms (load avg {got['load_before']:.1f}-{got['load_after']:.1f})",
                      flush=True)
    write_results("bench_daemon_memory", {"target_peak_mb_at_100k": 600, "rows": rows, "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
