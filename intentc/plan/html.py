"""The plan as one self-contained HTML page (`intentc plan -o html`).

A timeline: one row per node, one lane per GPU, plan time left to right,
and a bar for each intent over the interval it holds those GPUs (open-ended
`serve` bars run to the right edge, dashed).  Rows are grouped by the
topology's domains (outermost level first: zone, rack, NVLink domain ...),
each group labelled in its own column at the left.  Bars are coloured by
*tenant*, or by SLA class with the switch at the top (CSS only), never one
hue per job: at 2,000 jobs a hue per job is noise, while "which tenant holds
this rack at hour 3" is what a reader asks.  A bar long and tall enough
carries its intent's name (cut with "…" where only part fits, left out on
narrow bars); every bar has a tooltip (intent, tenant, class, GPUs, start,
end).

Below the timeline are the placements and the unplaced intents as in the
text output, with a box that filters their rows by substring.  A click on a
bar (or a table row) marks everything that intent waits for and everything
that waits for it, transitively (`after` and datasets, embedded as JSON),
and dims the rest; a second click, one on the background or Escape clears it.  One listener per
table and timeline (event delegation), none per bar.

Inline CSS, SVG and one inline script only, allowed by a Content-Security-
Policy that names the script's hash and fetches nothing: the page works from
a CI artifact or an air-gapped laptop, and it is as deterministic as
plan.json (colours come from the tenant's rank in name order; everything
else from the plan's sorted records).  Every string from the repository is
escaped, in text, attributes and the JSON alike.
"""

from __future__ import annotations

import base64
import colorsys
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from intentc import ir
from intentc.graph.dependencies import links, producers, unique_intents
from intentc.ir.duration import format_duration
from intentc.plan.model import Plan
from intentc.plan.text import plan_time, gpus_cell, links_cell, scope_cell   # the text output's cells, word for word

MAX_LANE = 6        # px per GPU lane on a small cluster ...
MIN_LANE = 3        # ... and on a big one
LANES_H = 900       # px the lanes aim to fill, between those bounds
NODE_GAP = 2        # px between nodes
GROUP_GAP = 4       # px more where an inner domain (rack, NVLink domain ...) changes
OUTER_GAP = 8       # px more where the outermost domain changes
PLOT_W = 1200       # px for the time axis
AXIS_H = 22
FONT = 10           # px, the timeline's text
PAD = 3             # px of a bar or band left free either side of its label
SLA_COLOURS = {"P0": "#dc2626", "P1": "#f59e0b", "P2": "#2563eb", "P3": "#9ca3af"}
# Distinct, colour-blind-friendlier hues for the first tenants (Tableau 10), then golden-angle steps.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
DARK = "#111827"

