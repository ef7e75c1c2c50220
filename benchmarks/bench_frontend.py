"""Front-end throughput: `intentc check` on N synthetic intents vs check-jsonschema.

    python benchmarks/bench_frontend.py [--sizes 1000 10000] [--repeat 3]

Generates N intents (half DSL, half YAML, one intent per file, plus tenants
and datasets), then measures, in the same run and on the same files:

* `intentc check DIR` as a user runs it (a fresh process), cold (empty
  parse cache) and warm (cache from the previous run), both cores;
* the baseline: `check-jsonschema --schemafile schemas/intent.schema.json`
  on the YAML half only (schema validation alone: no DSL, no positions
  beyond the schema error, no cross-file semantic passes).

Reports intents/s and per-file time ratios; writes
benchmarks/results/bench_frontend.json.  Seeded: the same files every run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.results import write_results  # noqa: E402

TENANTS = ["team-a", "team-b", "team-c", "team-d"]
PRODUCTS = ["H100-80GB", "A100-80GB", "L40S"]


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


def generate(root: Path, n: int) -> tuple[Path, Path]:
    rng = random.Random(n)
    dsl_dir, yaml_dir = root / "dsl", root / "yaml"
    dsl_dir.mkdir(parents=True)
    yaml_dir.mkdir(parents=True)
    common = "".join(f"tenant {t} {{ tier: {['gold', 'silver', 'bronze', 'silver'][k]} }}\n"
                     for k, t in enumerate(TENANTS))
    common += "".join(f'dataset ds-{k} {{ uri: "s3://bench/ds-{k}" }}\n' for k in range(50))
    (dsl_dir / "common.intent").write_text(common)
    for i in range(n):
        if i % 2 == 0:
            (dsl_dir / f"job-{i:05d}.intent").write_text(dsl_intent(i, rng))
        else:
            (yaml_dir / f"job-{i:05d}.yaml").write_text(yaml_intent(i, rng))
    return dsl_dir, yaml_dir


def timed(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, int]:
    best = float("inf")
    rc = 0
    for _ in range(repeat):
        start = time.perf_counter()
        rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
        best = min(best, time.perf_counter() - start)
    return best, rc


def bench(n: int, repeat: int) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix=f"intentc-bench-{n}-"))
    cache = work / "cache"
    try:
        _, yaml_dir = generate(work / "repo", n)
        env = dict(os.environ, INTENTC_CACHE_DIR=str(cache))
        intentc = [sys.executable, "-m", "intentc", "check", str(work / "repo"), "--format", "json"]

        cold = float("inf")
        for _ in range(repeat):
            shutil.rmtree(cache, ignore_errors=True)
            t, rc = timed(intentc, env, 1)
            cold = min(cold, t)
        assert rc == 0, f"intentc check failed on generated input (exit {rc})"
        warm, rc = timed(intentc, env, repeat)
        yaml_files = sorted(str(p) for p in yaml_dir.iterdir())
        baseline_cmd = ["check-jsonschema", "--schemafile", str(ROOT / "schemas" / "intent.schema.json"),
                        *yaml_files]
        base, base_rc = timed(baseline_cmd, dict(os.environ), repeat)
        assert base_rc == 0, "check-jsonschema rejected the generated YAML"
        files_intentc = n + 1
        files_base = len(yaml_files)
        per_file_intentc_cold = cold / files_intentc
        per_file_base = base / files_base
        return {
            "intents": n,
            "files": files_intentc,
            "intentc_check_cold_s": round(cold, 3),
            "intentc_check_warm_s": round(warm, 3),
            "intents_per_s_cold": round(n / cold),
            "intents_per_s_warm": round(n / warm),
            "baseline": "check-jsonschema (YAML half only, schema validation only)",
            "baseline_s": round(base, 3),
            "baseline_files": files_base,
            "per_file_ms_intentc_cold": round(per_file_intentc_cold * 1000, 3),
            "per_file_ms_intentc_warm": round(warm / files_intentc * 1000, 3),
            "per_file_ms_baseline": round(per_file_base * 1000, 3),
            "speedup_per_file_cold_vs_baseline": round(per_file_base / per_file_intentc_cold, 2),
            "speedup_per_file_warm_vs_baseline": round(per_file_base / (warm / files_intentc), 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results = [bench(n, args.repeat) for n in args.sizes]
    write_results("bench_frontend", results)
    print(f"{'intents':>8} {'cold s':>8} {'warm s':>8} {'int/s cold':>11} {'baseline s':>11} "
          f"{'ms/file ours':>13} {'ms/file base':>13} {'ratio':>6}")
    for r in results:
        print(f"{r['intents']:>8} {r['intentc_check_cold_s']:>8} {r['intentc_check_warm_s']:>8} "
              f"{r['intents_per_s_cold']:>11} {r['baseline_s']:>11} {r['per_file_ms_intentc_cold']:>13} "
              f"{r['per_file_ms_baseline']:>13} {r['speedup_per_file_cold_vs_baseline']:>6}")


if __name__ == "__main__":
    main()
