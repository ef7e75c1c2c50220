"""The timeline page in a real headless browser, at the benchmark's scale (2,000 jobs, 512 nodes).

Chromium renders the page (screenshot) and serialises the DOM it built
(`--dump-dom`): the bars in the DOM are checked against plan.json, so a
page that only looks right in a string comparison but does not parse, or
loses bars, fails.  Skipped where no `chromium` is installed.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload
from intentc.plan.html import render_html
from intentc.plan.planner import make_plan

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
                           *args], capture_output=True, text=True, timeout=180, check=False)


def _runs(gpus: list[int]) -> int:
    return sum(1 for i, g in enumerate(gpus) if i == 0 or gpus[i - 1] != g - 1)


def test_timeline_of_2000_jobs_renders_every_bar(tmp_path: Path) -> None:
    topo = build_cluster(368, 16, 8, 8, 18)
    program = build_dag_workload(random.Random(SEED), 2000)
    plan, _ = make_plan(program, topo)
    page = tmp_path / "plan.html"
    page.write_text(render_html(plan, topo.topology), encoding="utf-8")

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    bars = re.findall(r'<rect class="(t\d+) (p\d)[^"]*"[^>]*><title>([^<]*)</title>', dom)
    expected = sum(_runs(list(a.gpus)) for p in plan.placements for a in p.allocations)
    assert len(bars) == expected > 2000
    # every placed job has its bars, named in the tooltip; colours come from tenants and classes, not jobs
    named = {title.split(" · ")[0] for _, _, title in bars}
    assert named == {p.intent for p in plan.placements if p.allocations}
    assert len({cls for cls, _, _ in bars}) == len(plan.tenants)
    assert {sla for _, sla, _ in bars} <= {"p0", "p1", "p2", "p3"}
    assert 'id="by-sla"' in dom and 'id="by-tenant"' in dom

    shot = tmp_path / "plan.png"
    _chromium(tmp_path, "--window-size=1400,1000", f"--screenshot={shot}", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 1000)
    assert len(data) > 20_000            # a blank page compresses to a few kB
