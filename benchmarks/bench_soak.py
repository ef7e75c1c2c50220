"""Soak: the daemon following a git branch on a real control plane, its memory sampled.

    KUBEBUILDER_ASSETS=... python benchmarks/bench_soak.py [--minutes 60] [--commit-every 60]
        [--intents 40] [--sample-every 5]

A control plane from the test bed (`tests.kube_env.KubeEnv`: etcd,
kube-apiserver, controller-manager, scheduler, kwok) with the fake nodes of
tests/fixtures/repo/clusters/small.yaml.  A git repository with --intents
CPU-only batch intents over four tenants, one per file.  `intentc daemon`
runs as a user runs it (a subprocess, git mode, polling every 5 s) and
rolls out every commit; kwok finishes the Jobs.  Every --commit-every
seconds the image of one intent (round robin) is changed and committed.

Sampled every --sample-every seconds: the daemon's resident memory
(`VmRSS` of /proc/PID/status) and the commit it last applied (its
/metrics).  Reported: RSS first / last / peak, and the slope of RSS over
time (least squares, MB per hour) over the samples after a warm-up (the
first fifth of the run, at least the first two commits): no growth means a
slope near zero.  The machine is shared: the load average is recorded.
Writes benchmarks/results/bench_soak.json (with every sample).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.proc import loadavg  # noqa: E402
from benchmarks.results import write_results  # noqa: E402
from tests.kube_env import KubeEnv, assets_dir, free_port  # noqa: E402
from tests.kube_nodes import add_topology  # noqa: E402

TOPOLOGY = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
TENANTS = ("soak-a", "soak-b", "soak-c", "soak-d")
APPLIED = re.compile(r'intentc_last_applied_commit_info\{[^}]*commit="([0-9a-f]+)"')


def intent(i: int, tag: int) -> str:
    return (f"intent job-{i:03d} {{\n  trigger: on push\n"
            f"  action: batch image \"busybox:1.{tag}\" command [\"true\"]\n"
            f"  context: tenant {TENANTS[i % len(TENANTS)]}\n  constraints: cpu 1, memory 256Mi, duration 5m\n}}\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(repo: Path, n: int) -> None:
    (repo / "intents").mkdir(parents=True)
    (repo / "clusters").mkdir()
    (repo / "clusters" / "small.yaml").write_text(TOPOLOGY.read_text())
    (repo / "intents" / "tenants.intent").write_text(
        "".join(f"tenant {t} {{\n  tier: silver\n  drift: heal\n}}\n" for t in TENANTS))
    for i in range(n):
        (repo / "intents" / f"job-{i:03d}.intent").write_text(intent(i, 0))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "soak")
    git(repo, "config", "user.email", "soak@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial intents")


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def applied_commit(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            found = APPLIED.search(resp.read().decode())
    except OSError:
        return None
    return found.group(1) if found else None


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y (MB) on x (seconds), in MB per hour."""
    if len(points) < 3:
        return None
    mx = sum(p[0] for p in points) / len(points)
    my = sum(p[1] for p in points) / len(points)
    den = sum((p[0] - mx) ** 2 for p in points)
    return round(3600 * sum((p[0] - mx) * (p[1] - my) for p in points) / den, 2) if den else None


def windows(points: list[tuple[float, float]], parts: int = 3) -> list[dict[str, Any]]:
    """The slope over successive thirds of the steady part: a leak keeps its slope,
    an allocator settling in flattens."""
    if len(points) < 3 * parts:
        return []
    size = len(points) // parts
    chunks = [points[i * size:(i + 1) * size if i < parts - 1 else len(points)] for i in range(parts)]
    return [{"from_s": c[0][0], "to_s": c[-1][0], "mb_per_hour": slope_per_hour(c)} for c in chunks]


