"""Soak at 100,000 intents: the daemon's hot-reload state following a git working tree for an hour.

    python benchmarks/bench_soak_100k.py [--intents 100000] [--minutes 60] [--commit-every 60]
        [--sample-every 5] [--out bench_soak_100k]

What runs is what `intentc daemon --local` runs between the API server and
the files, in a child process of its own (its memory is the daemon's):
`daemon.source.LocalSource` (one `Reloader`) loads the tree, and
`daemon.reload.follow` (the file watcher thread the daemon starts) feeds
every batch of changed files to `Reloader.update`; each result then goes
through what the reactor's `_reloaded` does before it applies: the
`Desired` of the snapshot (`LocalSource.desired`), kept as the state in
force when its manifests differ.  After an incremental plan the Reloader
plans in full in its own thread and swaps that plan in (what the daemon
does; ~20 s of CPU at 100,000 intents): those swaps come through `follow`'s
listener like any other result.

What does not run: no cluster, so nothing is applied, no informers, no
drift detection, no metrics server — the soak stops at the reload (read,
parse, passes, plan, render, swap) and the `Desired` made of it.  The
daemon's git mode (without --local) does not keep a Reloader: it compiles
every new commit of the branch in full (`GitSource.compile`); that path is
the one the 62-minute soak of benchmarks/bench_soak.py drove at 40 intents
on a real control plane.  Here the "commit every minute" is a user's: the
parent edits one file of the working tree the daemon follows and commits
it (`git add -A; git commit`, whose writes under .git/ the watcher sees and
drops, as the daemon's does).

The repository is benchmarks/bench_reload.py's (one intent per file, half
DSL, half YAML, four tenants, `after` chains, a GPU request on every 20th
intent, 3 x 100 eight-GPU nodes), in a git repository with the intents in
dsl/ and yaml/ and the topology in clusters/.  Edits cycle through four
kinds: an image change (one intent re-rendered, plan kept), a GPU count
change (incremental plan, then the background full re-plan), a new file (a
new GPU intent), and the removal of the file added the minute before.

Sampled every --sample-every seconds: the child's VmRSS and the load
average.  Reported: RSS after the load, first / last / peak sample, the
kernel's peak (`os.wait4`), the least-squares slope (MB per hour) after a
warm-up (the first fifth of the run, at least two commits) and by thirds of
the rest (a leak keeps its slope, an allocator settling in flattens), and
per edit kind the swap times (what `follow` measured around
`Reloader.update`) and whether the plan was incremental, kept or made in
full, with the time until the background full plan was swapped in.
Writes benchmarks/results/<--out>.json with every sample and every result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KINDS = ("image", "gpu", "add", "remove")


# -- the child: the daemon's local source, following the files ------------------------------
def child(repo: str, topology: str, commit: str) -> None:
    """Load, follow, and report each reload as one JSON line on stdout."""
    import gc
    import queue

    from intentc.daemon.reload import ReloadResult, follow
    from intentc.daemon.source import Desired, LocalSource
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION
    from intentc.render.targets import DEFAULT_TARGET

    def emit(doc: dict[str, Any]) -> None:
        print(json.dumps({"at": time.time(), **doc}), flush=True)

    paths = (str(Path(repo) / "dsl"), str(Path(repo) / "yaml"))
    t0 = time.perf_counter()
    source = LocalSource(paths, topology, commit, DEFAULT_KUBE_VERSION, DEFAULT_TARGET, 0)
    loaded = source.load()
    load_s = time.perf_counter() - t0
    if not loaded.ok:
        emit({"event": "failed", "diagnostics": [str(d) for d in loaded.diagnostics[:5]]})
        raise SystemExit(1)
    in_force: Desired | None = source.desired(loaded)
    del loaded
    import intentc
    emit({"event": "loaded", "load_s": round(load_s, 2), "rss_mb": _rss_mb("self"),
          "frozen": gc.get_freeze_count(), "intentc": str(Path(intentc.__file__).parent)})
    results: queue.Queue[tuple[ReloadResult, float]] = queue.Queue()
    stop = threading.Event()
    threading.Thread(target=follow, args=(source.reloader, lambda r, s: results.put((r, s)), stop),
                     name="intentc-files", daemon=True).start()
    emit({"event": "following"})
    while True:
        result, seconds = results.get()
        # what the reactor does with a result (DaemonLoop._reloaded), short of the rollout
        t1 = time.perf_counter()
        desired = source.desired(result) if result.ok else None
        changed = desired is not None and (in_force is None or in_force.manifests != desired.manifests)
        if changed:
            in_force = desired
        desired_s = time.perf_counter() - t1
        snap = result.snapshot
        emit({"event": "result", "ok": result.ok, "seconds": round(seconds, 4), "background": seconds == 0.0,
              "changed_files": list(result.changed_files), "reparsed": len(result.reparsed),
              "rerendered": len(result.rerendered), "replanned": result.replanned, "plan_note": result.plan_note,
              "generation": snap.generation if snap is not None else None, "desired_changed": changed,
              "desired_s": round(desired_s, 4), "frozen": gc.get_freeze_count(),
              "diagnostics": [str(d) for d in result.diagnostics if d.is_error][:3]})
        del result, snap, desired


def _rss_mb(pid: int | str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


# -- the parent: the repository, the commits, the samples ------------------------------------
def git(repo: Path, *args: str) -> str:
    from benchmarks.bench_soak import git as run_git
    return run_git(repo, *args)


def make_git_repo(root: Path, n: int) -> tuple[Path, Path, list[Path]]:
    """bench_reload's tree as a git repository: dsl/, yaml/ and clusters/topology.yaml."""
    from benchmarks.bench_reload import make_repo
    repo, topology, jobs = make_repo(root, n)
    (repo / "clusters").mkdir()
    moved = repo / "clusters" / "topology.yaml"
    topology.rename(moved)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "soak")
    git(repo, "config", "user.email", "soak@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{n} intents")
    return repo, moved, jobs


