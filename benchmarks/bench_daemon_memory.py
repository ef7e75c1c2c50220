"""The daemon's reload state in memory: peak RSS at 10,000 / 100,000 intents, before and after.

    python benchmarks/bench_daemon_memory.py [--sizes 10000 100000] [--base DIR] [--edits 5]

What the daemon's local mode (and `intentc watch`) keeps is one `Reloader`
(intentc.daemon.reload).  For each size, bench_reload's repository (one
intent per file, half DSL, half YAML, a GPU request on every 20th) is
generated once; then each tree — this worktree and, with --base, another
checkout of intentc (e.g. the commit before a change) — runs in a fresh
child process: `Reloader.load()` of the whole tree, then --edits image
edits of one file each (chosen by the parent, so the child holds no list
of the repository's files), `update()` timed.  The child reports its RSS after
the load and after the edits (`VmRSS`); the parent takes the child's peak
RSS from the kernel (`os.wait4`).  Both trees run in the same run on the
same files, alternately, so their figures can be compared under one load.

With --full-plans N the child then makes N GPU-count edits (each of another GPU
intent's file, chosen by the parent), each planned incrementally and then in
full by the Reloader's background re-plan (`settle()` waits for it), and
keeps the desired state in force as the daemon's reactor does (`LocalSource.desired`
of every result, replaced when its manifests differ): the kernel's peak
(`VmHWM`, reset before the first such edit through /proc/self/clear_refs) is
then the full plans' peak; reported beside the RSS before and after them.

With --breakdown the child also sizes what the loaded Reloader holds, part
by part (IR, plan, rendered objects, render cache, file table, ...).

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


def deep_size(obj: object, seen: set[int]) -> int:
    """Bytes of `obj` and everything it reaches that `seen` does not hold yet
    (containers, dataclass fields, slots); classes and functions are not counted."""
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type) or (callable(o) and not hasattr(o, "__dataclass_fields__")):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, (str, bytes, int, float)):
            continue
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        if hasattr(o, "__dict__"):
            stack.append(vars(o))
        for cls in type(o).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if slot not in ("__dict__", "__weakref__", "_lock") and getattr(o, slot, None) is not None:
                    stack.append(getattr(o, slot))
    return total


def parts(reloader: Any) -> dict[str, float]:
    """What the loaded Reloader holds, part by part (MB; each object counted once, in this order)."""
    snap, seen = reloader.current, set()
    table = reloader._table
    named = [("ir", snap.program), ("plan", snap.plan), ("rendered", snap.rendered),
             ("render_cache", dict(snap.intents)),
             ("file_table", (table._states, table._names, table._noted, table._texts)),
             ("diagnostics", (snap.diagnostics, snap.plan_diagnostics, snap.global_diagnostics)),
             ("rest_of_snapshot", snap)]
    return {name: round(deep_size(obj, seen) / 2**20, 1) for name, obj in named}


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def full_plans(reloader: Any, files: list[str]) -> dict[str, Any]:
    """GPU-count edits, each planned incrementally then in full in the background, with the
    desired state in force kept as the daemon's reactor keeps it; the peak is theirs."""
    from benchmarks.bench_reload import gpu_edit
    from intentc.daemon.source import LocalSource
    source = LocalSource.__new__(LocalSource)       # the Reloader loaded above, as the daemon holds it
    source.reloader = reloader
    swapped: list[Any] = []
    reloader.listen(swapped.append)
    in_force = source.desired(reloader.update([]))       # the snapshot in force, as a result
    before = rss_mb()
    Path("/proc/self/clear_refs").write_text("5")        # VmHWM := VmRSS: the peak from here on
    texts = {f: Path(f).read_text() for f in files}
    notes = []
    try:
        for k, f in enumerate(files):
            gpu_edit(Path(f), k)
            t0 = time.perf_counter()
            results = [reloader.update([f])]
            while results:                  # the edit's, then (after settle) the background swap's
                result = results.pop()
                desired = source.desired(result)
                if desired is not None and (in_force is None or desired.manifests != in_force.manifests):
                    in_force = desired
                notes.append(result.plan_note)
                del result, desired
                if not results and reloader.settle():
                    results, swapped[:] = list(swapped), []
            notes.append(f"{time.perf_counter() - t0:.1f} s")
    finally:
        for f, text in texts.items():
            Path(f).write_text(text)
    return {"rss_before_full_plans_mb": before, "full_plans_peak_mb": status_mb("VmHWM"),
            "rss_after_full_plans_mb": rss_mb(), "full_plan_notes": notes}


