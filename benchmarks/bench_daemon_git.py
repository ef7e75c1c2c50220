"""The daemon's git mode in memory and time: each commit compiled as the reactor does.

    python benchmarks/bench_daemon_git.py [--sizes 10000 100000] [--commits 3] [--base DIR]

In git mode (`intentc daemon --repo`) the daemon compiles every new commit of
its branch in full (`GitSource.compile`: the commit exported over the last
one, the parse cache and the last commit's parse results reused, the plan in
force passed so the new plan shares its records) and keeps the result as the
desired state in force (`from_compile`), which it holds while it compiles the
next commit.

For each size, bench_reload's repository (one intent per file, half DSL, half
YAML, a GPU request on every 20th) is generated and committed, then
--commits - 1 more commits each change the image of one intent.  Each tree —
this worktree and, with --base, another checkout of intentc — runs in a fresh
child process with an empty parse cache (a daemon pod's first start) and
compiles the commits in order, holding the desired state as the reactor does.
Per commit it reports the CPU time, the peak RSS during that commit (the
kernel's `VmHWM`, reset through /proc/self/clear_refs before it) and the RSS
after it; the run's peak is the largest of those (the kernel's peak of the
child, from `os.wait4`, is reset with them: it is only the last commit's).  The trees run one after the other on the same commits, so
their figures can be compared under one load.

With --every S it is a soak (issue 17 asks for an hour with a commit every
minute: `--sizes 100000 --commits 61 --every 60 --out bench_daemon_git_soak`):
commit k is taken up k * S seconds after the first (the daemon idle in
between), the edits cycle through bench_soak_100k's four kinds (an image, a
GPU count, a new file, its removal), and the least-squares slope of the RSS
after each commit is reported, after a warm-up and by thirds.

The target (issue 17): the daemon under 600 MB at 100,000 intents.

Writes benchmarks/results/bench_daemon_git.json.
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
_GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def make_history(repo: Path, jobs: list[Path], edits: int, seed: int, kinds: str) -> list[str]:
    """Commit the tree, then `edits` commits of one edit each: an image change each
    (`kinds` "image"), or the soak's four kinds in turn ("cycle": image, GPU count, a new
    file, that file removed; bench_soak_100k's `Editor`)."""
    from benchmarks.bench_soak_100k import Editor
    subprocess.run([*_GIT, "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*_GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*_GIT, "-C", str(repo), "commit", "-q", "-m", "all intents"], check=True)
    editor = Editor(repo, jobs, seed)
    images = random.Random(seed).sample(sorted(jobs), edits) if kinds == "image" else []
    for k in range(1, edits + 1):
        if images:
            path = images[k - 1]
            text, hits = IMAGE.subn(f"vllm:9.{k}", path.read_text(), count=1)
            assert hits == 1, path
            path.write_text(text)
            kind = "image"
        else:
            kind, path = editor.edit(k)
        subprocess.run([*_GIT, "-C", str(repo), "add", "-A"], check=True)
        subprocess.run([*_GIT, "-C", str(repo), "commit", "-q", "-m", f"{kind}: {path.name}"], check=True)
    out = subprocess.run([*_GIT, "-C", str(repo), "rev-list", "--reverse", "main"], check=True,
                         capture_output=True, text=True).stdout
    return out.split()


def child(repo: str, topology: str, workdir: str, shas: list[str], every: float) -> dict[str, Any]:
    """In the child: compile each commit as the daemon's reactor does (intentc from sys.path[0]);
    with `every`, commit k is taken up no earlier than k * `every` seconds after the first
    (a branch that gets a commit every `every` seconds, the daemon idle in between)."""
    import gc
    import inspect

    from intentc.daemon.source import GitSource, from_compile
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION
    from intentc.render.targets import DEFAULT_TARGET

    source = GitSource(repo, "main", ("dsl", "yaml"), topology, workdir, DEFAULT_TARGET, 0)
    # the objects in force as the reactor passes them, to a tree whose GitSource takes them
    objects = "objects" in inspect.signature(source.compile).parameters
    desired = None
    commits = []
    t0 = time.time()
    for k, sha in enumerate(shas):
        time.sleep(max(0.0, t0 + k * every - time.time()))
        Path("/proc/self/clear_refs").write_text("5")       # VmHWM := VmRSS: this commit's peak from here
        cpu0, wall0 = time.process_time(), time.perf_counter()
        in_force = desired.preview.plan if desired is not None and desired.preview is not None else None
        kept = {"objects": desired.by_ref} if objects and desired is not None else {}
        compiled = source.compile(sha, DEFAULT_KUBE_VERSION, in_force, **kept)
        made = from_compile(compiled, "git")
        if made is None or made.held:
            raise SystemExit(f"commit {sha[:12]} does not compile: {[str(d) for d in compiled.diagnostics[:3]]}")
        desired = made                  # the reactor's state now holds the new commit's desired state only
        del compiled, made, in_force, kept
        gc.collect()
        commits.append({"commit": sha[:12], "t_s": round(time.time() - t0, 1), "cpu_s": round(time.process_time() - cpu0, 1),
                        "wall_s": round(time.perf_counter() - wall0, 1), "peak_mb": status_mb("VmHWM"),
                        "rss_after_mb": status_mb("VmRSS")})
    return {"commits": commits}


def soak_summary(commits: list[dict[str, Any]], every: float) -> dict[str, Any]:
    """The RSS after each commit over the run: least-squares slope after a warm-up (a fifth
    of the run, at least two commits) and by thirds of the rest (bench_soak's measures)."""
    from benchmarks.bench_soak import slope_per_hour, windows
    warm = max(commits[-1]["t_s"] / 5, 2 * every)
    steady = [(c["t_s"], c["rss_after_mb"]) for c in commits if c["t_s"] >= warm]
    return {"warmup_s": warm, "rss_slope_mb_per_hour": slope_per_hour(steady), "rss_slope_by_window": windows(steady),
            "peak_mb": max(c["peak_mb"] for c in commits), "rss_after_first_mb": commits[0]["rss_after_mb"],
            "rss_after_last_mb": commits[-1]["rss_after_mb"]}


def run_child(tree: Path, repo: Path, topology: Path, shas: list[str], every: float) -> dict[str, Any]:
    from benchmarks.proc import run_json   # the parent: benchmarks/ is on sys.path (main)

    with tempfile.TemporaryDirectory(prefix="bench-daemon-git-") as work:
        env = dict(os.environ, INTENTC_CACHE_DIR=str(Path(work) / "cache"), PYTHONPATH=str(tree))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), str(topology), work,
               "--tree", str(tree), "--every", str(every), "--shas", *shas]
        got = run_json(cmd, env, str(tree))
    # the kernel's peak of the child is only its last commit's: each commit resets `VmHWM`
    got["peak_rss_mb"] = max(c["peak_mb"] for c in got["commits"])
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--commits", type=int, default=3, help="the first commit and this many minus one edits")
    ap.add_argument("--base", type=Path, help="another intentc checkout, measured alongside")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--every", type=float, default=0.0,
                    help="a soak: take up a commit every this many seconds (e.g. --commits 61 --every 60 for an "
                         "hour); the edits then cycle through an image, a GPU count, a new file and its removal, "
                         "and the RSS slope after each commit is reported")
    ap.add_argument("--out", default="bench_daemon_git", help="results/<out>.json")
    ap.add_argument("--child", nargs=3, metavar=("REPO", "TOPOLOGY", "WORKDIR"), help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--shas", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(args.tree))
        print(json.dumps(child(*args.child, args.shas, args.every)))
        return 0
    if args.commits < 2:
        ap.error("--commits must be at least 2 (the second commit is the one compiled beside the first)")
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_reload import make_repo
    from benchmarks.results import write_results
    trees = {"head": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench-daemon-git-repo-") as tmp:
            repo, topology, jobs = make_repo(Path(tmp), n)
            shas = make_history(repo, jobs, args.commits - 1, args.seed, "cycle" if args.every else "image")
            del jobs
            for name, tree in trees.items():
                got = run_child(tree, repo, topology, shas, args.every)
                if args.every:
                    got["soak"] = soak_summary(got["commits"], args.every)
                rows.append({"intents": n, "tree": name, "path": str(tree), **got})
                each = ", ".join(f"{c['cpu_s']} s CPU / peak {c['peak_mb']} MB / after {c['rss_after_mb']} MB"
                                 for c in got["commits"])
                print(f"{n:>7} {name:<5} peak {got['peak_rss_mb']:>7.1f} MB; per commit: {each} "
                      f"(load avg {got['load_before']:.1f}-{got['load_after']:.1f})", flush=True)
                if args.every:
                    print(f"{'':>13} soak: {got['soak']}", flush=True)
    write_results(args.out, {"every_s": args.every, "target_peak_mb_at_100k": 600, "rows": rows, "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