# Advance widths (1/1000 em) of DejaVu Sans, among the widest sans-serif faces a browser
# falls back to: a label measured with these fits in any narrower face too (and a
# <svg> round each label clips it where a face is wider still).
_ADVANCE = {
    **dict(zip("abcdefghijklmnopqrstuvwxyz",
               (613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635,
                411, 521, 392, 634, 592, 818, 592, 592, 525), strict=True)),
    **dict.fromkeys("0123456789", 636),
    "-": 361, ".": 318, "_": 500, " ": 318, "/": 337, "…": 1000,
}
_WIDE = 1000        # CJK and other full-width characters
_OTHER = 780        # capitals and the rest (DejaVu's widest capital is 'W' at 989; most are 600-770)

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.meta{color:#4b5563;margin-bottom:16px}
.metrics{display:flex;flex-wrap:wrap;gap:12px}
.metric{border:1px solid #d1d5db;border-radius:6px;padding:6px 10px}
.metric b{display:block;font-size:18px}
.legends{display:inline-block;margin-left:18px} .legend{display:inline-flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
.hint{color:#4b5563;margin:4px 0 8px;min-height:1.4em}
.tl{overflow:auto;max-height:80vh;border:1px solid #e5e7eb}
.tl svg{display:block} .tl text{font-size:10px;fill:#374151}
.tl .axis{position:sticky;top:0;z-index:1;background:#fff;border-bottom:1px solid #e5e7eb}
.tl .axis .col{font-weight:600;fill:#111827}
.tl .grid{stroke:#e5e7eb} .tl .sep{stroke:#6b7280} .tl .sep2{stroke:#d1d5db}
.tl .band{fill:#f3f4f6} .tl .band.odd{fill:#e5e7eb} .tl .band.own{fill:#f9fafb} .tl .dom text{fill:#111827}
.tl .node{fill:#374151}
.tl .bar{cursor:pointer} .tl .bar text{fill:#fff;pointer-events:none} .tl svg svg text{dominant-baseline:central}
.tl .open rect{stroke:#111827;stroke-dasharray:2 2;stroke-width:.5}
.tl svg.focus .bar{opacity:.12} .tl svg.focus .bar.hl{opacity:1}
.tl .bar.sel rect{stroke:#111827;stroke-width:2;stroke-dasharray:none}
.tl .bar.up rect,.tl .bar.down rect{stroke:#111827;stroke-width:1}
.tl .bar.down rect{stroke-dasharray:3 2}
.by-sla{display:none} #by-sla:checked~.legends .by-sla{display:inline-flex} #by-sla:checked~.legends .by-tenant{display:none}
.filter{margin:8px 0} .filter input{font:inherit;width:28em;padding:3px 6px}
.filter span{color:#4b5563;margin-left:8px}
table{border-collapse:collapse} td,th{border-bottom:1px solid #e5e7eb;padding:3px 8px;text-align:left;vertical-align:top}
.placements td:nth-child(n+4):nth-child(-n+8){text-align:right;font-variant-numeric:tabular-nums}
tr[data-i]{cursor:pointer} tr.hl{background:#fef3c7} tr.sel{background:#fde68a}
"""

# The page's one script: no fetch, no eval, no innerHTML (names reach the page through textContent).
SCRIPT = """(function () {
"use strict";
var after = JSON.parse(document.getElementById("plan-deps").textContent).after;
var before = {};
Object.keys(after).forEach(function (v) {
  after[v].forEach(function (u) { (before[u] = before[u] || []).push(v); });
});
var svg = document.querySelector(".tl svg.body");
var info = document.getElementById("selection");
var idle = info.textContent;
var els = {};
document.querySelectorAll(".tl .bar, tr[data-i]").forEach(function (el) {
  var name = el.getAttribute("data-i");
  (els[name] = els[name] || []).push(el);
});
var chosen = null;
var marked = [];
function reach(start, edges) {
  var seen = new Set(), todo = [start];
  while (todo.length) {
    (edges[todo.pop()] || []).forEach(function (m) {
      if (m !== start && !seen.has(m)) { seen.add(m); todo.push(m); }
    });
  }
  return seen;
}
function mark(name, cls) {
  (els[name] || []).forEach(function (el) { el.classList.add("hl", cls); marked.push(el); });
}
function clear() {
  marked.forEach(function (el) { el.classList.remove("hl", "sel", "up", "down"); });
  marked = [];
  chosen = null;
  svg.classList.remove("focus");
  info.textContent = idle;
}
function names(set) {
  var all = Array.from(set).sort();
  if (!all.length) { return "nothing"; }
  return all.length + " (" + all.slice(0, 8).join(", ") + (all.length > 8 ? ", \\u2026" : "") + ")";
}
function select(name) {
  clear();
  chosen = name;
  var up = reach(name, after), down = reach(name, before);
  up.forEach(function (n) { mark(n, "up"); });
  down.forEach(function (n) { mark(n, "down"); });
  mark(name, "sel");
  svg.classList.add("focus");
  info.textContent = name + " waits for " + names(up) + "; waiting for it: " + names(down) +
    ". Click it again or press Esc to clear.";
}
function toggle(el) {
  var name = el ? el.getAttribute("data-i") : null;
  if (name === null || name === chosen) { clear(); } else { select(name); }
}
svg.addEventListener("click", function (e) { toggle(e.target.closest(".bar")); });
document.querySelectorAll("table.filterable").forEach(function (t) {
  t.addEventListener("click", function (e) {
    var row = e.target.closest("tr[data-i]");
    if (row) { toggle(row); }
  });
});
document.addEventListener("keydown", function (e) {
  if (e.key === "Escape" && chosen !== null) { clear(); }
});
var box = document.getElementById("filter");
var shown = document.getElementById("shown");
var rows = Array.from(document.querySelectorAll("table.filterable tbody tr"));
var texts = rows.map(function (r) {
  return Array.from(r.cells, function (c) { return c.textContent; }).join("\\n").toLowerCase();
});
function filter() {
  var q = box.value.trim().toLowerCase(), n = 0;
  rows.forEach(function (r, i) {
    var hide = q !== "" && texts[i].indexOf(q) < 0;
    r.hidden = hide;
    if (!hide) { n += 1; }
  });
  shown.textContent = q === "" ? rows.length + " rows" : n + " of " + rows.length + " rows";
}
box.addEventListener("input", filter);
filter();
}());
"""
SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
CSP = (f"default-src 'none'; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}'; "
       "base-uri 'none'; form-action 'none'")


def waits_for(program: ir.Program) -> dict[str, tuple[str, ...]]:
    """Per intent, the intents it waits for (`after` and the producers of what it consumes),
    sorted; intents that wait for nothing are left out.  What the page's click highlights."""
    intents = unique_intents(program)
    produced, _ = producers(intents)       # E0503 is check's to report
    out: dict[str, set[str]] = {}
    for u, v in links(intents, produced):
        if u != v:
            out.setdefault(v, set()).add(u)
    return {v: tuple(sorted(us)) for v, us in sorted(out.items())}


def tenant_colours(plan: Plan) -> dict[str, str]:
    """A colour per tenant, fixed by name order."""
    names = sorted({t.tenant for t in plan.tenants} | {p.tenant for p in plan.placements})
    return {t: PALETTE[i] if i < len(PALETTE) else f"hsl({(i * 137.508) % 360:.1f},60%,50%)"
            for i, t in enumerate(names)}


def _rgb(colour: str) -> tuple[float, float, float]:
    if colour.startswith("#"):
        return (int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255)
    h, s, lum = (float(x.rstrip("%")) for x in colour[4:-1].split(","))
    return colorsys.hls_to_rgb(h / 360, lum / 100, s / 100)


def label_colour(fill: str) -> str:
    """White or dark text on `fill`, whichever contrasts more (WCAG relative luminance)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in _rgb(fill)]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#fff" if 1.05 / (lum + 0.05) >= (lum + 0.05) / 0.0616 else DARK


def text_width(text: str, size: float = FONT) -> float:
    """A generous estimate of `text`'s width in px at `size` px."""
    return sum(_ADVANCE.get(c, _WIDE if ord(c) >= 0x2E80 else _OTHER) for c in text) * size / 1000


def fitted(text: str, width: float, size: float = FONT) -> str | None:
    """`text` if it fits in `width` px, else its longest prefix with "…" that does if that keeps
    at least half of it (and 3 characters), else None: "job…" of "job-0558" tells nothing."""
    if text_width(text, size) <= width:
        return text
    room = width - text_width("…", size)
    used = 0.0
    for i, c in enumerate(text):
        used += text_width(c, size)
        if used > room:
            return text[:i] + "…" if i >= max(3, len(text) / 2) else None
    return text


def _runs(gpus: tuple[int, ...]) -> list[tuple[int, int]]:
    """Contiguous runs of GPU indices as (first, length), so a 4-GPU set is one bar, not four."""
    out: list[tuple[int, int]] = []
    for g in gpus:
        if out and out[-1][0] + out[-1][1] == g:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((g, 1))
    return out


def _ticks(horizon: int) -> list[int]:
    """About eight round tick marks over [0, horizon]."""
    steps = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
    step = next((s for s in steps if horizon / s <= 8), steps[-1] * max(1, horizon // (steps[-1] * 8) + 1))
    return list(range(0, horizon + 1, step))


def _style(tenants: dict[str, str]) -> str:
    """One class per tenant and per SLA class; the switch swaps which one fills the bars (and
    which colour their labels take)."""
    rules = []
    for i, colour in enumerate(tenants.values()):
        rules.append(f".tl .t{i}{{fill:{colour}}}")
        if label_colour(colour) != "#fff":
            rules.append(f".tl .t{i} text{{fill:{label_colour(colour)}}}")
    for sla, colour in SLA_COLOURS.items():
        rules.append(f"#by-sla:checked~.tl .{sla.lower()}{{fill:{colour}}}")
        rules.append(f"#by-sla:checked~.tl .{sla.lower()} text{{fill:{label_colour(colour)}}}")
    return "\n".join(rules)


def _label(x: float, y: float, width: float, height: float, text: str, cls: str = "") -> str:
    """`text` (fitted to `width`) in a box that clips it, at the box's left; "" if none fits."""
    shown = fitted(text, width - 2 * PAD)
    if shown is None or height < FONT:
        return ""
    attr = f' class="{cls}"' if cls else ""
    return (f'<svg{attr} x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}">'
            f'<text x="{PAD}" y="{height / 2:.1f}">{escape(shown)}</text></svg>')


@dataclass(frozen=True, slots=True)
class _Group:
    level: str
    domain: str
    top: float
    bottom: float
    nodes: int
    gpus: int


@dataclass(frozen=True, slots=True)
class _Rows:
    """Where each node's lanes are, the domain groups and the gaps between them."""

    lane: int
    top: dict[str, int]               # node → y of its first lane
    tall: dict[str, int]              # node → px of its lanes
    groups: list[_Group]
    seps: list[tuple[int, str]]       # (y, "sep" outermost change | "sep2" inner change)
    height: int


def _levels(topology: ir.Topology) -> list[str]:
    """The levels above the node that some GPU node has a domain of, outermost first."""
    return [lvl for lvl in topology.levels
            if lvl != "node" and any(n.domain(lvl) for n in topology.nodes if n.gpu_count > 0)]


def _rows(topology: ir.Topology) -> _Rows:
    levels = _levels(topology)
    nodes = sorted((n for n in topology.nodes if n.gpu_count > 0),
                   key=lambda n: (tuple(n.domain(lvl) or "" for lvl in levels), n.name))
    gpus = sum(n.gpu_count for n in nodes)
    lane = max(MIN_LANE, min(MAX_LANE, LANES_H // max(gpus, 1)))
    top: dict[str, int] = {}
    tall: dict[str, int] = {}
    seps: list[tuple[int, str]] = []
    # per level: the open group as (its domain, top, nodes, gpus)
    open_: list[tuple[str, int, int, int] | None] = [None] * len(levels)
    groups: list[_Group] = []
    y = AXIS_H // 2
    previous: tuple[str | None, ...] | None = None
    last_bottom = y

    def close(k: int) -> None:
        g = open_[k]
        if g is not None:
            groups.append(_Group(levels[k], g[0], g[1], last_bottom, g[2], g[3]))
            open_[k] = None

    for n in nodes:
        path = tuple(n.domain(lvl) for lvl in levels)
        if previous is not None:
            changed = next((k for k in range(len(levels)) if path[k] != previous[k]), None)
            if changed is not None:
                for k in range(changed, len(levels)):
                    close(k)
                gap = OUTER_GAP if changed == 0 else GROUP_GAP
                seps.append((y + gap // 2, "sep" if changed == 0 else "sep2"))
                y += gap
        for k, dom in enumerate(path):
            if dom is None:
                continue
            g = open_[k]
            open_[k] = (dom, y, 1, n.gpu_count) if g is None else (g[0], g[1], g[2] + 1, g[3] + n.gpu_count)
        top[n.name] = y
        tall[n.name] = n.gpu_count * lane
        last_bottom = y + n.gpu_count * lane
        y = last_bottom + NODE_GAP
        previous = path
    for k in range(len(levels)):
        close(k)
    groups.sort(key=lambda g: (levels.index(g.level), g.top))
    return _Rows(lane, top, tall, groups, seps, y + 2)


def _columns(topology: ir.Topology) -> list[tuple[str, float, float]]:
    """The label columns left of the plot: (level, x, width), outermost level first, nodes last."""
    levels = [*_levels(topology), "node"]
    cols = []
    x = 2.0
    for lvl in levels:
        names = [n.name if lvl == "node" else (n.domain(lvl) or "") for n in topology.nodes if n.gpu_count > 0]
        widest = max([text_width(s) for s in names] + [text_width(lvl)])
        width = round(min(max(widest + 2 * PAD + 4, 36), 150))
        cols.append((lvl, x, float(width)))
        x += width + 2
    return cols


def _bars(plan: Plan, rows: _Rows, index: dict[str, int], left: float, scale: float, horizon: int) -> str:
    out = []
    for p in plan.placements:
        if not p.allocations:
            continue
        x = left + p.start_s * scale
        end = horizon if p.end_s is None else p.end_s
        w = max((end - p.start_s) * scale, 0.8)
        until = "open-ended" if p.end_s is None else "+" + format_duration(p.end_s)
        tip = escape(f"{p.intent} · {p.tenant} · {p.sla} · {p.gpu_count} GPUs · "
                     f"+{format_duration(p.start_s)} → {until}")
        cls = f"bar t{index[p.tenant]} {p.sla.lower()}" + (" open" if p.end_s is None else "")
        rects, labels = [], []
        for a in p.allocations:
            if a.node not in rows.top:
                continue
            for first, length in _runs(a.gpus):
                y = rows.top[a.node] + first * rows.lane
                h = length * rows.lane
                rects.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{h}"/>')
                labels.append(_label(x, y, w, h, p.intent))
        if rects:
            out.append(f'<g class="{escape(cls)}" data-i="{escape(p.intent)}"><title>{tip}</title>'
                       f'{"".join(rects)}{"".join(labels)}</g>')
    return "".join(out)


def _timeline(plan: Plan, topology: ir.Topology, tenants: dict[str, str]) -> str:
    rows = _rows(topology)
    cols = _columns(topology)
    left = cols[-1][1] + cols[-1][2] + 4
    width = left + PLOT_W + 8
    finite = [p.end_s for p in plan.placements if p.end_s is not None]
    horizon = max([*finite, *(p.start_s for p in plan.placements), 1])
    horizon += max(horizon // 20, 1) if any(p.end_s is None for p in plan.placements if p.allocations) else 0
    scale = PLOT_W / horizon
    axis, grid = [], []
    for lvl, x, _ in cols:
        axis.append(f'<text class="col" x="{x + PAD:.1f}" y="15">{escape(lvl)}</text>')
    for t in _ticks(horizon):
        x = left + t * scale
        axis.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{AXIS_H - 4}" y2="{AXIS_H}"/>'
                    f'<text x="{x + 2:.1f}" y="15">{"0" if t == 0 else "+" + format_duration(t)}</text>')
        grid.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{rows.height}"/>')
    colx = {lvl: (x, w) for lvl, x, w in cols}
    parts = []
    for y, cls in rows.seps:
        parts.append(f'<line class="{cls}" x1="{colx[cols[0][0]][0] if cls == "sep" else left - 2:.1f}" '
                     f'x2="{width:.1f}" y1="{y}" y2="{y}"/>')
    parity: dict[str, int] = {}
    for g in rows.groups:
        x, w = colx[g.level]
        odd = parity.get(g.level, 0)
        parity[g.level] = 1 - odd
        h = g.bottom - g.top
        tip = escape(f"{g.level} {g.domain} · {g.nodes} node{'s' if g.nodes != 1 else ''} · {g.gpus} GPUs")
        # a one-node domain named after its node (an HGX board's NVLink domain) is labelled once, as the node
        own = g.nodes == 1 and rows.top.get(g.domain) == g.top
        label = "" if own else _label(x, g.top, w, min(h, 2 * FONT), g.domain)
        band = "band own" if own else "band odd" if odd else "band"
        parts.append(f'<g class="dom" data-level="{escape(g.level)}" data-domain="{escape(g.domain)}">'
                     f'<title>{tip}</title><rect class="{band}" x="{x:.1f}" y="{g.top:.1f}" '
                     f'width="{w:.1f}" height="{h:.1f}"/>{label}</g>')
    nx, nw = colx["node"]
    for name, y in rows.top.items():
        parts.append(_label(nx, y, nw, min(rows.tall[name], FONT + 6), name, "node"))
    index = {t: i for i, t in enumerate(tenants)}
    bars = _bars(plan, rows, index, left, scale, horizon)
    return (f'<svg class="axis" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{AXIS_H}" '
            f'aria-hidden="true">{"".join(axis)}</svg>'
            f'<svg class="body" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{rows.height}" '
            f'role="img" aria-label="GPU timeline">{"".join(grid)}{"".join(parts)}{bars}</svg>')


def _json_for_script(data: object) -> str:
    """JSON that cannot end its <script> element or open markup inside it, whatever the strings hold."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def placement_cells(plan: Plan) -> list[tuple[str, ...]]:
    """The placements table's cells, row by row: the text output's columns and wording."""
    wave_of = {name: i for i, wave in enumerate(plan.waves) for name in wave}
    rows: list[tuple[str, ...]] = []
    for p in plan.placements:
        wave = wave_of.get(p.intent)
        rows.append((p.intent, p.tenant, p.sla, "-" if wave is None else str(wave), plan_time(p.start_s),
                     "open" if p.end_s is None else plan_time(p.end_s),
                     format_duration(p.queued_s) if p.queued_s else "-", str(p.gpu_count),
                     gpus_cell(p), scope_cell(p), links_cell(p)))
    return rows


PLACEMENT_COLUMNS = ("intent", "tenant", "sla", "wave", "start", "end", "queued", "GPUs", "nodes [GPU indices]",
                     "shared domain", "interconnect")   # 4th to 8th right-aligned (CSS)


def _table(cls: str, columns: Sequence[str], rows: Sequence[tuple[str, ...]]) -> str:
    """A table whose rows carry their intent (the first cell) for the script.  The cells' and rows'
    end tags are left out, as HTML allows: the browser builds the same table, and at 2,000
    placements that is 120 kB less."""
    head = "".join(f"<th>{escape(c)}" for c in columns)
    body = "".join(f'<tr data-i="{escape(row[0])}">' + "".join(f"<td>{escape(v)}" for v in row) for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</thead><tbody>{body}</tbody></table>'


def render_html(plan: Plan, topology: ir.Topology, after: Mapping[str, Sequence[str]] | None = None) -> str:
    """The page for `plan` on `topology`.  `after`: per intent what it waits for (`waits_for`);
    without it a click marks only the intent clicked."""
    tenants = tenant_colours(plan)
    m = plan.metrics
    used = sum(1 for p in plan.placements if p.allocations)
    metric_items = (
        ("makespan", format_duration(m.makespan_s)),
        ("critical path", format_duration(m.critical_path_s)),
        ("GPU-hours", f"{m.gpu_seconds / 3600:.1f}"),
        ("peak GPUs held", f"{m.gpus_allocated} / {m.gpus_total}"),
        ("queued intents", str(m.queued)),
        ("idle GPUs on used nodes at start", str(m.idle_gpus_on_used_nodes)),
        ("jobs spanning NVLink domains", str(m.jobs_spanning_nvlink_domains)),
        ("unplaced intents", str(len(plan.unplaced))),
    )
    tenant_legend = "".join(f'<span><i class="swatch" style="background:{c}"></i>{escape(t)}</span>'
                            for t, c in tenants.items())
    sla_legend = "".join(f'<span><i class="swatch" style="background:{c}"></i>{sla}</span>'
                         for sla, c in SLA_COLOURS.items())
    tenant_rows = "".join(f"<tr><td>{escape(t.tenant)}</td><td>{t.weight}</td>"
                          f"<td>{'-' if t.quota_gpus is None else t.quota_gpus}</td>"
                          f"<td>{t.requested_gpus}</td><td>{t.allocated_gpus}</td>"
                          f"<td>{t.gpu_seconds / 3600:.1f}</td></tr>" for t in plan.tenants)
    deps = {name: sorted(set(us)) for name, us in sorted((after or {}).items()) if us}
    basis = "live cluster" if plan.basis == "live" else "empty-cluster preview"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>intentc plan: {escape(plan.topology)}</title>",
        f"<style>{CSS}{_style(tenants)}</style></head><body>",
        f"<h1>Plan for topology {escape(plan.topology)}</h1>",
        (f'<div class="meta">seed {plan.seed} · {basis} · {len(plan.waves)} waves · {used} GPU jobs placed · '
         "times are plan time, from the moment the first wave is applied</div>"),
        '<div class="metrics">' + "".join(f'<div class="metric"><b>{escape(v)}</b>{escape(k)}</div>'
                                          for k, v in metric_items) + "</div>",
        "<h2>GPU timeline</h2>",
        ('<input type="radio" name="colour" id="by-tenant" checked><label for="by-tenant">colour by tenant</label> '
         '<input type="radio" name="colour" id="by-sla"><label for="by-sla">colour by SLA class</label>'),
        (f'<div class="legends"><div class="legend by-tenant">{tenant_legend}</div>'
         f'<div class="legend by-sla">{sla_legend}</div></div>'),
        ('<div class="hint" id="selection">Click a bar or a table row to mark what that intent waits for '
         "(solid outline) and what waits for it (dashed), the rest dimmed; click it again or press Esc "
         "to clear.</div>"),
        f'<div class="tl">{_timeline(plan, topology, tenants)}</div>',
        "<h2>Placements</h2>",
        ('<div class="filter"><input type="search" id="filter" placeholder="filter rows: intent, tenant, node, '
         'reason…" aria-label="filter the placements and unplaced rows"><span id="shown"></span></div>'),
        _table("filterable placements", PLACEMENT_COLUMNS, placement_cells(plan)),
    ]
    if plan.unplaced:
        parts += ["<h2>Unplaced</h2>",
                  _table("filterable unplaced", ("intent", "tenant", "reason", "why"),
                         [(u.intent, u.tenant, u.reason, u.message) for u in plan.unplaced])]
    if plan.batches:
        rows = "".join(f"<tr><td>{escape(b.intent)}</td><td>{b.size}</td>"
                       f"<td>{'-' if b.max is None else b.max}</td>"
                       f"<td>{'-' if b.estimate is None else b.estimate}</td>"
                       f"<td>{escape(b.derivation)}</td></tr>" for b in plan.batches)
        parts += ["<h2>Batch sizes (batch: auto)</h2>",
                  "<table><tr><th>intent</th><th>batch</th><th>max</th><th>estimate</th>"
                  f"<th>derivation</th></tr>{rows}</table>"]
    parts += ["<h2>Tenants</h2>",
              ("<table><tr><th>tenant</th><th>weight</th><th>quota</th><th>requested</th>"
               f"<th>peak GPUs</th><th>GPU-hours</th></tr>{tenant_rows}</table>"),
              f'<script type="application/json" id="plan-deps">{_json_for_script({"after": deps})}</script>',
              f"<script>{SCRIPT}</script>",
              "</body></html>"]
    return "\n".join(parts) + "\n"
