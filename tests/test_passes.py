"""Golden tests per semantic pass: tests/golden/passes/<pass>/<case>.intent|yaml
→ <case>.expected (the diagnostics that pass alone reports, in text form)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_support import assert_golden
from intentc.diagnostics import format_text, sorted_diagnostics
from intentc.frontend import merge, parse_source
from intentc.frontend.sources import discover, read_source
from intentc.passes import PASSES, run_passes

GOLDEN = Path(__file__).parent / "golden" / "passes"
PASS_BY_NAME = {p.__name__: p for p in PASSES}
CASES = sorted(d for d in GOLDEN.iterdir() if d.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pass_golden(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each case directory names the pass it exercises: `<pass_name>--<what>`."""
    pass_name = case.name.split("--")[0]
    monkeypatch.chdir(case)
    files, _ = discover(["."])
    sources = [s for s in (read_source(f)[0] for f in files) if s is not None]
    program, parse_diags = merge(parse_source(s) for s in sources)   # parsing only, no pass
    assert not [d for d in parse_diags if d.is_error], "golden input must parse cleanly"
    _, diags = run_passes(program, (PASS_BY_NAME[pass_name],))
    text = {s.path: s.text for s in sources}
    assert_golden(case / "expected.txt", format_text(sorted_diagnostics(diags), text))


def test_every_pass_has_golden_cases() -> None:
    covered = {c.name.split("--")[0] for c in CASES}
    assert covered == set(PASS_BY_NAME)


def test_example_repository_is_clean() -> None:
    from intentc.pipeline import check
    result = check([str(Path(__file__).parents[1] / "intents")])
    assert [d for d in result.diagnostics] == []
    assert len(result.program.intents) >= 15
    assert len(result.program.tenants) >= 3
    assert len(result.program.datasets) >= 4