def new_intent(k: int) -> str:
    """A new DSL file's intent (a GPU request, no `after`): bench_frontend's shape under a new name."""
    from benchmarks.bench_frontend import dsl_intent
    return dsl_intent(0, random.Random(k)).replace("job-00000", f"soak-{k:05d}").replace("out-00000",
                                                                                        f"out-soak-{k:05d}")


class Editor:
    """One edit per commit, the kinds in turn (`KINDS`), files chosen by a seeded generator."""

    def __init__(self, repo: Path, jobs: list[Path], seed: int) -> None:
        self.repo = repo
        self.jobs = jobs
        self.gpu_jobs = [p for p in jobs if int(p.stem.removeprefix("job-")) % 20 == 0]
        self.rng = random.Random(seed)
        self.added: Path | None = None

    def edit(self, k: int) -> tuple[str, Path]:
        from benchmarks.bench_reload import IMAGE, gpu_edit, rewrite
        kind = KINDS[(k - 1) % len(KINDS)]
        if kind == "image":
            path = self.rng.choice(self.jobs)
            rewrite(path, IMAGE, f"vllm:9.{k}")
        elif kind == "gpu":
            path = self.rng.choice(self.gpu_jobs)
            gpu_edit(path, k)
        elif kind == "add" or self.added is None:
            kind = "add"
            path = self.repo / "dsl" / f"soak-{k:05d}.intent"
            path.write_text(new_intent(k))
            self.added = path
        else:
            path, self.added = self.added, None
            path.unlink()
        return kind, path


