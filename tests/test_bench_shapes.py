"""bench_shapes.py's repositories are what each shape says: no timings here, only
that every shape parses cleanly and reports exactly the findings it is meant to."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks.bench_shapes import SHAPES, Shape, generate
from intentc.pipeline import check

N = 40


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_reports_only_its_own_findings(shape: Shape, tmp_path: Path) -> None:
    repo = generate(tmp_path / "repo", shape, N)
    checked = check([str(repo)], use_cache=False)
    found = Counter(d.code for d in checked.diagnostics)
    assert len(checked.program.intents) == N
    if shape.findings == "E0501":
        assert found == Counter({"E0501": 1})           # one cycle through every intent
        (cycle,) = checked.diagnostics
        assert f"({N - 20} more)" in cycle.message
    elif shape.findings == "E0301":
        assert found == Counter({"E0301": N})           # one unknown tenant per intent
    else:
        assert not found


def test_the_shapes_differ_where_they_say() -> None:
    by = {s.name: s for s in SHAPES}
    assert by["fan-in"].after(0, 2000) == list(range(1, 1001))
    assert by["chain"].after(7, 10) == [6] and by["cycle"].after(0, 10) == [9]
    assert by["tenants"].tenants(10000) == 1000 and by["tenants"].tenant(25, 10000) == "team-2"
    assert by["pipeline"].consumes(5) == "out-4"
    assert by["deep-folders"].folder(3).count("/") == 30
