"""The code catalogue: documented, and every code the sources emit is in it."""

from __future__ import annotations

import re
from pathlib import Path

from intentc.diagnostics.codes import CODES

ROOT = Path(__file__).parents[1]


def test_docs_list_every_code() -> None:
    doc = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| `([EW]\d{4})` \| (.+) \|$", doc, re.M))
    assert documented == CODES, "regenerate docs/diagnostics.md from intentc/diagnostics/codes.py"


def test_every_emitted_code_is_catalogued() -> None:
    emitted: set[str] = set()
    for path in (ROOT / "intentc").rglob("*.py"):
        if path.name == "diagnostics/codes.py":
            continue
        emitted |= set(re.findall(r"""["']([EW]\d{4})["']""", path.read_text(encoding="utf-8")))
    assert emitted, "no codes found: the pattern is wrong"
    assert sorted(emitted - set(CODES)) == []      # nothing emitted without a catalogue entry
    assert sorted(set(CODES) - emitted) == []      # no catalogue entry nothing emits
