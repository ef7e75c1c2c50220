"""Organisation rules in CEL: what they add to `intentc check` (docs/rules.md).

    python benchmarks/bench_rules.py [--sizes 10000] [--repeat 3]

The same synthetic repository as bench_frontend (half DSL, half YAML, one
intent per file), twice: without `policies/`, and with a policy file of
five rules that read every kind of thing a rule reads (a regex over the
image, a constraint, a comprehension over the tags, the tenant, the
datasets), all of which hold, as in a clean pull request.  Measured in the
same run:

* `intentc check DIR` in a fresh process on each repository, cold (empty
  parse cache) and cached, the two repositories' runs taken in turn
  (`proc.alternating`) so the ratio is measured under one load.  Without
  rules a cached check is answered from the remembered summary; with rules
  it needs the program itself, which is part of what rules cost;
* the evaluation alone, in process (`plan.cel_check.evaluate` over the
  checked program, best of `--repeat`): seconds, and microseconds per rule
  and intent.

Writes benchmarks/results/bench_rules.json.  Exits non-zero if a check
reports anything (the rules must hold, the repository must be clean).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_frontend import generate  # noqa: E402
from benchmarks.proc import alternating  # noqa: E402
from benchmarks.results import write_results  # noqa: E402

RULES = """\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: bench}
spec:
  rules:
    - name: no-latest-images
      expression: 'intent.image.contains(":") && !intent.image.endsWith(":latest")'
      message: images are pinned
    - name: p0-at-most-eight-gpus
      expression: intent.sla != "P0" || intent.gpus.count <= 8
      message: P0 intents ask for at most 8 GPUs
    - name: short-tags
      expression: intent.tags.all(t, size(t) < 64)
      message: tags are short
    - name: known-tenant-tier
      expression: tenant != null && tenant.tier in ["gold", "silver", "bronze"]
      message: tenants declare a tier
    - name: datasets-in-s3
      expression: datasets.all(n, datasets[n].uri == null || datasets[n].uri.startsWith("s3://"))
      message: datasets live in S3
"""
RULE_COUNT = 5
# A rule with a regular expression, evaluated alone: the library compiles its pattern at each evaluation.
REGEX = 'intent.image.matches(":[^/:@]+$")'


def make_repo(root: Path, n: int, rules: bool) -> Path:
    generate(root, n)
    (root / ".git").mkdir()                 # the repository root: the policy search stops here
    if rules:
        (root / "policies").mkdir()
        (root / "policies" / "bench.yaml").write_text(RULES)
    return root


def evaluation(repo: Path, repeat: int) -> dict[str, Any]:
    """`evaluate` alone over the checked program of `repo`, best of `repeat`."""
    from intentc.pipeline import check
    from intentc.plan.cel_check import evaluate
    from intentc.policy.cel_rules import CelRule
    from intentc.policy.load import load_policies

    checked = check([str(repo)], jobs=1)
    policies, diags, _ = load_policies([str(repo)])
    if diags or len(policies.cel) != RULE_COUNT:
        raise SystemExit(f"the benchmark's rules do not load: {diags}")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        found = evaluate(checked.program, policies.cel)
        times.append(time.perf_counter() - start)
        if found:
            raise SystemExit(f"the benchmark's rules must hold: {found[:3]}")
    n = len(checked.program.intents)
    best = min(times)
    regex = [CelRule("regex", REGEX, "tagged")]
    regex_times = []
    for _ in range(repeat):
        start = time.perf_counter()
        if evaluate(checked.program, regex):
            raise SystemExit("the regex rule must hold")
        regex_times.append(time.perf_counter() - start)
    return {"intents": n, "rules": RULE_COUNT, "evaluate_s": round(best, 4),
            "evaluate_s_all": [round(t, 4) for t in times],
            "us_per_rule_and_intent": round(best / (n * RULE_COUNT) * 1e6, 2),
            "regex_rule": REGEX, "regex_rule_evaluate_s": round(min(regex_times), 4),
            "regex_rule_us_per_intent": round(min(regex_times) / n * 1e6, 2)}


def bench(n: int, repeat: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"intentc-bench-rules-{n}-"))
    try:
        plain, ruled = make_repo(work / "plain", n, False), make_repo(work / "ruled", n, True)
        caches = {"plain": work / "cache-plain", "ruled": work / "cache-ruled"}

        def command(repo: Path) -> list[str]:
            return [sys.executable, "-m", "intentc", "check", str(repo), "--format", "json"]

        def env(name: str) -> dict[str, str]:
            return dict(os.environ, INTENTC_CACHE_DIR=str(caches[name]), PYTHONPATH=str(ROOT))

        def clear(name: str) -> Any:
            return lambda: shutil.rmtree(caches[name], ignore_errors=True)

        cold = alternating({"plain": (command(plain), env("plain"), clear("plain")),
                            "ruled": (command(ruled), env("ruled"), clear("ruled"))}, repeat)
        warm = alternating({"plain": (command(plain), env("plain"), None),
                            "ruled": (command(ruled), env("ruled"), None)}, repeat)
        alone = evaluation(ruled, repeat)
        return {
            "intents": n,
            "rules": RULE_COUNT,
            "check_cold_without_rules": cold["plain"],
            "check_cold_with_rules": cold["ruled"],
            "check_cached_without_rules": warm["plain"],
            "check_cached_with_rules": warm["ruled"],
            "cold_ratio_wall": round(cold["ruled"]["wall_s"] / cold["plain"]["wall_s"], 3),
            "cold_ratio_cpu": round(cold["ruled"]["cpu_s"] / cold["plain"]["cpu_s"], 3),
            "cached_ratio_wall": round(warm["ruled"]["wall_s"] / warm["plain"]["wall_s"], 3),
            "evaluation": alone,
            "evaluation_share_of_cold_check": round(alone["evaluate_s"] / cold["ruled"]["wall_s"], 3),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        row = bench(n, args.repeat)
        rows.append(row)
        print(f"{n} intents, {row['rules']} rules: check cold {row['check_cold_without_rules']['wall_s']} s "
              f"without, {row['check_cold_with_rules']['wall_s']} s with ({row['cold_ratio_wall']}x); cached "
              f"{row['check_cached_without_rules']['wall_s']} s / {row['check_cached_with_rules']['wall_s']} s "
              f"({row['cached_ratio_wall']}x); evaluation alone {row['evaluation']['evaluate_s']} s "
              f"({row['evaluation']['us_per_rule_and_intent']} us per rule and intent); a regex rule alone "
              f"{row['evaluation']['regex_rule_evaluate_s']} s")
    path = write_results("bench_rules", {"date": time.strftime("%Y-%m-%d"), "rows": rows,
                                         "library": _library()})
    print(f"wrote {path}")


def _library() -> str:
    from importlib.metadata import version

    return f"common-expression-language {version('common-expression-language')}"


if __name__ == "__main__":
    main()