def soak(n: int, minutes: float, commit_every: float, sample_every: float, seed: int, work: Path) -> dict[str, Any]:
    from benchmarks.proc import loadavg
    t_gen = time.perf_counter()
    repo, topology, jobs = make_git_repo(work, n)
    print(f"{n} intents generated and committed in {time.perf_counter() - t_gen:.0f} s", flush=True)
    head = git(repo, "rev-parse", "HEAD")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), str(topology), head]
    env = dict(os.environ, INTENTC_CACHE_DIR="", PYTHONPATH=str(ROOT))
    err = (work / "child.err").open("wb")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
    events: list[dict[str, Any]] = []
    reader = threading.Thread(target=_read_events, args=(proc.stdout, events), daemon=True)
    reader.start()
    loading: list[dict[str, Any]] = []      # while the child loads (its own clock)
    samples: list[dict[str, Any]] = []
    commits: list[dict[str, Any]] = []
    usage = None
    try:
        start = time.time()
        while not any(e["event"] in ("following", "failed") for e in events):
            if proc.poll() is not None:
                raise SystemExit(f"the child exited {proc.returncode}: {(work / 'child.err').read_text()[-2000:]}")
            loading.append(_sample(proc.pid, start, loadavg()))
            time.sleep(sample_every)
        if events[-1]["event"] == "failed":
            raise SystemExit(f"the tree does not compile: {events[-1]['diagnostics']}")
        loaded = next(e for e in events if e["event"] == "loaded")
        print(f"loaded in {loaded['load_s']} s, RSS {loaded['rss_mb']} MB; a commit every {commit_every:.0f} s "
              f"for {minutes:.0f} min", flush=True)
        t0 = time.time()                 # the soak's clock starts once the daemon follows
        end = t0 + minutes * 60
        next_commit = t0 + commit_every
        editor = Editor(repo, jobs, seed)
        k = 0
        while time.time() < end:
            if proc.poll() is not None:
                raise SystemExit(f"the child exited {proc.returncode}: {(work / 'child.err').read_text()[-2000:]}")
            now = time.time()
            if now >= next_commit:
                k += 1
                kind, path = editor.edit(k)
                rel = path.relative_to(repo).as_posix()
                git(repo, "add", "-A")
                git(repo, "commit", "-q", "-m", f"{kind}: {rel}")
                commits.append({"k": k, "kind": kind, "file": rel, "at": now, "t_s": round(now - t0, 1),
                                "sha": git(repo, "rev-parse", "HEAD")})
                next_commit += commit_every
            samples.append(_sample(proc.pid, t0, loadavg()))
            if len(samples) % 12 == 0:
                last = samples[-1]
                print(f"{last['t_s']:7.0f}s rss {last['rss_mb']} MB, {k} commits, {len(events)} events, "
                      f"load {last['load']}", flush=True)
            time.sleep(max(0.0, min(sample_every, end - time.time())))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, _status, usage = os.wait4(proc.pid, 0)
        reader.join(5)
        err.close()
    return {**summarize(n, minutes, commit_every, events, samples, commits, usage, t0), "load_samples": loading}


def _read_events(stream: IO[str] | None, into: list[dict[str, Any]]) -> None:
    assert stream is not None
    for line in stream:
        if line.startswith("{"):
            into.append(json.loads(line))


def _sample(pid: int, t0: float, load: float) -> dict[str, Any]:
    now = time.time()
    return {"t_s": round(now - t0, 1), "rss_mb": _rss_mb(pid), "load": load}


def per_kind(events: list[dict[str, Any]], commits: list[dict[str, Any]], t0: float) -> dict[str, Any]:
    """Each commit's reload (the result naming its file) and, after an incremental plan, the
    background full plan's swap; grouped by edit kind."""
    rows: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    results = [e for e in events if e["event"] == "result"]
    for c in commits:
        mine = [e for e in results if not e["background"] and any(f.endswith(c["file"]) for f in e["changed_files"])
                and e["at"] >= c["at"]]
        if not mine:
            rows[c["kind"]].append({"k": c["k"], "reloaded": False})
            continue
        r = mine[0]
        nxt = next((d["at"] for d in commits if d["k"] == c["k"] + 1), float("inf"))
        full = next((e for e in results if e["background"] and r["at"] <= e["at"] < nxt), None)
        rows[c["kind"]].append({
            "k": c["k"], "reloaded": r["ok"], "swap_ms": round(r["seconds"] * 1000, 1),
            "plan": ("incremental" if r["plan_note"].startswith("incremental") else
                     "full" if r["replanned"] else "kept"),
            "rerendered": r["rerendered"], "desired_ms": round(r["desired_s"] * 1000, 1),
            "seen_after_s": round(r["at"] - c["at"], 2),
            "background_full_swap_after_s": round(full["at"] - r["at"], 1) if full else None})
    out: dict[str, Any] = {}
    for kind, got in rows.items():
        swaps = [g["swap_ms"] for g in got if g.get("reloaded")]
        out[kind] = {"commits": len(got), "reloaded": len(swaps),
                     "swap_ms_median": round(statistics.median(swaps), 1) if swaps else None,
                     "swap_ms_max": max(swaps) if swaps else None,
                     "plans": sorted({g["plan"] for g in got if "plan" in g}), "each": got}
    return out


