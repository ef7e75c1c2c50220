"""The plan as one self-contained HTML page (`intentc plan --format html`).

A timeline: one row per node, one lane per GPU, plan time left to right,
and a bar for each intent over the interval it holds those GPUs (open-ended
`serve` bars run to the right edge, dashed).  Nodes are grouped by their
domains (outermost level first).  Bars are coloured by *tenant*, or by SLA
class with the switch at the top (CSS only), never one hue per job: at
2,000 jobs a hue per job is noise, while "which tenant holds this rack at
hour 3" is what a reader asks.  Every bar has a tooltip (intent, tenant,
class, GPUs, start, end).

Inline CSS and SVG only: no script, font or stylesheet is fetched, so the
page works from a CI artifact or an air-gapped laptop, and it is as
deterministic as plan.json (colours come from the tenant's rank in name order).
"""

from __future__ import annotations

from html import escape

from intentc import ir
from intentc.duration import format_duration
from intentc.plan.model import Plan

LANE = 3            # px per GPU lane
NODE_GAP = 2        # px between nodes
LABEL_W = 120       # px for node names
PLOT_W = 1000       # px for the time axis
AXIS_H = 22
SLA_COLOURS = {"P0": "#dc2626", "P1": "#f59e0b", "P2": "#2563eb", "P3": "#9ca3af"}
# Distinct, colour-blind-friendlier hues for the first tenants (Tableau 10), then golden-angle steps.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.meta{color:#4b5563;margin-bottom:16px}
.metrics{display:flex;flex-wrap:wrap;gap:12px}
.metric{border:1px solid #d1d5db;border-radius:6px;padding:6px 10px}
.metric b{display:block;font-size:18px}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
.switch{margin:8px 0} .switch label{margin-right:14px}
.tl{overflow:auto;max-height:80vh;border:1px solid #e5e7eb}
.tl svg{display:block} .tl text{font-size:10px;fill:#374151}
.tl .grid{stroke:#e5e7eb} .tl .sep{stroke:#9ca3af} .tl .open{stroke:#111827;stroke-dasharray:2 2;stroke-width:.5}
.by-sla{display:none} #by-sla:checked~.legends .by-sla{display:flex} #by-sla:checked~.legends .by-tenant{display:none}
table{border-collapse:collapse} td,th{border-bottom:1px solid #e5e7eb;padding:3px 8px;text-align:left}
"""


def tenant_colours(plan: Plan) -> dict[str, str]:
    """A colour per tenant, fixed by name order."""
    names = sorted({t.tenant for t in plan.tenants} | {p.tenant for p in plan.placements})
    return {t: PALETTE[i] if i < len(PALETTE) else f"hsl({(i * 137.508) % 360:.1f},60%,50%)"
            for i, t in enumerate(names)}


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


def _style(plan: Plan, tenants: dict[str, str]) -> str:
    """One class per tenant and per SLA class; the switch swaps which one fills the bars."""
    index = {t: i for i, t in enumerate(tenants)}
    rules = [f".tl .t{index[t]}{{fill:{c}}}" for t, c in tenants.items()]
    rules += [f"#by-sla:checked~.tl .{sla.lower()}{{fill:{c}}}" for sla, c in SLA_COLOURS.items()]
    return "\n".join(rules)


def _timeline(plan: Plan, topology: ir.Topology, tenants: dict[str, str]) -> str:
    levels = [lvl for lvl in topology.levels if lvl != "node"]
    nodes = sorted((n for n in topology.nodes if n.gpu_count > 0),
                   key=lambda n: (tuple(n.domain(lvl) or "" for lvl in levels), n.name))
    finite = [p.end_s for p in plan.placements if p.end_s is not None]
    horizon = max([*finite, *(p.start_s for p in plan.placements), 1])
    horizon += max(horizon // 20, 1) if any(p.end_s is None for p in plan.placements if p.allocations) else 0
    scale = PLOT_W / horizon
    top: dict[str, int] = {}
    y = AXIS_H
    parts: list[str] = []
    outer = None
    for n in nodes:
        group = n.domain(levels[0]) if levels else None
        if group != outer and outer is not None:
            parts.append(f'<line class="sep" x1="0" x2="{LABEL_W + PLOT_W}" y1="{y}" y2="{y}"/>')
            y += NODE_GAP
        outer = group
        top[n.name] = y
        h = n.gpu_count * LANE
        parts.append(f'<text x="2" y="{y + min(h, 10) - 1}">{escape(n.name)}</text>')
        y += h + NODE_GAP
    height = y + 2
    grid = []
    for t in _ticks(horizon):
        x = LABEL_W + t * scale
        grid.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{AXIS_H - 4}" y2="{height}"/>'
                    f'<text x="{x + 2:.1f}" y="12">{"0" if t == 0 else "+" + format_duration(t)}</text>')
    index = {t: i for i, t in enumerate(tenants)}
    bars = []
    for p in plan.placements:
        if not p.allocations:
            continue
        x = LABEL_W + p.start_s * scale
        end = horizon if p.end_s is None else p.end_s
        w = max((end - p.start_s) * scale, 0.8)
        until = "open-ended" if p.end_s is None else "+" + format_duration(p.end_s)
        tip = escape(f"{p.intent} · {p.tenant} · {p.sla} · {p.gpu_count} GPUs · "
                     f"+{format_duration(p.start_s)} → {until}")
        cls = f"t{index[p.tenant]} {p.sla.lower()}" + (" open" if p.end_s is None else "")
        for a in p.allocations:
            if a.node not in top:
                continue
            for first, length in _runs(a.gpus):
                bars.append(f'<rect class="{cls}" x="{x:.1f}" y="{top[a.node] + first * LANE}" width="{w:.1f}" '
                            f'height="{length * LANE}"><title>{tip}</title></rect>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + PLOT_W + 8}" height="{height}" '
            f'role="img" aria-label="GPU timeline">{"".join(grid)}{"".join(parts)}{"".join(bars)}</svg>')


def render_html(plan: Plan, topology: ir.Topology) -> str:
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
    unplaced = "".join(f"<tr><td>{escape(u.intent)}</td><td>{escape(u.tenant)}</td>"
                       f"<td>{escape(u.reason)}</td><td>{escape(u.message)}</td></tr>"
                       for u in plan.unplaced)
    tenant_rows = "".join(f"<tr><td>{escape(t.tenant)}</td><td>{t.weight}</td>"
                          f"<td>{'-' if t.quota_gpus is None else t.quota_gpus}</td>"
                          f"<td>{t.requested_gpus}</td><td>{t.allocated_gpus}</td>"
                          f"<td>{t.gpu_seconds / 3600:.1f}</td></tr>" for t in plan.tenants)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>intentc plan: {escape(plan.topology)}</title>",
        f"<style>{CSS}{_style(plan, tenants)}</style></head><body>",
        f"<h1>Plan for topology {escape(plan.topology)}</h1>",
        (f'<div class="meta">seed {plan.seed} · {len(plan.waves)} waves · {used} GPU jobs placed · '
         "times are plan time, from the moment the first wave is applied</div>"),
        '<div class="metrics">' + "".join(f'<div class="metric"><b>{escape(v)}</b>{escape(k)}</div>'
                                          for k, v in metric_items) + "</div>",
        "<h2>GPU timeline</h2>",
        ('<input type="radio" name="colour" id="by-tenant" checked><label for="by-tenant">colour by tenant</label> '
         '<input type="radio" name="colour" id="by-sla"><label for="by-sla">colour by SLA class</label>'),
        (f'<div class="legends"><div class="legend by-tenant">{tenant_legend}</div>'
         f'<div class="legend by-sla">{sla_legend}</div></div>'),
        f'<div class="tl">{_timeline(plan, topology, tenants)}</div>',
    ]
    if plan.unplaced:
        parts += ["<h2>Unplaced</h2>",
                  f"<table><tr><th>intent</th><th>tenant</th><th>reason</th><th>why</th></tr>{unplaced}</table>"]
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
              "</body></html>"]
    return "\n".join(parts) + "\n"
