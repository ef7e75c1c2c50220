"""`intentc diff` on a 5,000-intent repository where 10 intents change.

    python benchmarks/bench_diff.py [--intents 5000] [--changes 10] [--seed 7] [--repeat 3]

Builds a real git repository (GitPython) in a temporary directory: one
intent per file, half DSL and half YAML, ten tenants, dependency chains via
`after` and datasets.  Commit 1 is the base; commit 2 changes `--changes`
intents (image bumps, memory and CPU, a rename, an added and a removed intent,
tags, commands).  Then, in the same run:

* `intentc diff --base HEAD~1 --head HEAD` in-process: cold (empty blob
  cache: every distinct blob parsed once, unchanged ones shared by both
  sides) and warm (the blob cache of an earlier run: only what git says
  changed is parsed - here nothing, as the cold run cached the head too -
  plus a "new head" run where the 10 changed blobs are new to the cache);
* the same as a fresh process (`python -m intentc diff`), warm;
* the baseline: a full double compile - both trees read and compiled from
  scratch (parse every file of each side, merge, semantic passes), in
  process, and `intentc check` run twice as fresh processes without cache;
* the output size of `intentc diff` (text and markdown) against
  `git diff HEAD~1 HEAD` of the same commits.

Prints a table and writes benchmarks/results/bench_diff.json.  Numbers are
ratios against the baseline measured in the same run; the target is an
`intentc diff` under 2 s.  Each timing is reported as wall time and as CPU
time (this process plus its children): on a shared machine the second is
the stable one.  The benchmark runs on a private copy of the package, so
edits to the source tree during a run cannot invalidate the parse cache
half-way through.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.results import write_results  # noqa: E402  (this tree's, whatever SRC is)

SRC = Path(os.environ.get("BENCH_DIFF_SRC", str(ROOT)))
sys.path.insert(0, str(SRC))

import git

from intentc.diff.format import render_report
from intentc.diff.report import diff_trees
from intentc.diff.sides import Tree
from intentc.frontend import merge
from intentc.frontend.sources import SOURCE_SUFFIXES, SourceFile, decode
from intentc.passes import run_passes
from intentc.pipeline.loading import parse_all
from intentc.vcs import gitrepo

TEAMS = [f"team-{i:02d}" for i in range(10)]
PRODUCTS = ["H100-80GB", "A100-80GB"]


def dsl_intent(i: int, rng: random.Random) -> str:
    team = TEAMS[i % len(TEAMS)]
    after = f"  trigger: after job-{i - len(TEAMS):05d}\n" if i >= len(TEAMS) and i % 7 else "  trigger: on push\n"
    gpus = rng.choice([0, 1, 2, 4, 8])
    gpu = f', gpus {gpus} x "{rng.choice(PRODUCTS)}" within node' if gpus else ""
    return (f"# synthetic intent {i}\n"
            f"intent job-{i:05d} {{\n{after}"
            f'  action: batch image "ghcr.io/acme/step-{i % 13}:1.{i % 9}" command ["run", "--shard", "{i}"]\n'
            f"  context: tenant {team}, tags [bench]\n"
            f"  constraints: cpu {rng.randint(1, 32)}, memory {rng.choice([16, 32, 64])}Gi{gpu}, sla P{i % 4}\n"
            f"  produces: out-{i:05d}\n"
            f"}}\n")


def yaml_intent(i: int, rng: random.Random) -> str:
    team = TEAMS[i % len(TEAMS)]
    trigger = (f"  trigger:\n    after: [job-{i - len(TEAMS):05d}]\n" if i >= len(TEAMS) and i % 7
               else "  trigger: push\n")
    gpus = rng.choice([0, 1, 2, 4, 8])
    gpu = f"    gpus: {{count: {gpus}, product: {rng.choice(PRODUCTS)}, within: node}}\n" if gpus else ""
    return (f"# synthetic intent {i}\n"
            "apiVersion: intentc.dev/v1alpha1\nkind: Intent\n"
            f"metadata:\n  name: job-{i:05d}\nspec:\n{trigger}"
            f"  action:\n    kind: batch\n    image: ghcr.io/acme/step-{i % 13}:1.{i % 9}\n"
            f'    command: [run, --shard, "{i}"]\n'
            f"  context:\n    tenant: {team}\n    tags: [bench]\n"
            f'  constraints:\n    cpu: "{rng.randint(1, 32)}"\n    memory: {rng.choice([16, 32, 64])}Gi\n{gpu}'
            f"    sla: P{i % 4}\n"
            f"  produces: [out-{i:05d}]\n")


def tenants() -> str:
    # max_sla P0: every tenant's intents use all four SLA classes, above the silver and bronze defaults
    return "".join(f"tenant {t} {{\n  tier: {['gold', 'silver', 'bronze'][n % 3]}\n  quota: gpus 100000\n"
                   f"  max_sla: P0\n}}\n\n" for n, t in enumerate(TEAMS))


def intent_path(i: int) -> str:
    ext = "intent" if i % 2 == 0 else "yaml"
    return f"intents/{TEAMS[i % len(TEAMS)]}/job-{i:05d}.{ext}"


EDITS: dict[str, Callable[[str, int], str]] = {
    "image": lambda t, i: t.replace(f":1.{i % 9}", f":2.{i % 9}", 1),
    "memory": lambda t, i: re.sub(r"(memory:? )(\d+)Gi", lambda m: f"{m[1]}{int(m[2]) * 2}Gi", t, count=1),
    "cpu": lambda t, i: re.sub(r'(cpu:? "?)(\d+)', lambda m: f"{m[1]}{int(m[2]) + 1}", t, count=1),
    "tags": lambda t, i: t.replace("[bench]", "[bench, hot]", 1),
    "command": lambda t, i: t.replace('"--shard"', '"--shard-id"').replace("--shard,", "--shard-id,"),
    "rename": lambda t, i: t.replace(f"job-{i:05d}", f"job-{i:05d}-renamed", 1),
    "sla": lambda t, i: re.sub(r"(sla:? P)(\d)", lambda m: f"{m[1]}{(int(m[2]) + 1) % 4}", t, count=1),
}


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    actor = git.Actor("Bench", "bench@example.com")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


def build_repo(root: Path, n: int, changes: int, seed: int) -> tuple[git.Repo, list[str]]:
    rng = random.Random(seed)
    repo = git.Repo.init(root)
    (root / "intents").mkdir()
    (root / "intents/tenants.intent").write_text(tenants())
    texts: dict[int, str] = {}
    for i in range(n):
        texts[i] = dsl_intent(i, rng) if i % 2 == 0 else yaml_intent(i, rng)
        p = root / intent_path(i)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(texts[i])
    commit_all(repo, "base")
    # the head: `changes` edits of different kinds, on intents spread over the repository
    kinds = ["image", "memory", "tags", "command", "rename", "cpu", "remove", "image", "add", "sla"]
    picked: list[int] = []
    for k in range(changes):
        while True:
            i = rng.randrange(len(TEAMS), n - len(TEAMS))
            # renaming or removing an intent others run `after` would break them: pick a leaf
            leaf = (i + len(TEAMS)) % 7 == 0
            if i not in picked and (leaf or kinds[k % len(kinds)] not in ("rename", "remove")):
                picked.append(i)
                break
    done = []
    for k, i in enumerate(picked):
        kind = kinds[k % len(kinds)]
        p = root / intent_path(i)
        text = texts[i]
        if kind == "remove":
            p.unlink()
        elif kind == "add":
            (root / f"intents/{TEAMS[0]}/job-new.intent").write_text(
                dsl_intent(n, rng).replace(f"job-{n:05d}", "job-new"))
        else:
            p.write_text(EDITS[kind](text, i))
        done.append(f"{kind} job-{i:05d}" if kind != "add" else "add job-new")
    commit_all(repo, "head")
    return repo, done


def tree(root: Path, rev: str | None) -> Tree:
    snap = gitrepo.snapshot(root, rev, ("intents",), SOURCE_SUFFIXES)
    return Tree(rev or "working tree", snap.listing, snap.read)


def double_compile(root: Path, jobs: int | None) -> int:
    """The baseline: read and compile each tree from scratch, as two `check`s would."""
    count = 0
    for rev in ("HEAD~1", "HEAD"):
        snap = gitrepo.snapshot(root, rev, ("intents",), SOURCE_SUFFIXES)
        data = snap.read(sorted(snap.listing))
        sources = []
        for path in sorted(data):
            text, _ = decode(path, data[path])
            if text is not None:
                sources.append(SourceFile(path, text))
        program, _ = merge(r for _, r, _ in parse_all(sources, jobs))
        program, _ = run_passes(program)
        count += len(program.intents)
    return count


def cpu_now() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Best wall time and best CPU time over `repeat` runs, and the last result."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu_now()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, cpu_now() - c0)
    return wall, cpu, result


def cli(root: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    t0, c0 = time.perf_counter(), cpu_now()
    proc = subprocess.run([sys.executable, "-m", "intentc", *args], cwd=root, env=env,
                          capture_output=True, text=True)
    return time.perf_counter() - t0, cpu_now() - c0, proc.returncode, proc.stdout


def isolate() -> None:
    """Re-run this script on a snapshot of the package (see the module docstring)."""
    if "BENCH_DIFF_SRC" in os.environ:
        return
    snap = Path(tempfile.mkdtemp(prefix="bench-diff-src-"))
    for name in ("intentc", "grammar", "schemas"):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, snap / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, BENCH_DIFF_SRC=str(snap), PYTHONPATH=str(snap))
    code = subprocess.call([sys.executable, __file__, *sys.argv[1:]], env=env)
    shutil.rmtree(snap, ignore_errors=True)
    sys.exit(code)


def main() -> None:
    isolate()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, default=5000)
    ap.add_argument("--changes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=0, help="parallel parsers (0: one per core)")
    args = ap.parse_args()
    jobs = args.jobs or None
    work = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    try:
        root = work / "repo"
        t0 = time.perf_counter()
        repo, done = build_repo(root, args.intents, args.changes, args.seed)
        print(f"repository: {args.intents} intents, {len(done)} changes ({time.perf_counter() - t0:.1f}s to build)")
        cache = work / "cache"

        def run(cache_dir: str | None) -> object:
            report, _, _ = diff_trees(tree(root, "HEAD~1"), tree(root, "HEAD"), None, cache_dir, jobs)
            return report

        cold_w, cold_c, report = timed(lambda: (shutil.rmtree(cache, ignore_errors=True), run(str(cache)))[1], 1)
        warm_w, warm_c, _ = timed(lambda: run(str(cache)), args.repeat)
        nocache_w, nocache_c, _ = timed(lambda: run(None), 1)
        # a new head on a warm base (a pull request's next push): only the changed blobs are parsed
        shutil.rmtree(cache, ignore_errors=True)
        assert not diff_trees(tree(root, "HEAD~1"), tree(root, "HEAD~1"), None, str(cache), jobs)[0].changed
        newhead_w, newhead_c, report2 = timed(lambda: run(str(cache)), 1)
        base_w, base_c, intents = timed(lambda: double_compile(root, jobs), 1)

        env = dict(os.environ, PYTHONPATH=str(SRC), INTENTC_CACHE_DIR=str(cache))
        cli_new = []
        for _ in range(args.repeat):     # the realistic CI case: the base is cached, this head is new
            shutil.rmtree(cache, ignore_errors=True)
            diff_trees(tree(root, "HEAD~1"), tree(root, "HEAD~1"), None, str(cache), jobs)
            cli_new.append(cli(root, ["diff", "--base", "HEAD~1", "--head", "HEAD"], env))
        clinew_w, clinew_c = min(r[0] for r in cli_new), min(r[1] for r in cli_new)
        runs = [cli(root, ["diff", "--base", "HEAD~1", "--head", "HEAD"], env) for _ in range(args.repeat)]
        cli_w, cli_c = min(r[0] for r in runs), min(r[1] for r in runs)
        assert runs[0][2] == 1, "diff must exit 1 on a change"
        text_out = runs[0][3]
        md_out = render_report(report, "markdown")  # type: ignore[arg-type]
        wt = root.parent / "base-worktree"
        repo.git.worktree("add", "--detach", str(wt), "HEAD~1")
        no_cache_env = dict(os.environ, PYTHONPATH=str(SRC), INTENTC_CACHE_DIR="")
        checks = [cli(d, ["check", "intents"], no_cache_env) for d in (wt, root)]
        check_w, check_c = sum(c[0] for c in checks), sum(c[1] for c in checks)
        git_diff = repo.git.diff("HEAD~1", "HEAD")

        decls = report.declarations  # type: ignore[attr-defined]
        rows = [
            ("intentc diff, in-process, cold blob cache", cold_w, cold_c, "every distinct blob parsed once"),
            ("intentc diff, in-process, no cache", nocache_w, nocache_c, ""),
            ("intentc diff, in-process, new head, warm base", newhead_w, newhead_c,
             f"{report2.stats.parsed} blobs parsed"),  # type: ignore[attr-defined]
            ("intentc diff, in-process, warm", warm_w, warm_c, ""),
            ("intentc diff, CLI process, new head, warm base", clinew_w, clinew_c, "includes interpreter start-up"),
            ("intentc diff, CLI process, warm", cli_w, cli_c, "includes interpreter start-up"),
            ("baseline: double compile, in-process", base_w, base_c, f"{intents} intents compiled"),
            ("baseline: intentc check x2, CLI, no cache", check_w, check_c, ""),
        ]
        results = {
            "intents": args.intents, "changes": done, "declarations_reported": len(decls),
            "timings": {label: {"wall_s": round(w, 3), "cpu_s": round(c, 3)} for label, w, c, _ in rows},
            "parsed_new_head": report2.stats.parsed,  # type: ignore[attr-defined]
            "speedup_cpu_new_head_vs_double_compile": round(base_c / newhead_c, 1),
            "speedup_cpu_cli_vs_check_twice": round(check_c / cli_c, 1),
            "output_text_bytes": len(text_out.encode()), "output_markdown_bytes": len(md_out.encode()),
            "git_diff_bytes": len(git_diff.encode()),
            "target_met_cpu": clinew_c < 2.0 and newhead_c < 2.0,
        }
        print(f"  {'':48} {'wall':>8} {'cpu':>8}")
        for label, w, c, note in rows:
            print(f"  {label:48} {w:7.3f}s {c:7.3f}s  {note}")
        print(f"  speed-up (CPU): new head vs double compile {results['speedup_cpu_new_head_vs_double_compile']}x, "
              f"CLI diff vs two CLI checks {results['speedup_cpu_cli_vs_check_twice']}x")
        print(f"  output: diff text {results['output_text_bytes']} B, markdown {results['output_markdown_bytes']} B,"
              f" git diff {results['git_diff_bytes']} B")
        print(f"  declarations reported: {len(decls)} for {len(done)} edits; target < 2 s (CPU): "
              f"{'met' if results['target_met_cpu'] else 'NOT met'}")
        write_results("bench_diff", results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
