"""Where every benchmark writes its figures: `benchmarks/results/<name>.json`.

One writer so that every file has the same shape (indented, sorted keys,
trailing newline) and a rerun diffs cleanly against the committed one.

`INTENTC_BENCH_RESULTS` names another folder: the smoke tests
(tests/test_bench_smoke*.py) run every benchmark at a small size and must not
overwrite the committed figures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def results_dir() -> Path:
    return Path(os.environ.get("INTENTC_BENCH_RESULTS") or RESULTS_DIR)


def write_results(name: str, doc: object) -> Path:
    path = results_dir() / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path
