"""Differential check: does this tree's front end give the same IR and diagnostics as another tree's?

A speed-up of the parsers, the lowering or the local passes must not move
a single diagnostic or span.  This builds a deterministic corpus of inputs
(both surfaces), runs each through `_parse_guarded` (parse + local passes,
what a worker does per file) in two child processes — this tree's and the
baseline's `intentc` first on `PYTHONPATH` — and compares, per input, a
canonical dump of every diagnostic (code, severity, message, span, hint,
related spans), of the IR (every field of every node, including the spans
that `repr` hides and each node's field spans) and, for the DSL, of the
comments `intentc fmt` keeps.

    python benchmarks/frontend_differential.py --baseline /path/to/other/checkout [--mutations N]

The corpus: the bad-input table `dsl_errors.EXAMPLES`, the rows of
`tests/test_malformed.py`, every ``.intent`` / ``.yaml`` file of the
repository, generated benchmark intents of both surfaces, and seeded random
mutations of them (deletions, insertions of brackets, quotes, keywords,
indentation and YAML indicators, truncations).  Exit status 1 when any
input differs; the first differences are printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

DSL_INSERTS = ("{", "}", "[", "]", "(", ")", '"', ":", ",", "x", "#", "\n", "  ", "@",
               " tenant ", " intent ", " dataset ", " trigger: ", " action: ", " on ", " after ",
               " gpus ", " within ", " image ", " batch ", " inference ", "2.5", "-1", "é")
YAML_INSERTS = ("{", "}", "[", "]", '"', "'", ":", ": ", ",", "- ", "\n", "  ", "\t", "&a ", "*a",
                "<<: ", "---\n", "!!int ", "!foo ", "#", "x", "0x1F", "1e3", "~", "yes", "é")


def _corpus(mutations: int) -> list[tuple[str, str]]:
    """(path, text) of every input, deterministic."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_frontend import dsl_intent, yaml_intent
    sys.path.insert(0, str(ROOT / "tests"))
    import test_malformed
    from intentc.frontend import dsl_errors

    out: list[tuple[str, str]] = []
    for ex in dsl_errors.EXAMPLES:
        out.append((f"examples/{ex.name}.intent", ex.text))
    for r in test_malformed.ROWS:
        for name, content in r.files.items():
            if isinstance(content, str) and name.endswith((".intent", ".yaml", ".yml")):
                out.append((f"malformed/{r.id}/{name}", content.replace(test_malformed.MARK, "")))
    for pattern in ("*.intent", "*.yaml", "*.yml"):
        for p in sorted(ROOT.rglob(pattern)):
            rel = p.relative_to(ROOT)
            if rel.parts[0] in ("build", ".git") or "node_modules" in rel.parts:
                continue
            try:
                out.append((str(rel), p.read_text(encoding="utf-8")))
            except (OSError, UnicodeError):
                continue
    rng = random.Random(17)
    seeds: list[tuple[str, str]] = []
    for i in range(60):
        seeds.append(("dsl", dsl_intent(i, rng)))
        seeds.append(("yaml", yaml_intent(i, rng)))
    for i, (kind, text) in enumerate(seeds):
        out.append((f"generated/{i:03d}.{'intent' if kind == 'dsl' else 'yaml'}", text))
    for i in range(mutations):
        kind, text = seeds[rng.randrange(len(seeds))]
        inserts = DSL_INSERTS if kind == "dsl" else YAML_INSERTS
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            op = rng.random()
            at = rng.randrange(len(text) + 1)
            if op < 0.35 and text:
                text = text[:at] + text[at + rng.randint(1, 8):]
            elif op < 0.9:
                text = text[:at] + rng.choice(inserts) + text[at:]
            else:
                text = text[:at]
        out.append((f"mutated/{i:05d}.{'intent' if kind == 'dsl' else 'yaml'}", text))
    return out


_POSITION_FIELDS = ("span", "spans", "file", "line", "column", "end_line", "end_column")


