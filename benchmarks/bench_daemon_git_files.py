"""A commit of 100,000 intent files followed through a remote: the daemon's peak memory.

    python benchmarks/bench_daemon_git_files.py [--files 100000] [--out bench_daemon_git_files]

Issue 39 asks that the daemon follow a 100,000-file commit with bounded
memory, the soak's limit: 600 MB at 100,000 intents (issue 17's target,
`bench_daemon_git.py`).  `bench_daemon_git.py` reads a local repository in
place; here the branch lives in a bare repository reached by a `file://`
URL, so the daemon's own path runs end to end: `GitSource` clones its bare
mirror, `poll` fetches the branch, `compile` exports the commit from the
mirror's object database and compiles it, and `from_compile` makes the
desired state the reactor keeps.  Each run is a fresh child process with an
empty parse cache (a daemon pod's first start); its peak is the kernel's
`VmHWM`.  git's own processes (clone, fetch, cat-file) are not the daemon's
memory and are not counted.

The same child at two intent files (one DSL, one YAML) gives the baseline (the interpreter,
intentc's imports, the 300-node topology planned): the limit allows
`(600 MB - baseline) / 100,000` per file above it, which is the per-file
bound `tests/test_daemon_git_faults.py` asserts at a CI-sized commit.

The repository is bench_reload's (one intent per file, half DSL, half
YAML, a GPU request on every 20th intent, 3 x 100 eight-GPU nodes).

Writes benchmarks/results/<--out>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIMIT_MB_AT_100K = 600.0      # the soak's target (bench_daemon_git.py, issue 17)
FILES_AT_LIMIT = 100_000
BASELINE_FILES = 2            # one DSL and one YAML intent: both input folders exist
_GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]


def bound_mb(files: int, baseline_mb: float) -> float:
    """The soak's limit carried down to `files` intent files: the baseline plus the per-file
    share of what the limit allows above it at 100,000 files."""
    return baseline_mb + files * (LIMIT_MB_AT_100K - baseline_mb) / FILES_AT_LIMIT


def make_remote(root: Path, files: int) -> tuple[str, Path]:
    """A bare repository holding one commit of `files` intent files (plus the shared
    tenants and datasets file) on `main`: its `file://` URL, and the topology file."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks.bench_reload import make_repo

    repo, topology, _jobs = make_repo(root, files)
    subprocess.run([*_GIT, "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*_GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*_GIT, "-C", str(repo), "commit", "-q", "-m", f"{files} intents"], check=True)
    bare = root / "remote.git"
    subprocess.run([*_GIT, "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    return bare.as_uri(), topology


def child(url: str, topology: str, workdir: str) -> dict[str, Any]:
    """In the child: what the daemon does with a new head of a remote branch."""
    from intentc.daemon.source import GitSource, from_compile
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION
    from intentc.render.targets import DEFAULT_TARGET

    t0 = time.perf_counter()
    source = GitSource(url, "main", ("dsl", "yaml"), topology, workdir, DEFAULT_TARGET, 0)
    head = source.poll()
    compiled = source.compile(head, DEFAULT_KUBE_VERSION)
    desired = from_compile(compiled, "git")
    if desired is None:
        raise SystemExit(f"commit {head[:12]} does not compile: {[str(d) for d in compiled.diagnostics[:3]]}")
    status = Path("/proc/self/status").read_text().splitlines()
    kib = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmHWM", "VmRSS"))}
    return {"commit": head, "objects": len(desired.manifests), "wall_s": round(time.perf_counter() - t0, 1),
            "peak_mb": round(kib["VmHWM"] / 1024, 1), "rss_after_mb": round(kib["VmRSS"] / 1024, 1)}


def follow(url: str, topology: Path, timeout: float | None = None) -> dict[str, Any]:
    """Run `child` in a fresh process (empty parse cache, its own work directory)."""
    with tempfile.TemporaryDirectory(prefix="bench-git-files-") as work:
        env = dict(os.environ, INTENTC_CACHE_DIR=str(Path(work) / "cache"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", url, str(topology),
                              str(Path(work) / "daemon")], env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"the daemon's child failed:\n{out.stderr[-3000:]}")
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def measure(files: int, tmp: Path, timeout: float | None = None) -> dict[str, Any]:
    """The peak at `files` files and at two (the baseline), and the bound carried down."""
    rows = {}
    for n in (BASELINE_FILES, files):
        url, topology = make_remote(tmp / f"n{n}", n)
        rows[n] = follow(url, topology, timeout)
    base = rows[BASELINE_FILES]["peak_mb"]
    return {"files": files, "baseline": rows[BASELINE_FILES], "run": rows[files], "bound_mb": round(bound_mb(files, base), 1),
            "limit_mb_at_100k": LIMIT_MB_AT_100K}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=FILES_AT_LIMIT)
    ap.add_argument("--out", default="bench_daemon_git_files", help="results/<out>.json")
    ap.add_argument("--child", nargs=3, metavar=("URL", "TOPOLOGY", "WORKDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks.proc import loadavg
    from benchmarks.results import write_results

    before = loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-git-files-repo-") as tmp:
        result = measure(args.files, Path(tmp))
    result.update(load_before=before, load_after=loadavg(), cpus=os.cpu_count())
    print(f"{args.files} files: peak {result['run']['peak_mb']} MB (baseline {result['baseline']['peak_mb']} MB, "
          f"bound {result['bound_mb']} MB), {result['run']['objects']} objects, {result['run']['wall_s']} s",
          flush=True)
    write_results(args.out, result)
    return 0 if result["run"]["peak_mb"] <= result["bound_mb"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