def child(repo: str, topology: str, files: list[str], breakdown: bool, gpu_files: list[str]) -> dict[str, Any]:
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
    held = parts(reloader) if breakdown else None
    del loaded
    times = []
    # the files to edit come from the parent: a list of every file's Path here would be
    # the harness's memory (~40 MB at 100k), counted in the daemon's peak
    for k, path in enumerate(map(Path, files)):
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
    after_edits = rss_mb()
    full = full_plans(reloader, gpu_files) if gpu_files else {}
    return {"rss_start_mb": started, "rss_after_load_mb": after_load, "rss_after_edits_mb": after_edits,
            "held_mb": held, **full,
            "load_s": round(load_s, 2), "reload_ms_each": [round(t * 1000, 2) for t in times],
            "reload_ms_best": round(min(times) * 1000, 2), "reload_ms_median": round(statistics.median(times) * 1000, 2)}


def run_child(tree: Path, repo: Path, topology: Path, files: list[Path], breakdown: bool,
              gpu_files: list[Path]) -> dict[str, Any]:
    from benchmarks.proc import run_json   # the parent: benchmarks/ is on sys.path (main)

    env = dict(os.environ, INTENTC_CACHE_DIR="", PYTHONPATH=str(tree))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), str(topology),
           "--tree", str(tree), *(["--breakdown"] if breakdown else []), "--files", *map(str, files),
           *(["--gpu-files", *map(str, gpu_files)] if gpu_files else [])]
    return run_json(cmd, env, str(tree))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--base", type=Path, help="another intentc checkout, measured alongside")
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--breakdown", action="store_true",
                    help="also size what the loaded Reloader holds, part by part (after the RSS is read; "
                         "the walk's own bookkeeping raises the peak, so take peaks from a run without it)")
    ap.add_argument("--child", nargs=2, metavar=("REPO", "TOPOLOGY"), help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--full-plans", type=int, default=0,
                    help="then this many GPU-count edits, each followed by the background full re-plan")
    ap.add_argument("--files", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--gpu-files", nargs="+", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(args.tree))
        print(json.dumps(child(args.child[0], args.child[1], args.files, args.breakdown, args.gpu_files)))
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_reload import GPU_EVERY, make_repo
    from benchmarks.results import write_results
    trees = {"head": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-daemon-memory-") as tmp:
            repo, topology, jobs = make_repo(Path(tmp), n)
            rng = random.Random(args.seed)
            files = rng.sample(sorted(jobs), args.edits)
            gpu_files = rng.sample(sorted(p for p in jobs if int(p.stem.removeprefix("job-")) % GPU_EVERY == 0
                                          and p not in files), args.full_plans)
            del jobs
            for name, tree in trees.items():
                got = run_child(tree, repo, topology, files, args.breakdown, gpu_files)
                rows.append({"intents": n, "tree": name, "path": str(tree), **got})
                print(f"{n:>7} {name:<5} peak {got['peak_rss_mb']:>7.1f} MB, after load {got['rss_after_load_mb']:>7.1f}"
                      f" MB, load {got['load_s']:>6.1f} s, reload best/median {got['reload_ms_best']}/"
                      f"{got['reload_ms_median']} ms (load avg {got['load_before']:.1f}-{got['load_after']:.1f})",
                      flush=True)
                if gpu_files:
                    print(f"{'':>13} {args.full_plans} full plans: peak {got['full_plans_peak_mb']} MB (from "
                          f"{got['rss_before_full_plans_mb']} MB), after {got['rss_after_full_plans_mb']} MB; "
                          f"{got['full_plan_notes']}", flush=True)
                if got["held_mb"]:
                    print(f"{'':>13} held: {got['held_mb']}", flush=True)
    write_results("bench_daemon_memory", {"target_peak_mb_at_100k": 600, "rows": rows, "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