def summarize(n: int, minutes: float, commit_every: float, events: list[dict[str, Any]],
              samples: list[dict[str, Any]], commits: list[dict[str, Any]], usage: Any, t0: float) -> dict[str, Any]:
    from benchmarks.bench_soak import slope_per_hour, windows
    loaded = next((e for e in events if e["event"] == "loaded"), {})
    run = [s for s in samples if s["t_s"] >= 0 and s["rss_mb"]]
    warm = max(minutes * 60 / 5, 2 * commit_every)
    steady = [(s["t_s"], s["rss_mb"]) for s in run if s["t_s"] >= warm]
    sizes = [s["rss_mb"] for s in run]
    results = [e for e in events if e["event"] == "result"]
    return {
        "intents": n, "minutes": minutes, "commit_every_s": commit_every, "commits": len(commits),
        "load_s": loaded.get("load_s"), "rss_mb_after_load": loaded.get("rss_mb"),
        "rss_mb_first": sizes[0] if sizes else None, "rss_mb_last": sizes[-1] if sizes else None,
        "rss_mb_peak_sampled": max(sizes) if sizes else None,
        "rss_mb_peak_kernel": round(usage.ru_maxrss / 1024, 1) if usage is not None else None,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1) if usage is not None else None,
        "warmup_s": warm, "rss_slope_mb_per_hour": slope_per_hour(steady), "rss_slope_by_window": windows(steady),
        "load_mean": round(sum(s["load"] for s in run) / len(run), 2) if run else None,
        "load_max": max(s["load"] for s in run) if run else None,
        "reloads": len([e for e in results if not e["background"]]),
        "background_swaps": len([e for e in results if e["background"]]),
        "failed_reloads": [e for e in results if not e["ok"]],
        "by_kind": per_kind(events, commits, t0), "commits_made": commits,
        "frozen_objects": [(e.get("generation"), e["frozen"]) for e in events if "frozen" in e],
        "intentc": loaded.get("intentc"), "cpus": os.cpu_count(),
        "samples": samples, "events": events,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, default=100_000)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--commit-every", type=float, default=60.0, help="seconds between commits")
    ap.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS samples")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--out", default="bench_soak_100k", help="results file name (benchmarks/results/<out>.json)")
    ap.add_argument("--commit", help="the intentc commit measured (default: this tree's HEAD); for a run "
                    "from an exported copy (`git archive`), so that edits to the worktree meanwhile do not reach it")
    ap.add_argument("--child", nargs=3, metavar=("REPO", "TOPOLOGY", "COMMIT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    from benchmarks.results import write_results
    with tempfile.TemporaryDirectory(prefix="intentc-soak100k-") as tmp:
        result = soak(args.intents, args.minutes, args.commit_every, args.sample_every, args.seed, Path(tmp))
    path = write_results(args.out, {**result, "commit": args.commit or git(ROOT, "rev-parse", "HEAD")})
    kinds = {k: (v["swap_ms_median"], v["plans"]) for k, v in result["by_kind"].items()}
    print(f"{result['intents']} intents, {result['commits']} commits: RSS after load {result['rss_mb_after_load']} MB, "
          f"first {result['rss_mb_first']}, last {result['rss_mb_last']}, peak {result['rss_mb_peak_sampled']} "
          f"(kernel {result['rss_mb_peak_kernel']}) MB; slope after {result['warmup_s']:.0f} s: "
          f"{result['rss_slope_mb_per_hour']} MB/h, by thirds "
          f"{[w['mb_per_hour'] for w in result['rss_slope_by_window']]}; swaps (median ms, plan) {kinds}; "
          f"load mean {result['load_mean']} max {result['load_max']}; {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
