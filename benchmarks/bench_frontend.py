"""Front-end throughput: `intentc check` on N synthetic intents vs check-jsonschema.

    python benchmarks/bench_frontend.py [--sizes 1000 10000] [--repeat 3]

Generates N intents (half DSL, half YAML, one intent per file, plus tenants
and datasets), then measures, in the same run and on the same files:

* `intentc check DIR` as a user runs it (a fresh process), cold (empty
  parse cache) and warm (cache from the previous run), both cores;
* the baseline: `check-jsonschema --schemafile schemas/intent.schema.json`
  on the YAML half only (schema validation alone: no DSL, no positions
  beyond the schema error, no cross-file semantic passes);
* the same cold check with the compiled modules off (`INTENTC_PURE_YAML`,
  `_DSL` = 1: their Python counterparts run), the baseline of what
  the compiled common cases gain;
* the floor issue 17 names (benchmarks/frontend_floor.py): libyaml composing
  the YAML half and lark-cython parsing the DSL half with lark's own lexer,
  on both cores, nothing lowered, checked or kept: what any checker built on
  these two parsers pays at least;
* KCL, when `kcl-lib` is installed (`pip install -e '.[bench]'`): every
  intent written as a `.k` file from the IR of the same run, checked by a
  KCL schema with the checks of intent.schema.json (benchmarks/kcl_intents.py),
  run by kcl-lib's `exec_program` in a fresh process.

Every run is a fresh process measured by benchmarks.proc.measure: wall
time, CPU time and peak RSS, with the load average it ran under.  The cold
runs, the pure-Python ones and the floor's are taken in turn
(`proc.alternating`), so the ratios between them are measured under one load.  Reports
intents/s and ratios; writes benchmarks/results/bench_frontend.json.
Seeded: the same files every run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.proc import alternating, best, measure  # noqa: E402
from benchmarks.results import write_results  # noqa: E402

TENANTS = ["team-a", "team-b", "team-c", "team-d"]
PRODUCTS = ["H100-80GB", "A100-80GB", "L40S"]


# Each compiled module off (its Python counterpart runs): the baseline the compiled ones are measured against.
PURE = {"INTENTC_PURE_YAML": "1", "INTENTC_PURE_DSL": "1"}

def dsl_intent(i: int, rng: random.Random) -> str:
    after = f"  trigger: after job-{i - 1:05d}\n" if i % 5 and i > 0 else "  trigger: on push\n"
    return (
        f"# synthetic intent {i}\n"
        f"intent job-{i:05d} {{\n{after}"
        f'  action: inference model "m-{i % 7}" image "ghcr.io/acme/vllm:0.{i % 9}" {{\n'
        f"    batch: auto(max {rng.choice([64, 128, 256])})\n"
        f"    seq_len: {rng.choice([2048, 4096, 8192])}\n"
        f"    kv_cache: retain\n"
        f"    precision: bf16\n"
        f"  }}\n"
        f"  context: tenant {TENANTS[i % 4]}, tags [bench]\n"
        f'  constraints: cpu {rng.randint(1, 32)}, memory {rng.choice([16, 32, 64])}Gi, '
        f'gpus {rng.choice([1, 2, 4, 8])} x "{rng.choice(PRODUCTS)}" within node, sla P{i % 4}\n'
        f"  consumes: ds-{i % 50}\n"
        f"  produces: out-{i:05d}\n"
        f"}}\n"
    )


def yaml_intent(i: int, rng: random.Random) -> str:
    trigger = f"\n    after: [job-{i - 1:05d}]" if i % 5 and i > 0 else " push"
    return (
        "# yaml-language-server: $schema=../schemas/intent.schema.json\n"
        "apiVersion: intentc.dev/v1alpha1\nkind: Intent\n"
        f"metadata:\n  name: job-{i:05d}\n"
        f"spec:\n  trigger:{trigger}\n"
        "  action:\n    kind: inference\n"
        f"    model: m-{i % 7}\n    image: ghcr.io/acme/vllm:0.{i % 9}\n"
        f"    settings:\n      batch: {rng.choice([32, 64, 128])}\n"
        f"      seq_len: {rng.choice([2048, 4096])}\n      kv_cache: recycle\n"
        f"  context:\n    tenant: {TENANTS[i % 4]}\n"
        f"  constraints:\n    cpu: \"{rng.randint(1, 32)}\"\n    memory: 32Gi\n"
        f"    gpus:\n      count: {rng.choice([1, 2, 4, 8])}\n      product: {rng.choice(PRODUCTS)}\n"
        f"    sla: P{i % 4}\n"
        f"  consumes: [ds-{i % 50}]\n  produces: [out-{i:05d}]\n"
    )


def generate(root: Path, n: int, per_file: int = 1, notation: str = "mixed") -> tuple[Path, Path]:
    """`n` intents, half DSL, half YAML (`notation` "dsl" or "yaml": all in one); `per_file`
    intents to a file (DSL blocks one after the other, YAML documents separated by `---`),
    one by default.  The tenants and datasets are in dsl/common.intent either way."""
    rng = random.Random(n)
    dsl_dir, yaml_dir = root / "dsl", root / "yaml"
    dsl_dir.mkdir(parents=True)
    yaml_dir.mkdir(parents=True)
    common = "".join(f"tenant {t} {{ tier: {['gold', 'silver', 'bronze', 'silver'][k]} }}\n"
                     for k, t in enumerate(TENANTS))
    common += "".join(f'dataset ds-{k} {{ uri: "s3://bench/ds-{k}" }}\n' for k in range(50))
    (dsl_dir / "common.intent").write_text(common)
    texts: dict[Path, list[str]] = {}
    for i in range(n):
        if notation != "mixed":
            first = i // per_file * per_file
            if notation == "dsl":
                texts.setdefault(dsl_dir / f"job-{first:05d}.intent", []).append(dsl_intent(i, rng))
            else:
                texts.setdefault(yaml_dir / f"job-{first:05d}.yaml", []).append(yaml_intent(i, rng))
        elif i % 2 == 0:
            texts.setdefault(dsl_dir / f"job-{i // (2 * per_file) * 2 * per_file:05d}.intent", []).append(
                dsl_intent(i, rng))
        else:
            texts.setdefault(yaml_dir / f"job-{i // (2 * per_file) * 2 * per_file + 1:05d}.yaml", []).append(
                yaml_intent(i, rng))
    for path, parts in texts.items():
        path.write_text(("---\n" if path.suffix == ".yaml" else "\n").join(parts))
    return dsl_dir, yaml_dir


# A failed check comes back in err_message, not as an exception: exit non-zero on it.
# The .k files are listed in a file (argv[1]): 100,000 paths are more than a command line holds.
KCL_RUN = ("import os, sys, kcl_lib.api as api\n"
           "files = open(sys.argv[1], encoding='utf-8').read().split('\\n')\n"
           "r = api.API().exec_program(api.ExecProgramArgs(work_dir=os.path.dirname(files[0]),\n"
           "                                               k_filename_list=files))\n"
           "sys.exit(r.err_message or 0)\n")
ARGS_BUDGET = 1_000_000     # bytes of file names per command line (Linux allows 2 MB in all)


def batches(names: list[str], budget: int = ARGS_BUDGET) -> list[list[str]]:
    """`names` cut into runs whose total length stays under `budget` bytes."""
    out: list[list[str]] = [[]]
    held = 0
    for name in names:
        size = len(name.encode()) + 1
        if out[-1] and held + size > budget:
            out.append([])
            held = 0
        out[-1].append(name)
        held += size
    return out


def check_jsonschema(yaml_dir: Path, repeat: int) -> dict[str, Any]:
    """check-jsonschema on every YAML file, run in `yaml_dir` with bare file names; past
    one command line's worth (50,000 files at 100,000 intents), in consecutive batches
    whose wall and CPU times add up (peak: the largest batch's), the best of `repeat`."""
    names = sorted(p.name for p in yaml_dir.iterdir())
    cmd = ["check-jsonschema", "--schemafile", str(ROOT / "schemas" / "intent.schema.json")]
    runs = []
    for _ in range(repeat):
        parts = [measure(cmd + part, dict(os.environ), cwd=str(yaml_dir)) for part in batches(names)]
        runs.append({"wall_s": round(sum(r["wall_s"] for r in parts), 3),
                     "cpu_s": round(sum(r["cpu_s"] for r in parts), 3),
                     "peak_rss_mb": max(r["peak_rss_mb"] for r in parts), "batches": len(parts),
                     "load_before": parts[0]["load_before"], "load_after": parts[-1]["load_after"]})
    top = min(runs, key=lambda r: r["wall_s"])
    return {**top, "wall_s_all": [r["wall_s"] for r in runs], "files": len(names)}


def kcl_available() -> bool:
    return importlib.util.find_spec("kcl_lib") is not None


def kcl_side(work: Path, repeat: int, timeout: float | None, cold: dict[str, Any]) -> dict[str, Any]:
    """KCL on the same intents (`kcl_intents.write_kcl`), the best of `repeat` runs, and its
    ratios to cold `check`.  A run past `timeout` seconds is killed and recorded as such,
    with "at least" ratios, and not repeated; a run that fails (killed for memory) is
    recorded with its exit code.  KCL grows faster than linearly here (101 s and 2.7 GB
    at 10,000 intents, 558 s and 5.2 GB at 20,000), so a 100,000-intent comparison is bounded."""
    from benchmarks.kcl_intents import write_kcl
    from intentc.pipeline import check
    program = check([str(work / "repo")], use_cache=False).program
    k_files = write_kcl(program.intents, work / "kcl")
    listing = work / "kcl-files.txt"
    listing.write_text("\n".join(map(str, k_files)), encoding="utf-8")
    cmd = [sys.executable, "-c", KCL_RUN, str(listing)]
    runs = []
    for _ in range(repeat):
        runs.append(measure(cmd, dict(os.environ), timeout=timeout, ok=tuple(range(-64, 256))))
        if runs[-1]["exit"] != 0:           # killed (the timeout, or out of memory) or failed
            break
    top = min(runs, key=lambda r: (r["exit"] != 0, r["wall_s"]))
    out: dict[str, Any] = {"kcl": {**top, "wall_s_all": [r["wall_s"] for r in runs], "files": len(k_files),
                                   "what": "kcl-lib exec_program on all intents as .k files with the "
                                           "schema checks of intent.schema.json (schema validation only)"}}
    if top["exit"] != 0 and not top.get("timed_out"):
        out["kcl"]["failed"] = f"exit {top['exit']}" + (" (killed: out of memory?)" if top["exit"] == -9 else "")
        return out
    ratio = "_at_least" if top.get("timed_out") else ""
    out[f"kcl_vs_intentc_cold_wall{ratio}"] = round(top["wall_s"] / cold["wall_s"], 2)
    out[f"kcl_vs_intentc_cold_peak_rss{ratio}"] = round(top["peak_rss_mb"] / cold["peak_rss_mb"], 2)
    return out


def bench(n: int, repeat: int, kcl: bool = True, kcl_timeout: float | None = None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"intentc-bench-{n}-"))
    cache = work / "cache"
    try:
        _, yaml_dir = generate(work / "repo", n)
        env = dict(os.environ, INTENTC_CACHE_DIR=str(cache))
        intentc = [sys.executable, "-m", "intentc", "check", str(work / "repo"), "--format", "json"]
        floor_cmd = [sys.executable, str(ROOT / "benchmarks" / "frontend_floor.py"), str(work / "repo")]

        def clear() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        # cold check, the same with the compiled modules off, and the floor in turn:
        # their ratios are taken under the same load
        paired = alternating({"cold": (intentc, env, clear),
                              "pure": (intentc, {**env, **PURE}, clear),
                              "floor": (floor_cmd, dict(os.environ), None)}, repeat)
        cold, pure, floor = paired["cold"], paired["pure"], paired["floor"]
        warm = best(intentc, env, repeat)
        base = check_jsonschema(yaml_dir, repeat)
        yaml_files = base["files"]
        row: dict[str, Any] = {
            "intents": n,
            "files": n + 1,
            "intentc_check_cold": cold,
            "intentc_check_cached": warm,
            "intentc_check_cold_s": cold["wall_s"],
            "intentc_check_warm_s": warm["wall_s"],
            "intents_per_s_cold": round(n / cold["wall_s"]),
            "baseline": "check-jsonschema (YAML half only, schema validation only)",
            "baseline_run": base,
            "baseline_files": yaml_files,
            "per_file_ms_intentc_cold": round(cold["wall_s"] / (n + 1) * 1000, 3),
            "per_file_ms_baseline": round(base["wall_s"] / yaml_files * 1000, 3),
            "speedup_per_file_cold_vs_baseline": round((base["wall_s"] / yaml_files)
                                                       / (cold["wall_s"] / (n + 1)), 2),
            "floor": {**floor, "what": "libyaml composing the YAML half, lark-cython parsing the DSL half, "
                                       "both cores, nothing kept (benchmarks/frontend_floor.py)"},
            "intentc_cold_pure_python": {**pure, "what": "the same cold check with the compiled modules off "
                                                        "(INTENTC_PURE_YAML/DSL=1)"},
            "pure_python_vs_compiled_cold_wall": round(pure["wall_s"] / cold["wall_s"], 2),
            "pure_python_vs_compiled_cold_cpu": round(pure["cpu_s"] / cold["cpu_s"], 2),
            "intentc_cold_vs_floor_wall": round(cold["wall_s"] / floor["wall_s"], 2),
            "intentc_cold_vs_floor_cpu": round(cold["cpu_s"] / floor["cpu_s"], 2),
        }
        if kcl and kcl_available():
            row.update(kcl_side(work, repeat, kcl_timeout, cold))
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-kcl", action="store_true", help="leave KCL out (minutes and GBs at 10,000 intents)")
    ap.add_argument("--kcl-timeout", type=float, default=3600.0, metavar="SECONDS",
                    help="kill a KCL run after this long and record it as timed out (default 3600)")
    ap.add_argument("--out", default="bench_frontend", help="results/<out>.json")
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    for n in args.sizes:     # written after each size: a later one that fails loses nothing before it
        results.append(bench(n, args.repeat, not args.no_kcl, args.kcl_timeout))
        write_results(args.out, results)
    for r in results:
        cold, warm, base = r["intentc_check_cold"], r["intentc_check_cached"], r["baseline_run"]
        print(f"{r['intents']:>7} intents: intentc cold {cold['wall_s']} s {cold['peak_rss_mb']} MB, "
              f"cached {warm['wall_s']} s {warm['peak_rss_mb']} MB | check-jsonschema (YAML half) "
              f"{base['wall_s']} s {base['peak_rss_mb']} MB | load {cold['load_before']}")
        pu = r["intentc_cold_pure_python"]
        print(f"{'':>16}compiled modules off: cold {pu['wall_s']} s wall, {pu['cpu_s']} s CPU "
              f"({r['pure_python_vs_compiled_cold_wall']}x the wall time, "
              f"{r['pure_python_vs_compiled_cold_cpu']}x the CPU)")
        fl = r["floor"]
        print(f"{'':>16}floor (the two parsers alone) {fl['wall_s']} s wall, {fl['cpu_s']} s CPU: intentc cold is "
              f"{r['intentc_cold_vs_floor_wall']}x its wall time, {r['intentc_cold_vs_floor_cpu']}x its CPU")
        if "kcl" in r:
            k = r["kcl"]
            if "failed" in k:
                print(f"{'':>16}KCL failed after {k['wall_s']} s at {k['peak_rss_mb']} MB: {k['failed']}")
            elif k.get("timed_out"):
                print(f"{'':>16}KCL killed after {k['wall_s']} s at {k['peak_rss_mb']} MB (at least "
                      f"{r['kcl_vs_intentc_cold_wall_at_least']}x intentc's cold time)")
            else:
                print(f"{'':>16}KCL {k['wall_s']} s {k['peak_rss_mb']} MB ({r['kcl_vs_intentc_cold_wall']}x "
                      f"intentc's cold time, {r['kcl_vs_intentc_cold_peak_rss']}x its memory)")
        elif not args.no_kcl:
            print(f"{'':>16}KCL not measured: kcl-lib is not installed (pip install -e '.[bench]')")


if __name__ == "__main__":
    main()