def _canonical(value: Any) -> Any:
    """A JSON-able dump of an IR value with every field, spans included."""
    from intentc.diagnostics import Span
    from intentc.ir import FieldSpans
    if isinstance(value, Span):
        return ["span", value.file, value.line, value.column, value.end_line, value.end_column]
    if isinstance(value, FieldSpans):
        return ["fields", [[k, _canonical(s)] for k, s in value.items]]
    if isinstance(value, enum.Enum):
        return [type(value).__name__, value.value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a node's own span is compared as `span` however the tree keeps it (a field, inside
        # its field spans, or as five position fields), so trees of either layout compare
        fields = [f.name for f in dataclasses.fields(value) if f.name not in _POSITION_FIELDS]
        located = [name for name in ("span", "spans") if hasattr(value, name)]
        return [type(value).__name__] + [[name, _canonical(getattr(value, name))] for name in fields + located]
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return [["dict"]] + [[repr(k), _canonical(v)] for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))]
    if isinstance(value, float):
        return ["float", repr(value)]
    return value if value is None or isinstance(value, (str, int, bool)) else ["repr", repr(value)]


def dump(corpus_file: str, out_file: str) -> None:
    """Child mode: one JSON line per input."""
    import intentc
    from intentc.frontend.dsl import parse_full
    from intentc.frontend.sources import SourceFile
    from intentc.pipeline.loading import _parse_guarded
    corpus = json.loads(Path(corpus_file).read_text())
    with open(out_file, "w") as out:
        out.write(json.dumps(["tree", str(Path(intentc.__file__).resolve().parent.parent)]) + "\n")
        for path, text in corpus:
            src = SourceFile(path, text)
            try:
                result = _canonical(_parse_guarded(src))
                comments = _canonical(parse_full(src).comments) if src.is_dsl else None
            except Exception as exc:    # a crash is a difference too, not the end of the run
                result, comments = ["crash", type(exc).__name__, str(exc)], None
            out.write(json.dumps([path, result, comments], ensure_ascii=False) + "\n")


def _run_tree(tree: Path, corpus_file: str, out_file: str) -> list[Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONHASHSEED="0")
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dump", corpus_file, out_file],
                   env=env, check=True, cwd=str(ROOT))
    with open(out_file) as f:
        return [json.loads(line) for line in f]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="the other checkout (its intentc/ first on PYTHONPATH)")
    ap.add_argument("--mutations", type=int, default=3000)
    ap.add_argument("--show", type=int, default=5, help="differences to print")
    ap.add_argument("--dump", nargs=2, metavar=("CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        dump(*args.dump)
        return 0
    if args.baseline is None:
        ap.error("--baseline is required")
    with tempfile.TemporaryDirectory(prefix="intentc-fediff-") as tmp:
        corpus = _corpus(args.mutations)
        corpus_file = os.path.join(tmp, "corpus.json")
        Path(corpus_file).write_text(json.dumps(corpus))
        ours = _run_tree(ROOT, corpus_file, os.path.join(tmp, "ours.jsonl"))
        theirs = _run_tree(args.baseline.resolve(), corpus_file, os.path.join(tmp, "theirs.jsonl"))
    print(f"this tree: {ours[0][1]}\nbaseline:  {theirs[0][1]}")
    if ours[0][1] == theirs[0][1]:
        print("both children imported the same tree: PYTHONPATH did not take effect")
        return 2
    differing = [(a, b) for a, b in zip(ours[1:], theirs[1:]) if a != b]
    crashes = sum(1 for a in ours[1:] if a[1] and a[1][0] == "crash")
    dsl = sum(1 for p, _ in corpus if p.endswith(".intent"))
    print(f"{len(corpus)} inputs ({dsl} DSL, {len(corpus) - dsl} YAML), "
          f"{sum(len(a[1][2][1]) for a in ours[1:] if a[1][0] == 'FileResult')} diagnostics here, "
          f"{crashes} crashes here; differing: {len(differing)}")
    for a, b in differing[:args.show]:
        print(f"--- {a[0]}\n  this tree: {json.dumps(a[1:], ensure_ascii=False)[:800]}\n"
              f"  baseline:  {json.dumps(b[1:], ensure_ascii=False)[:800]}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
