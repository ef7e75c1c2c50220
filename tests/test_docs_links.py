"""The README and docs/ point only at files that exist, and the README stays a short guide.

A markdown link to a relative path must name a file or folder of the repository
(from the page's own folder; its `#anchor` is not checked), and so must a
backticked path that looks like one of the repository's own (it starts with a
top-level folder of the repository and ends in a file name or a `/`, e.g.
`intentc/plan/repack.py`, `docs/reload.md`, `hack/testenv/`, or is a file at
the top such as `SECURITY.md`; `intents/status`, an API resource, is not).
Paths inside code blocks are examples and are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 300
README_MAX_WIDTH = 120

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
TICKED = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"^(```|~~~)")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def _top_names() -> set[str]:
    return {p.name for p in ROOT.iterdir() if not p.name.startswith(".") or p.name in (".ci", ".github")}


def missing_references(page: Path) -> list[str]:
    """`file:line: target` for every reference on `page` to a path that does not exist."""
    top = _top_names()
    found: list[str] = []
    for n, line in _prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue                               # a URL or an anchor on the same page
            path = target.split("#", 1)[0]
            if path and not (page.parent / path).exists():
                found.append(f"{page.relative_to(ROOT)}:{n}: {target}")
        for ticked in TICKED.findall(LINK.sub("", line)):
            path = ticked.split(":", 1)[0].split("#", 1)[0].rstrip(".,;")
            first = path.split("/", 1)[0]
            named = path.endswith("/") or "." in path.rsplit("/", 1)[-1]      # a file name or a folder/
            looks_like_repo_path = named and (("/" in path and first in top) or path in top)
            if looks_like_repo_path and not any(c in path for c in "*{}<>$|") and not (ROOT / path).exists():
                found.append(f"{page.relative_to(ROOT)}:{n}: `{ticked}`")
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_referenced_file_exists(page: Path) -> None:
    assert missing_references(page) == []


def test_the_check_finds_a_missing_file(tmp_path: Path) -> None:
    page = ROOT / "docs" / "_probe_for_test.md"
    page.write_text("see [x](nowhere.md), `intentc/nowhere.py`, [ok](design.md#layout), `docs/design.md`\n"
                    "```\n[in code](ignored.md) `intentc/ignored.py`\n```\n")
    try:
        assert missing_references(page) == ["docs/_probe_for_test.md:1: nowhere.md",
                                            "docs/_probe_for_test.md:1: `intentc/nowhere.py`"]
    finally:
        page.unlink()


def test_readme_is_short_and_narrow() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    wide = [f"{n}: {len(line)} characters" for n, line in enumerate(lines, 1) if len(line) > README_MAX_WIDTH]
    assert wide == [], f"README.md lines over {README_MAX_WIDTH} characters"