def soak(minutes: float, commit_every: float, n: int, sample_every: float, work: Path) -> dict[str, Any]:
    assets = assets_dir()
    if assets is None:
        raise SystemExit("KUBEBUILDER_ASSETS does not point at the test bed's binaries")
    env = KubeEnv(assets, work / "env", ("controller-manager", "scheduler", "kwok"))
    env.start()
    daemon: subprocess.Popen[bytes] | None = None
    try:
        add_topology(env, str(TOPOLOGY))
        repo = work / "repo"
        make_repo(repo, n)
        port = free_port()
        log = (work / "daemon.log").open("wb")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo), "--branch", "main",
             "-t", "clusters/small.yaml", "--kubeconfig", str(env.kubeconfig), "--target", "soak",
             "--listen", f"127.0.0.1:{port}", "--no-metrics-secure", "--interval", "5s", "--resync", "60s",
             "--workdir", str(work / "daemon"), "--rollout-timeout", "120s"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, INTENTC_CACHE_DIR=str(work / "cache")))
        start = time.monotonic()
        end = start + minutes * 60
        next_commit = start + commit_every
        commits = [git(repo, "rev-parse", "HEAD")]
        samples: list[dict[str, Any]] = []
        k = 0
        print(f"daemon pid {daemon.pid}; {n} intents; a commit every {commit_every:.0f}s for {minutes:.0f} min",
              flush=True)
        while time.monotonic() < end:
            if daemon.poll() is not None:
                raise SystemExit(f"the daemon exited {daemon.returncode}:\n"
                                 f"{(work / 'daemon.log').read_text(errors='replace')[-2000:]}")
            now = time.monotonic()
            if now >= next_commit:
                k += 1
                i = k % n
                (repo / "intents" / f"job-{i:03d}.intent").write_text(intent(i, k))
                git(repo, "commit", "-q", "-am", f"job-{i:03d}: busybox:1.{k}")
                commits.append(git(repo, "rev-parse", "HEAD"))
                next_commit += commit_every
            rss = rss_mb(daemon.pid)
            applied = applied_commit(port)
            samples.append({"t_s": round(now - start, 1), "rss_mb": round(rss, 1) if rss else None,
                            "applied": commits.index(applied) if applied in commits else None,
                            "load": loadavg()})
            if len(samples) % 12 == 1:
                print(f"{now - start:7.0f}s rss {rss:7.1f} MB, applied commit #{samples[-1]['applied']} "
                      f"of {len(commits) - 1}, load {samples[-1]['load']}", flush=True)
            time.sleep(max(0.0, min(sample_every, end - time.monotonic())))
        # the last commit may have come just before the end: give the daemon time to apply it
        drain_end = time.monotonic() + max(120.0, 2 * commit_every)
        while applied_commit(port) != commits[-1] and time.monotonic() < drain_end and daemon.poll() is None:
            time.sleep(1.0)
        last = applied_commit(port)
        if last in commits:
            samples.append({"t_s": round(time.monotonic() - start, 1), "rss_mb": rss_mb(daemon.pid),
                            "applied": commits.index(last), "load": loadavg(), "drain": True})
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()
        env.stop()
    warm = max(minutes * 60 / 5, 2 * commit_every)
    steady = [(s["t_s"], s["rss_mb"]) for s in samples if s["t_s"] >= warm and s["rss_mb"] and "drain" not in s]
    sizes = [s["rss_mb"] for s in samples if s["rss_mb"] and "drain" not in s]
    applied_all = [s["applied"] for s in samples if s["applied"] is not None]
    return {
        "minutes": minutes, "commit_every_s": commit_every, "intents": n, "commits": len(commits) - 1,
        "last_commit_applied": max(applied_all) if applied_all else None,
        "rss_mb_first": sizes[0] if sizes else None, "rss_mb_last": sizes[-1] if sizes else None,
        "rss_mb_peak": max(sizes) if sizes else None,
        "warmup_s": warm, "rss_slope_mb_per_hour": slope_per_hour(steady),
        "rss_slope_by_window": windows(steady),
        "load_mean": round(sum(s["load"] for s in samples) / len(samples), 2) if samples else None,
        "samples": samples,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--commit-every", type=float, default=60.0, help="seconds between commits")
    ap.add_argument("--intents", type=int, default=40)
    ap.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS samples")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="intentc-soak-") as tmp:
        result = soak(args.minutes, args.commit_every, args.intents, args.sample_every, Path(tmp))
    write_results("bench_soak", result)
    print(f"{result['commits']} commits, last applied #{result['last_commit_applied']}; RSS first "
          f"{result['rss_mb_first']} MB, last {result['rss_mb_last']} MB, peak {result['rss_mb_peak']} MB; "
          f"slope after {result['warmup_s']:.0f}s warm-up: {result['rss_slope_mb_per_hour']} MB/h "
          f"(by thirds: {[w['mb_per_hour'] for w in result['rss_slope_by_window']]}) "
          f"(mean load {result['load_mean']})")
    if result["last_commit_applied"] != result["commits"]:
        # the figures are those of a daemon that fell behind, or never applied: not the soak it claims
        raise SystemExit(f"the last commit applied is #{result['last_commit_applied']}, not #{result['commits']}")


if __name__ == "__main__":
    main()
