"""`intentc check` with a warm cache after the edits a working copy sees: none, a touch, one edit, a fresh checkout.

    python benchmarks/bench_cache.py [--intents 100000] [--repo DIR] [--repeat 2] [--baseline DIR]

On benchmarks/bench_frontend.py's repository (`generate`; `--repo` reuses
one made before, left as it was found), each step a fresh
`intentc check --format json` process measured by the kernel
(`benchmarks.proc.measure`: wall, CPU, peak RSS):

* `cold`    — the cache off (`INTENTC_CACHE_DIR=`), for reference;
* `fill`    — the first run, empty cache;
* `same`    — nothing changed (the stat index vouches for every file, the memo answers);
* `touch`   — one file's mtime moved (read and hashed again, the memo still answers);
* `edit`    — one file's text changed (another digest: the results are unpickled
  and the global passes run; the edit is put back afterwards);
* `checkout` — every file's mtime moved, as a fresh clone with a restored cache
  looks (every file read and hashed; the memo answers).

With `--baseline DIR`, another checkout's intentc (DIR on PYTHONPATH) runs
each step right after this tree, on its own cache.
Writes benchmarks/results/bench_cache.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_frontend import generate  # noqa: E402
from benchmarks.proc import measure  # noqa: E402
from benchmarks.results import write_results  # noqa: E402


def _one_file(repo: Path) -> Path:
    return next((repo / "dsl").glob("job-*.intent"))


def _touch_all(repo: Path) -> None:
    for here, _, files in os.walk(repo):
        for name in files:
            os.utime(os.path.join(here, name))


def run(repo: Path, repeat: int, trees: dict[str, str], work: Path) -> dict[str, Any]:
    check = [sys.executable, "-m", "intentc", "check", "--format", "json", str(repo)]
    # PYTHONSAFEPATH: `-m` would put the current directory, maybe a work tree, first on sys.path
    envs = {name: dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, PYTHONPATH=tree,
                       PYTHONSAFEPATH="1", INTENTC_CACHE_DIR=str(work / f"cache-{name}"))
            for name, tree in trees.items()}
    target = _one_file(repo)
    text = target.read_text()

    def edit() -> None:
        target.write_text(text.replace("intent ", "intent  ", 1))

    def put_back() -> None:
        target.write_text(text)

    steps: list[tuple[str, Callable[[], None] | None, int]] = [
        ("cold", None, 1), ("fill", None, 1), ("same", None, repeat), ("touch", lambda: os.utime(target), 1),
        ("same", None, 1), ("edit", edit, 1), ("same", put_back, 1), ("checkout", lambda: _touch_all(repo), 1),
        ("same", None, repeat)]
    out: list[dict[str, Any]] = []
    for step, before, times in steps:
        for _ in range(times):
            if before is not None:
                before()
            row: dict[str, Any] = {"step": step}
            for name, env in envs.items():
                row[name] = measure(check, dict(env, INTENTC_CACHE_DIR="") if step == "cold" else env)
            out.append(row)
            print(f"{step:>9}: " + " | ".join(f"{n} {r['wall_s']:>7} s wall {r['cpu_s']:>7} s cpu {r['peak_rss_mb']:>6} MB"
                                             for n, r in row.items() if n != "step"), flush=True)
    put_back()
    return {"repo_files": sum(len(f) for _, _, f in os.walk(repo)), "trees": trees, "steps": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, default=100_000)
    ap.add_argument("--repo", type=Path, help="a repository generate() made before (reused, not deleted)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--baseline", metavar="DIR", help="another checkout to run after this tree at each step")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="intentc-cache-bench-"))
    trees = {"after": str(ROOT)} | ({"before": str(Path(args.baseline).resolve())} if args.baseline else {})
    try:
        repo = args.repo
        if repo is None:
            repo = work / "repo"
            generate(repo, args.intents)
        write_results("bench_cache", run(repo, args.repeat, trees, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
