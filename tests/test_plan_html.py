"""The plan page's bytes: the same inputs give the same page, repository strings stay text,
the script is the one its Content-Security-Policy names, and the labels' fitting.

What the page does in a browser (clicks, the filter, labels drawn whole) is
tests/test_plan_html_browser.py's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
from dataclasses import replace
from html.parser import HTMLParser

from benchmarks.plan_workload import SEED, build_cluster, build_dag_workload
from intentc import ir
from intentc.plan.html import (CSP, DARK, SCRIPT, fitted, label_colour, placement_cells, render_html, text_width,
                               waits_for)
from intentc.plan.jsonio import plan_from_json, plan_to_json
from intentc.plan.model import Plan, TenantShare, Unplaced
from intentc.plan.planner import make_plan

EVIL = '</script><script>alert(1)</script><img src=x onerror=alert(2)> & "quoted" \'too\' \u2028'


class _Tags(HTMLParser):
    """Every start tag and attribute, and the text of each <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _bench() -> tuple[Plan, ir.Topology, ir.Program]:
    topo = build_cluster(24, 8, 2, 1, 18)
    program = build_dag_workload(random.Random(SEED), 150)
    return make_plan(program, topo)[0], topo.topology, program


def test_the_same_inputs_give_the_same_bytes() -> None:
    plan, topology, program = _bench()
    after = waits_for(program)
    page = render_html(plan, topology, after)
    assert render_html(plan, topology, after) == page
    assert render_html(plan_from_json(plan_to_json(plan)), topology, after) == page
    shuffled = dict(reversed(list(after.items())))                 # order of the map and its lists
    shuffled = {k: tuple(reversed(v)) for k, v in shuffled.items()}
    assert render_html(plan, topology, shuffled) == page
    again, _ = make_plan(program, build_cluster(24, 8, 2, 1, 18))  # a fresh plan of the same inputs
    assert render_html(again, topology, waits_for(program)) == page


def test_waits_for_reads_after_and_datasets() -> None:
    def intent(name: str, after: tuple[str, ...] = (), consumes: tuple[str, ...] = (),
               produces: tuple[str, ...] = ()) -> ir.Intent:
        return ir.Intent(name, ir.Trigger("after" if after else "push", after=tuple(ir.Ref(a) for a in after)),
                         ir.Action("batch", "img"), ir.Context(ir.Ref("t")),
                         consumes=tuple(ir.Ref(c) for c in consumes), produces=tuple(ir.Ref(p) for p in produces))
    program = ir.Program(intents=(
        intent("tokenize", produces=("tokens",)),
        intent("pretrain", consumes=("tokens",), produces=("weights",)),
        intent("eval", after=("pretrain",), consumes=("weights", "tokens")),
        intent("loner", after=("nobody",)),
        intent("selfish", consumes=("own",), produces=("own",)),
    ))
    assert waits_for(program) == {"eval": ("pretrain", "tokenize"), "pretrain": ("tokenize",)}


def test_repository_strings_stay_text() -> None:
    plan, topology, _ = _bench()
    plan = replace(plan, topology=EVIL,
                   unplaced=(Unplaced("zz-evil", EVIL, EVIL, EVIL),),
                   tenants=(*plan.tenants, TenantShare(EVIL, 1, None, 0, 0)))
    node = replace(topology.nodes[0], name="n0", domains=(("zone", EVIL), ("rack", EVIL)))
    topology = replace(topology, nodes=(node, *topology.nodes[1:]))
    page = render_html(plan, topology, {"zz-evil": (EVIL,)})
    parsed = _Tags()
    parsed.feed(page)
    parsed.close()
    assert {tag for tag, _ in parsed.tags} <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "div", "b", "input", "label", "span", "i",
        "svg", "text", "line", "g", "rect", "table", "thead", "tbody", "tr", "th", "td", "script"}
    assert not any(name.startswith("on") for _, attrs in parsed.tags for name in attrs)
    assert [attrs for tag, attrs in parsed.tags if tag == "script"] == [{"type": "application/json", "id": "plan-deps"}, {}]
    data, code = parsed.scripts
    assert json.loads(data) == {"after": {"zz-evil": [EVIL]}}      # the JSON holds the string, whole
    assert code == SCRIPT
    text = "".join(parsed.text)
    assert text.count(EVIL) >= 6                                    # title, heading, tenant, unplaced cells, domains
    assert re.search(r'data-domain="([^"]*)"', page) and f'data-domain="{EVIL}"' not in page


def test_the_policy_lets_exactly_the_pages_script_run() -> None:
    plan, topology, program = _bench()
    page = render_html(plan, topology, waits_for(program))
    code = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert code == [SCRIPT]
    digest = base64.b64encode(hashlib.sha256(code[0].encode("utf-8")).digest()).decode("ascii")
    assert f"script-src 'sha256-{digest}';" in CSP and "default-src 'none'" in CSP
    assert page.count(f'content="{CSP}"') == 1 and page.index(CSP) < page.index("<script")


def test_placement_rows_are_the_text_outputs() -> None:
    plan, topology, program = _bench()
    page = render_html(plan, topology, waits_for(program))
    rows = placement_cells(plan)
    assert [r[0] for r in rows] == [p.intent for p in plan.placements]
    body = page.split('<table class="filterable placements">')[1].split("</table>")[0]
    assert body.count("<tr data-i=") == len(plan.placements)
    first = plan.placements[0]
    assert rows[0][:3] == (first.intent, first.tenant, first.sla)
    assert rows[0][8] == ", ".join(f"{a.node}[{','.join(map(str, a.gpus))}]" for a in first.allocations)


def test_labels_fit_or_are_cut_or_left_out() -> None:
    name = "score-candidates"
    assert fitted(name, text_width(name)) == name
    cut = fitted(name, text_width(name) * 0.7)
    assert cut is not None and cut.endswith("…") and name.startswith(cut[:-1]) and len(cut) - 1 >= len(name) / 2
    assert text_width(cut) <= text_width(name) * 0.7
    assert fitted(name, text_width(name) * 0.3) is None             # less than half would be left: nothing
    assert fitted("job-0558", text_width("job…")) is None
    assert text_width("mmmm") > text_width("iiii")
    assert label_colour("#4e79a7") == "#fff" and label_colour("#edc948") == DARK
    assert label_colour("hsl(200.0,60%,50%)") in ("#fff", DARK)
