"""Does `intentc check` stay linear on repositories shaped unlike the benchmark's?

    python benchmarks/bench_shapes.py [--sizes 10000 40000] [--repeat 1] [--shapes chain cycle ...]

`bench_scale.py` sweeps one shape (`bench_frontend.generate`: short `after`
chains, four tenants, fifty datasets).  A real organisation's graph is not
that: its dependencies may run through every intent, loop, fan into one
intent, its tenants may be thousands, its datasets a pipeline, its folders
deep, and a broken shared file makes every intent wrong at once.  Each
`SHAPES` entry builds one of those, half DSL and half YAML, one intent per
file; each is checked cold (parse cache off) and cached, as a user runs it
(`intentc check DIR`, a fresh process), at every size.  Reported per shape
and size: wall and CPU time, peak RSS, the bytes printed and the exit code;
per shape, the growth exponent of each (the slope of log(measure) on
log(intents); 1.0 is linear), and the worst exponent of all.

Shapes with findings (`cycle`, `unknown-tenant`) exit 1; that is what they
test (a finding's cost), not a failure of the benchmark.
Writes benchmarks/results/bench_shapes.json.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_scale import slope  # noqa: E402
from benchmarks.proc import measure  # noqa: E402
from benchmarks.results import write_results  # noqa: E402

DATASETS = 50
_CODE = re.compile(rb"^\S+: (?:error|warning)\[(\w+)\]", re.M)     # a finding's first line, as printed


@dataclass(frozen=True)
class Shape:
    """How intent `i` of `n` depends on others, whose it is, what it reads, where it lives."""

    name: str
    what: str
    after: Callable[[int, int], list[int]]       # the intents `i` runs after
    tenants: Callable[[int], int]                # how many tenants there are, for `n` intents
    tenant: Callable[[int, int], str]            # the tenant intent `i` names
    consumes: Callable[[int], str]               # the dataset intent `i` reads
    folder: Callable[[int], str]                 # where intent `i`'s file is, under its DSL/YAML half
    findings: str = ""                           # the code every run must report ("" : none)


def _benchmark_after(i: int, n: int) -> list[int]:
    return [i - 1] if i % 5 and i > 0 else []


def _flat(i: int) -> str:
    return f"d{i // 1000:03d}"


def _four(n: int) -> int:
    return 4


def _tenant_of(i: int, n: int) -> str:
    return f"team-{i % _four(n)}"


def _dataset(i: int) -> str:
    return f"ds-{i % DATASETS}"


SHAPES: tuple[Shape, ...] = (
    Shape("benchmark", "bench_frontend's mix: chains of five, four tenants, fifty datasets",
          _benchmark_after, _four, _tenant_of, _dataset, _flat),
    Shape("chain", "one `after` chain through every intent",
          lambda i, n: [i - 1] if i else [], _four, _tenant_of, _dataset, _flat),
    Shape("cycle", "one `after` cycle through every intent (one E0501)",
          lambda i, n: [(i - 1) % n], _four, _tenant_of, _dataset, _flat, findings="E0501"),
    Shape("fan-in", "the first intent runs after 1,000 others; the rest after nothing",
          lambda i, n: list(range(1, min(n, 1001))) if i == 0 else [], _four, _tenant_of, _dataset, _flat),
    Shape("tenants", "a tenant for every ten intents",
          _benchmark_after, lambda n: max(4, n // 10), lambda i, n: f"team-{i // 10}", _dataset, _flat),
    Shape("pipeline", "each intent consumes what the one before produced",
          _benchmark_after, _four, _tenant_of, lambda i: f"out-{i - 1}" if i else _dataset(i), _flat),
    Shape("unknown-tenant", "every intent names a tenant nobody declared (an E0301 each)",
          _benchmark_after, _four, lambda i, n: f"nobody-{i % 7}", _dataset, _flat, findings="E0301"),
    Shape("deep-folders", "every file 30 folders down",
          _benchmark_after, _four, _tenant_of, _dataset,
          lambda i: "/".join(f"level-{k}" for k in range(30)) + f"/{_flat(i)}"),
)
BY_NAME = {s.name: s for s in SHAPES}


def _dsl(i: int, shape: Shape, n: int) -> str:
    after = shape.after(i, n)
    trigger = "after " + ", ".join(f"job-{k}" for k in after) if after else "on push"
    return (f"intent job-{i} {{\n  trigger: {trigger}\n"
            f'  action: inference model "m-{i % 7}" image "ghcr.io/acme/vllm:0.{i % 9}" {{\n'
            f"    seq_len: 2048\n    precision: bf16\n  }}\n"
            f"  context: tenant {shape.tenant(i, n)}\n"
            f'  constraints: cpu {1 + i % 32}, memory 32Gi, gpus {1 << i % 4} x "H100-80GB" within node, '
            f"sla P{i % 4}\n"
            f"  consumes: {shape.consumes(i)}\n  produces: out-{i}\n}}\n")


def _yaml(i: int, shape: Shape, n: int) -> str:
    after = shape.after(i, n)
    trigger = "\n    after: [" + ", ".join(f"job-{k}" for k in after) + "]" if after else " push"
    return ("apiVersion: intentc.dev/v1alpha1\nkind: Intent\n"
            f"metadata:\n  name: job-{i}\n"
            f"spec:\n  trigger:{trigger}\n"
            f"  action:\n    kind: inference\n    model: m-{i % 7}\n    image: ghcr.io/acme/vllm:0.{i % 9}\n"
            f"  context:\n    tenant: {shape.tenant(i, n)}\n"
            f"  constraints:\n    cpu: \"{1 + i % 32}\"\n    memory: 32Gi\n"
            f"    gpus:\n      count: {1 << i % 4}\n      product: H100-80GB\n    sla: P{i % 4}\n"
            f"  consumes: [{shape.consumes(i)}]\n  produces: [out-{i}]\n")


def generate(root: Path, shape: Shape, n: int) -> Path:
    """`n` intents of `shape` under `root` (even ones DSL, odd ones YAML), plus one
    file declaring the tenants and datasets."""
    root.mkdir(parents=True)
    common = "".join(f"tenant team-{t} {{ tier: gold }}\n" for t in range(shape.tenants(n)))
    common += "".join(f'dataset ds-{k} {{ uri: "s3://bench/ds-{k}" }}\n' for k in range(DATASETS))
    (root / "common.intent").write_text(common)
    for i in range(n):
        half, suffix, text = ("dsl", ".intent", _dsl(i, shape, n)) if i % 2 == 0 else \
            ("yaml", ".yaml", _yaml(i, shape, n))
        folder = root / half / shape.folder(i)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"job-{i}{suffix}").write_text(text)
    return root


def run_check(repo: Path, env: dict[str, str]) -> dict[str, Any]:
    """One `intentc check` as a user runs it: wall, CPU and peak RSS from the kernel, the
    bytes it printed, its exit code (0 or 1: a crash or exit 2 stops the benchmark)."""
    got = measure([sys.executable, "-m", "intentc", "check", str(repo)], env, ok=(0, 1), stdout=True)
    printed = got.pop("stdout")
    return {**got, "printed_bytes": len(printed), "codes": sorted({m.decode() for m in _CODE.findall(printed)})}


def measure_shape(shape: Shape, sizes: list[int], repeat: int, work: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        repo = generate(work / f"{shape.name}-{n}", shape, n)
        cache = work / "cache"
        cold = min((run_check(repo, dict(os.environ, INTENTC_CACHE_DIR="")) for _ in range(repeat)),
                   key=lambda r: r["wall_s"])
        shutil.rmtree(cache, ignore_errors=True)
        env = dict(os.environ, INTENTC_CACHE_DIR=str(cache))
        run_check(repo, env)                                     # fills the cache
        cached = min((run_check(repo, env) for _ in range(repeat)), key=lambda r: r["wall_s"])
        for got in (cold, cached):
            wanted = [shape.findings] if shape.findings else []
            if got["codes"] != wanted or got["exit"] != (1 if shape.findings else 0):
                raise SystemExit(f"{shape.name} at {n}: expected {wanted or 'no findings'}, got exit "
                                 f"{got['exit']} with {got['codes']}")
        rows.append({"intents": n, "cold": cold, "cached": cached})
        print(f"{shape.name:>15} {n:>7}: cold {cold['wall_s']:>7} s {cold['cpu_s']:>7} s cpu "
              f"{cold['peak_rss_mb']:>7} MB, printed {cold['printed_bytes']:>9} B | cached {cached['wall_s']:>6} s "
              f"{cached['peak_rss_mb']:>6} MB | load {cold['load_before']}", flush=True)
        shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    xs = [float(r["intents"]) for r in rows]
    exponents = {f"{mode}_{what}": slope(xs, [r[mode][key] for r in rows])
                 for mode in ("cold", "cached")
                 for what, key in (("wall", "wall_s"), ("cpu", "cpu_s"), ("peak_rss", "peak_rss_mb"),
                                   ("printed", "printed_bytes"))}
    return {"shape": shape.name, "what": shape.what, "rows": rows, "exponents": exponents}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 40000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--shapes", nargs="+", choices=sorted(BY_NAME), default=[s.name for s in SHAPES])
    ap.add_argument("--out", default="bench_shapes", help="results/<out>.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="intentc-shapes-"))
    try:
        results = [measure_shape(BY_NAME[name], args.sizes, args.repeat, work) for name in args.shapes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cold_cpu = {r["shape"]: r["exponents"]["cold_cpu"] for r in results}
    worst = max(cold_cpu.items(), key=lambda kv: kv[1] if kv[1] is not None else -1.0)
    doc = {"sizes": args.sizes, "repeat": args.repeat, "jobs": os.cpu_count(), "shapes": results,
           "worst_cold_cpu_exponent": {"shape": worst[0], "exponent": worst[1]}}
    print(f"worst cold CPU exponent: {worst[1]} ({worst[0]})")
    print(write_results(args.out, doc))


if __name__ == "__main__":
    main()
