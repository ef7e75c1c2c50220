"""What `intentc` costs before it does anything: a checkout against a base revision.

Every `intentc check` pays the interpreter, the imports and typer's dispatch
before its first parse worker starts; a CI step or a pre-commit hook pays
it on every call.  This runs, interleaved so that both sides see the same
load, `intentc --help`, `intentc check --help` and `intentc check` of a
one-file repository (parse cache off) from this checkout's working tree and
from `--base` (a git revision, exported), each with its sources byte-compiled
(`python -m compileall`, as an installed wheel has them) and without
(`PYTHONDONTWRITEBYTECODE=1` and an editable checkout never written to:
every process compiles every module it imports).  Reported: the median
wall and CPU time of `--repeat` runs, and with `--instructions` the
instructions each one executes (valgrind; the machine is shared and time
varies between identical runs, instruction counts do not).

    python -m benchmarks.bench_startup --base main --repeat 10 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.proc import loadavg, measure
from benchmarks.results import write_results

ROOT = Path(__file__).resolve().parents[1]
TREES = ("intentc", "grammar", "schemas")
COMMANDS = {
    "--help": ["--help"],
    "check --help": ["check", "--help"],
    "check (1 file)": ["check", "one.intent"],
}
ONE_FILE = ROOT / "intents" / "tenants" / "tenants.intent"


def _export(rev: str | None, into: Path) -> None:
    """The package at `rev` (None: the working tree) under `into`, without byte code."""
    into.mkdir(parents=True)
    if rev is None:
        for tree in TREES:
            shutil.copytree(ROOT / tree, into / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *TREES], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    # As the console script does; run by path, so the checkout in `into` is the one imported.
    (into / "intentc-cli").write_text("from intentc.cli import main\nmain()\n", encoding="utf-8")


def _variants(base: str, work: Path) -> dict[str, Path]:
    out = {}
    for side, rev in (("base", base), ("head", None)):
        for compiled in (False, True):
            where = work / f"{side}-{'pyc' if compiled else 'src'}"
            _export(rev, where)
            if compiled:
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(where / "intentc")], check=True)
            out[f"{side} {'pyc' if compiled else 'no pyc'}"] = where
    return out


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", INTENTC_CACHE_DIR="", COLUMNS="80")
    return env


def _instructions(cmd: list[str], env: dict[str, str], cwd: Path) -> int:
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *cmd], env=env, cwd=cwd, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if m is None:
        raise SystemExit(f"valgrind gave no count for {cmd}:\n{done.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="git revision to compare with")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--instructions", action="store_true", help="also count instructions (valgrind), one run each")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        repo.mkdir()
        shutil.copy(ONE_FILE, repo / "one.intent")
        variants = _variants(args.base, work)
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        load_before = loadavg()
        cwd = Path.cwd()
        os.chdir(repo)
        try:
            for _ in range(args.repeat):
                for label, argv in COMMANDS.items():
                    for variant, tree in variants.items():
                        cmd = [sys.executable, str(tree / "intentc-cli"), *argv]
                        runs.setdefault((label, variant), []).append(measure(cmd, _env(tree)))
            counts = {}
            if args.instructions:
                for label, argv in COMMANDS.items():
                    for variant, tree in variants.items():
                        cmd = [sys.executable, str(tree / "intentc-cli"), *argv]
                        counts[(label, variant)] = _instructions(cmd, _env(tree), repo)
        finally:
            os.chdir(cwd)

    rows: list[dict[str, Any]] = []
    for (label, variant), taken in runs.items():
        row: dict[str, Any] = {
            "command": label, "variant": variant,
            "wall_s_median": round(statistics.median(r["wall_s"] for r in taken), 3),
            "cpu_s_median": round(statistics.median(r["cpu_s"] for r in taken), 3),
            "wall_s_all": [r["wall_s"] for r in taken],
        }
        if (label, variant) in counts:
            row["instructions_m"] = round(counts[label, variant] / 1e6)
        rows.append(row)
    doc = {"base": args.base, "repeat": args.repeat, "python": sys.version.split()[0],
           "load_before": load_before, "load_after": loadavg(), "rows": rows}
    path = write_results("bench_startup", doc)

    print(f"{'command':16} {'variant':12} {'wall median':>12} {'CPU median':>11} {'instructions':>13}")
    for row in rows:
        ins = f"{row['instructions_m']} M" if "instructions_m" in row else "-"
        print(f"{row['command']:16} {row['variant']:12} {row['wall_s_median']:>10.3f} s {row['cpu_s_median']:>9.3f} s "
              f"{ins:>13}")
    for label in COMMANDS:
        for kind in ("no pyc", "pyc"):
            b = next(r for r in rows if r["command"] == label and r["variant"] == f"base {kind}")
            h = next(r for r in rows if r["command"] == label and r["variant"] == f"head {kind}")
            print(f"{label:16} {kind:7} head/base: wall {h['wall_s_median'] / b['wall_s_median']:.2f}, "
                  f"CPU {h['cpu_s_median'] / b['cpu_s_median']:.2f}")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
