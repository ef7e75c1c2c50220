"""Where every benchmark writes its figures: `benchmarks/results/<name>.json`.

One writer so that every file has the same shape (indented, sorted keys,
trailing newline) and a rerun diffs cleanly against the committed one.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def write_results(name: str, doc: object) -> Path:
    path = RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path
