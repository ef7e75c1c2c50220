"""Golden files: compare text with a checked-in expectation.

Set INTENTC_UPDATE_GOLDEN=1 to (re)write the expectations after an
intended change, then review the diff like any other code change.
"""

from __future__ import annotations

import os
from pathlib import Path


def assert_golden(path: Path, text: str) -> None:
    if os.environ.get("INTENTC_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"missing golden file {path}; run with INTENTC_UPDATE_GOLDEN=1")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {path} (INTENTC_UPDATE_GOLDEN=1 to accept)"
