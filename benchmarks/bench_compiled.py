"""What each compiled module buys on `intentc check`, the command it exists for.

    python benchmarks/bench_compiled.py [--intents 10000] [--repeat 3]

intentc keeps two optional compiled modules, each beside the plain Python it
stands in for (`intentc/frontend/_dslfast.pyx`, `intentc/frontend/_yamlfast.pyx`).  A module earns its place only by what a user
gains, so each one is measured on the repository where it matters, against the
same command with only that module off (`INTENTC_PURE_DSL`, `INTENTC_PURE_YAML`),
the two runs taken in turn (`proc.alternating`) so their ratio is measured
under one load:

* the DSL module: `check` of a repository written in the DSL, cold;
* the YAML module: `check` of a repository written in YAML, cold;
* both off against both on, on the mixed repository, cold.

The repositories are bench_frontend's (seeded): half DSL and half YAML, all DSL,
all YAML (the tenants and datasets in one DSL file in each).  Writes
benchmarks/results/bench_compiled.json; prints one line per module.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_frontend import PURE, generate  # noqa: E402
from benchmarks.proc import alternating  # noqa: E402
from benchmarks.results import write_results  # noqa: E402


CASES = ("dsl", "yaml", "all")


def _ratio(off: dict[str, Any], on: dict[str, Any], key: str) -> float:
    return round(off[key] / on[key], 2) if on[key] else 0.0


def bench(n: int, repeat: int, only: list[str] | None = None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"intentc-compiled-{n}-"))
    cache = work / "cache"
    try:
        generate(work / "repo", n)
        dsl_dir = generate(work / "dsl-only", n, notation="dsl")[0]
        generate(work / "yaml-only", n, notation="yaml")
        env = dict(os.environ, INTENTC_CACHE_DIR=str(cache))

        def check(*paths: Path) -> list[str]:
            return [sys.executable, "-m", "intentc", "check", *map(str, paths), "-o", "json"]

        def clear() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        cases: dict[str, tuple[list[str], str | None, Any]] = {
            "dsl": (check(dsl_dir), "INTENTC_PURE_DSL", clear),
            "yaml": (check(work / "yaml-only"), "INTENTC_PURE_YAML", clear),
            "all": (check(work / "repo"), None, clear),
        }
        row: dict[str, Any] = {"intents": n, "repeat": repeat, "modules": {}}
        for name, (cmd, switch, before) in cases.items():
            if only and name not in only:
                continue
            off_env = {**env, switch: "1"} if switch else {**env, **PURE}
            got = alternating({"on": (cmd, env, before), "off": (cmd, off_env, before)}, repeat)
            on, off = got["on"], got["off"]
            for run in (on, off):
                if run["exit"] != 0:
                    raise SystemExit(f"{name}: check exited {run['exit']}: the generated repository no longer checks")
            row["modules"][name] = {"on": on, "off": off, "switch": switch or "INTENTC_PURE_YAML/DSL",
                                    "wall_ratio": _ratio(off, on, "wall_s"), "cpu_ratio": _ratio(off, on, "cpu_s")}
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=CASES, help="measure only these cases (default: all)")
    ap.add_argument("--out", default="bench_compiled", help="results/<out>.json")
    args = ap.parse_args()
    row = bench(args.intents, args.repeat, args.only)
    write_results(args.out, row)
    for name, m in row["modules"].items():
        on, off = m["on"], m["off"]
        print(f"{name:>10}: on {on['wall_s']} s wall {on['cpu_s']} s CPU | off ({m['switch']}) {off['wall_s']} s "
              f"{off['cpu_s']} s CPU | off/on {m['wall_ratio']}x wall, {m['cpu_ratio']}x CPU | load {on['load_before']}")


if __name__ == "__main__":
    main()
