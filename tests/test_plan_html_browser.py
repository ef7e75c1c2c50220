"""The timeline page in a real headless browser, at the benchmark's scale (2,000 jobs, 512 nodes).

Chromium renders the page (screenshot) and serialises the DOM it built
(`--dump-dom`): the bars in the DOM are checked against plan.json, so a
page that only looks right in a string comparison but does not parse, or
loses bars, fails.  The interactive parts (a click marking what an intent
waits for and what waits for it, the filter box) are driven by a probe: a
script added after the page's own (its hash added to the page's
Content-Security-Policy, which still has to let the page's script run) that
clicks, types and measures, and writes what it saw as JSON into the DOM that
`--dump-dom` prints.  Skipped where no `chromium` is installed.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import re
import shutil
import struct
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload
from intentc.graph import digraph
from intentc.pipeline import check
from intentc.plan.html import FONT, PAD, SCRIPT_HASH, render_html, text_width, waits_for
from intentc.plan.model import Plan, Unplaced
from intentc.plan.planner import make_plan
from intentc.topology.load import LoadedTopology, load_topology

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs a chromium binary (apt-get install chromium)")
SMALL = Path(__file__).parent / "golden" / "plan" / "small"


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
                           *args], capture_output=True, text=True, timeout=180, check=False)


def _probe(tmp: Path, page: str, script: str) -> Any:
    """Load `page` with `script` run after the page's own; what the script stored in `out` (JSON)."""
    body = f'(function () {{ var out = {{}};\n{script}\n' \
           'var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);\n' \
           'document.body.appendChild(pre); }());'
    digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
    assert page.count(f"script-src '{SCRIPT_HASH}'") == 1
    probed = page.replace(f"script-src '{SCRIPT_HASH}'", f"script-src '{SCRIPT_HASH}' 'sha256-{digest}'")
    probed = probed.replace("</body>", f"<script>{body}</script></body>")
    path = tmp / "probed.html"
    path.write_text(probed, encoding="utf-8")
    dom = _chromium(tmp, "--dump-dom", path.as_uri()).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run (or the page's script threw before it)"
    return json.loads(html.unescape(found.group(1)))


def _runs(gpus: list[int]) -> int:
    return sum(1 for i, g in enumerate(gpus) if i == 0 or gpus[i - 1] != g - 1)


class Big:
    """The benchmark's 2,000 jobs on 512 nodes, planned and rendered once for the module."""

    def __init__(self, tmp: Path) -> None:
        self.topo: LoadedTopology = build_cluster(368, 16, 8, 8, 18)
        self.program = build_dag_workload(random.Random(SEED), 2000)
        self.plan, _ = make_plan(self.program, self.topo)
        self.page = render_html(self.plan, self.topo.topology, waits_for(self.program))
        self.tmp = tmp


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Big:
    return Big(tmp_path_factory.mktemp("big"))


def test_timeline_of_2000_jobs_renders_every_bar(big: Big, tmp_path: Path) -> None:
    plan = big.plan
    page = tmp_path / "plan.html"
    page.write_text(big.page, encoding="utf-8")

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    groups = re.findall(r'<g class="bar (t\d+) (p\d)[^"]*" data-i="([^"]*)"><title>([^<]*)</title>(.*?)</g>', dom)
    expected = sum(_runs(list(a.gpus)) for p in plan.placements for a in p.allocations)
    assert sum(body.count("<rect") for *_, body in groups) == expected > 2000
    # every placed job has its bars, named in the tooltip; colours come from tenants and classes, not jobs
    assert [name for _, _, name, _, _ in groups] == [p.intent for p in plan.placements if p.allocations]
    assert all(title.split(" · ")[0] == name for _, _, name, title, _ in groups)
    assert len({cls for cls, *_ in groups}) == len(plan.tenants)
    assert {sla for _, sla, *_ in groups} <= {"p0", "p1", "p2", "p3"}
    assert 'id="by-sla"' in dom and 'id="by-tenant"' in dom
    # the page's script ran under its Content-Security-Policy: it counted the filterable rows
    assert f'<span id="shown">{len(plan.placements)} rows</span>' in dom

    shot = tmp_path / "plan.png"
    _chromium(tmp_path, "--window-size=1400,1000", f"--screenshot={shot}", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 1000)
    assert len(data) > 20_000            # a blank page compresses to a few kB


GEOMETRY = """
var num = function (el, a) { return parseFloat(el.getAttribute(a)); };
out.bars = [];
document.querySelectorAll(".tl .bar").forEach(function (g) {
  var labels = Array.from(g.querySelectorAll("svg"));
  g.querySelectorAll("rect").forEach(function (r) {
    var x = num(r, "x"), y = num(r, "y");
    var l = labels.find(function (s) { return num(s, "x") === x && num(s, "y") === y; });
    var t = l ? l.querySelector("text") : null;
    out.bars.push([g.getAttribute("data-i"), num(r, "width"), num(r, "height"),
                   t ? t.textContent : null, t ? t.getComputedTextLength() : null, l ? num(l, "width") : null]);
  });
});
out.groups = Array.from(document.querySelectorAll(".tl .dom"), function (g) {
  var band = g.querySelector("rect"), t = g.querySelector("text");
  return [g.getAttribute("data-level"), g.getAttribute("data-domain"), num(band, "y"),
          num(band, "y") + num(band, "height"), t ? t.textContent : null, t ? t.getComputedTextLength() : null,
          num(band, "width")];
});
out.nodes = Array.from(document.querySelectorAll(".tl svg.node"), function (s) {
  return [s.querySelector("text").textContent, num(s, "y")];
});
"""


@pytest.fixture(scope="module")
def geometry(big: Big) -> Any:
    return _probe(big.tmp, big.page, GEOMETRY)


def test_names_are_written_on_the_bars_that_hold_them(big: Big, geometry: Any) -> None:
    full = cut = 0
    for name, width, height, text, length, box in geometry["bars"]:
        fits = width - 2 * PAD >= text_width(name) and height >= FONT
        if text is None:
            assert not fits, name            # a bar wide and tall enough always carries its name
            continue
        assert height >= FONT and box == width
        if text == name:
            full += 1
        else:                                # cut where only a part fits, never a bare stub
            assert text.endswith("…") and name.startswith(text[:-1]) and len(text) - 1 >= max(3, len(name) / 2)
            cut += 1
        assert length <= width - PAD, (name, text, length, width)   # drawn whole inside its bar
    assert full > 200 and cut > 0
    labelled = sum(1 for b in geometry["bars"] if b[3] is not None)
    assert labelled < len(geometry["bars"])  # 1-GPU lanes and short jobs stay bare (the tooltip names them)


def test_rows_are_grouped_and_labelled_by_the_topologys_domains(big: Big, geometry: Any) -> None:
    topology = big.topo.topology
    levels = [lvl for lvl in topology.levels if lvl != "node"]
    gpu_nodes = [n for n in topology.nodes if n.gpu_count > 0]
    expected = {(lvl, n.domain(lvl)) for n in gpu_nodes for lvl in levels if n.domain(lvl) is not None}
    groups = geometry["groups"]
    assert len(groups) == len(expected)                       # one group per domain: its nodes are adjacent
    assert {(lvl, dom) for lvl, dom, *_ in groups} == expected
    assert {"zone", "rack", "nvlink"} == {lvl for lvl, _ in expected}
    for lvl, dom, top, bottom, text, length, width in groups:
        if bottom - top >= FONT:                              # tall enough: labelled with the domain's name
            assert text == dom and length <= width - PAD, (lvl, dom, text)
    rows = dict(geometry["nodes"])
    assert set(rows) == {n.name for n in gpu_nodes}           # every node labelled, in its domains' bands
    for n in gpu_nodes:
        for lvl in levels:
            around = [(dom, top, bottom) for level, dom, top, bottom, *_ in groups
                      if level == lvl and top <= rows[n.name] < bottom]
            assert [dom for dom, _, _ in around] == ([n.domain(lvl)] if n.domain(lvl) else []), (n.name, lvl)


CLICKS = """
var bar = function (name) { return document.querySelector('.tl .bar[data-i="' + name + '"]'); };
var state = function () {
  var names = function (sel) { return Array.from(document.querySelectorAll(sel), function (e) {
    return e.getAttribute("data-i"); }).sort(); };
  return {focus: document.querySelector(".tl svg.body").classList.contains("focus"),
          hl: names(".tl .bar.hl"), up: names(".tl .bar.up"), down: names(".tl .bar.down"),
          sel: names(".tl .bar.sel"), rows: names("tr.hl"),
          info: document.getElementById("selection").textContent};
};
var click = function (el) { el.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true})); };
out.clicks = {};
CHOSEN.forEach(function (name) {
  click(bar(name).querySelector("rect"));
  var on = state();
  click(bar(name).querySelector("rect"));
  out.clicks[name] = {on: on, again: state()};
});
click(bar(CHOSEN[0]).querySelector("rect"));
document.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
out.escape = state();
click(document.querySelector('tr[data-i="' + CHOSEN[1] + '"] td'));
out.row = state();
click(document.querySelector(".tl svg.body"));
out.background = state();
"""


def test_a_click_marks_exactly_what_the_intent_waits_for_and_what_waits_for_it(big: Big) -> None:
    g = digraph.dependencies(big.program)
    barred = {p.intent for p in big.plan.placements if p.allocations}
    # the intents with the most upstream and downstream (deepest pipelines), and one on its own
    ranked = sorted(barred, key=lambda n: (-len(nx.ancestors(g, n)) * len(nx.descendants(g, n)), n))
    alone = min(n for n in barred if not nx.ancestors(g, n) and not nx.descendants(g, n))
    chosen = [*ranked[:4], max(barred, key=lambda n: (len(nx.descendants(g, n)), n)), alone]
    assert nx.ancestors(g, chosen[0]) and nx.descendants(g, chosen[0])
    seen = _probe(big.tmp, big.page, CLICKS.replace("CHOSEN", json.dumps(chosen)))
    for name in chosen:
        up, down = nx.ancestors(g, name), nx.descendants(g, name)
        on, again = seen["clicks"][name]["on"], seen["clicks"][name]["again"]
        assert on["focus"] and on["sel"] == [name]
        assert set(on["up"]) == up & barred and set(on["down"]) == down & barred, name
        assert set(on["hl"]) == ({name} | up | down) & barred
        assert set(on["rows"]) == {name} | up | down         # the table rows too, CPU-only steps included
        assert on["info"].startswith(f"{name} waits for {len(up) or 'nothing'}")
        assert not again["focus"] and again["hl"] == [] and again["rows"] == []   # the same click clears
    assert not seen["escape"]["focus"] and seen["escape"]["hl"] == []
    row = chosen[1]
    assert seen["row"]["sel"] == [row]
    assert set(seen["row"]["hl"]) == ({row} | nx.ancestors(g, row) | nx.descendants(g, row)) & barred
    assert not seen["background"]["focus"] and seen["background"]["hl"] == []


FILTER = """
var box = document.getElementById("filter");
var visible = function () {
  return Array.from(document.querySelectorAll("table.filterable tbody tr"), function (r) {
    return r.hidden ? null : r.closest("table").classList[1] + ":" + r.getAttribute("data-i");
  }).filter(function (x) { return x !== null; });
};
out.filtered = QUERIES.map(function (q) {
  box.value = q;
  box.dispatchEvent(new Event("input", {bubbles: true}));
  return {rows: visible(), shown: document.getElementById("shown").textContent};
});
"""


def test_the_filter_box_filters_the_placements_by_substring(big: Big) -> None:
    plan = big.plan
    node = "hgx-017"
    tenant = plan.tenants[0].tenant
    queries = [node, tenant.upper(), "  " + node + "  ", "no-such-thing", ""]
    seen = _probe(big.tmp, big.page, FILTER.replace("QUERIES", json.dumps(queries)))["filtered"]
    on_node = [f"placements:{p.intent}" for p in plan.placements if node in p.nodes]
    assert on_node and seen[0]["rows"] == on_node
    assert seen[0]["shown"] == f"{len(on_node)} of {len(plan.placements)} rows"
    of_tenant = [f"placements:{p.intent}" for p in plan.placements if p.tenant == tenant]
    assert seen[1]["rows"] == of_tenant                      # case does not matter
    assert seen[2]["rows"] == on_node                        # nor blanks round the query
    assert seen[3]["rows"] == []
    assert len(seen[4]["rows"]) == len(plan.placements)      # an empty box shows every row


def _small() -> tuple[Plan, LoadedTopology, dict[str, tuple[str, ...]]]:
    topo, _ = load_topology(str(SMALL / "cluster.yaml"))
    assert topo is not None
    program = check([str(SMALL / "intents.yaml")]).program
    return make_plan(program, topo)[0], topo, waits_for(program)


def test_the_filter_box_filters_the_unplaced_intents_too(tmp_path: Path) -> None:
    plan, topo, after = _small()
    assert plan.unplaced
    reason = plan.unplaced[0].reason
    seen = _probe(tmp_path, render_html(plan, topo.topology, after),
                  FILTER.replace("QUERIES", json.dumps([reason])))["filtered"][0]
    hits = {f"unplaced:{u.intent}" for u in plan.unplaced if reason in f"{u.intent} {u.tenant} {u.reason} {u.message}"}
    assert {r for r in seen["rows"] if r.startswith("unplaced:")} == hits != set()


def test_hostile_strings_stay_text_in_the_browser(tmp_path: Path) -> None:
    plan, topo, after = _small()
    evil = '<img src=x onerror="document.title=\'pwned\'"></script><script>document.title="pwned"</script>'
    plan = replace(plan, unplaced=(*plan.unplaced, Unplaced("zz-evil", evil, evil, evil)))
    after = {**after, "zz-evil": (evil,)}
    seen = _probe(tmp_path, render_html(plan, topo.topology, after), """
out.title = document.title;
out.images = document.querySelectorAll("img").length;
out.scripts = document.querySelectorAll("script").length;
out.cells = Array.from(document.querySelectorAll('tr[data-i="zz-evil"] td'), function (c) { return c.textContent; });
document.querySelector('tr[data-i="zz-evil"] td').click();
out.info = document.getElementById("selection").textContent;
""")
    assert seen["title"] == f"intentc plan: {plan.topology}"
    assert seen["images"] == 0 and seen["scripts"] == 3       # the data, the page's script, the probe
    assert seen["cells"] == ["zz-evil", evil, evil, evil]
    assert seen["info"].startswith(f"zz-evil waits for 1 ({evil})")
