"""The plan as one self-contained HTML page (`intentc plan --format html`).

A picture of the cluster: nodes grouped by their domains (outermost level
first), each GPU a cell coloured by the job on it, free GPUs grey, with a
legend, the unplaced intents and the metrics.  Inline CSS and SVG only: no
script, font or stylesheet is fetched, so the page works from a CI
artifact or an air-gapped laptop.  Colours come from the job's rank in
name order, so the page is as deterministic as plan.json.
"""

from __future__ import annotations

from html import escape

from intentc import ir
from intentc.plan.model import Plan

CELL = 14
GAP = 2
FREE = "#e5e7eb"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.meta{color:#4b5563;margin-bottom:16px}
.metrics{display:flex;flex-wrap:wrap;gap:12px}
.metric{border:1px solid #d1d5db;border-radius:6px;padding:6px 10px}
.metric b{display:block;font-size:18px}
.domain{border:1px solid #d1d5db;border-radius:6px;padding:6px 8px;margin:6px 0;display:flex;flex-wrap:wrap;
gap:6px;align-items:flex-start}
.domain>.label{width:100%;font-size:12px;color:#374151}
.domain .domain{margin:0}
.node{display:inline-flex;flex-direction:column;align-items:center;font-size:10px;color:#4b5563}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;margin:8px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}
table{border-collapse:collapse} td,th{border-bottom:1px solid #e5e7eb;padding:3px 8px;text-align:left}
"""


def job_colours(plan: Plan) -> dict[str, str]:
    """A well-spread hue per GPU job (golden-angle steps), fixed by name order."""
    jobs = [p.intent for p in plan.placements if p.allocations]
    return {name: f"hsl({(i * 137.508) % 360:.1f},65%,52%)" for i, name in enumerate(jobs)}


def _node_svg(node: ir.TopologyNode, owner: dict[int, str], colours: dict[str, str]) -> str:
    per_row = 4 if node.gpu_count <= 8 else 8
    rows = max((node.gpu_count + per_row - 1) // per_row, 1)
    w = per_row * (CELL + GAP) + GAP
    h = rows * (CELL + GAP) + GAP
    cells = []
    for g in range(node.gpu_count):
        x = GAP + (g % per_row) * (CELL + GAP)
        y = GAP + (g // per_row) * (CELL + GAP)
        job = owner.get(g)
        fill = colours[job] if job else FREE
        title = f"{node.name} GPU {g}: {job}" if job else f"{node.name} GPU {g}: free"
        cells.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="2" fill="{fill}">'
                     f"<title>{escape(title)}</title></rect>")
    return (f'<div class="node"><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'role="img" aria-label="{escape(node.name)}">{"".join(cells)}</svg>'
            f"<span>{escape(node.name)}</span></div>")


def _tree(nodes: list[ir.TopologyNode], levels: list[str], depth: int,
          owners: dict[str, dict[int, str]], colours: dict[str, str]) -> str:
    if depth == len(levels):
        return "".join(_node_svg(n, owners.get(n.name, {}), colours) for n in nodes)
    level = levels[depth]
    groups: dict[str, list[ir.TopologyNode]] = {}
    for n in nodes:
        groups.setdefault(n.domain(level) or "", []).append(n)
    out = []
    for name in sorted(groups):
        inner = _tree(groups[name], levels, depth + 1, owners, colours)
        if not name:
            out.append(inner)          # unlabelled at this level: no box of its own
            continue
        gpus = sum(n.gpu_count for n in groups[name])
        out.append(f'<div class="domain"><div class="label">{escape(level)} <b>{escape(name)}</b> '
                   f"· {_count(len(groups[name]), 'node')} · {_count(gpus, 'GPU')}</div>{inner}</div>")
    return "".join(out)


def render_html(plan: Plan, topology: ir.Topology) -> str:
    colours = job_colours(plan)
    owners: dict[str, dict[int, str]] = {}
    for p in plan.placements:
        for a in p.allocations:
            for g in a.gpus:
                owners.setdefault(a.node, {})[g] = p.intent
    levels = [lvl for lvl in topology.levels if lvl != "node"]
    nodes = sorted(topology.nodes, key=lambda n: n.name)
    m = plan.metrics
    metric_items = (
        ("GPUs allocated", f"{m.gpus_allocated} / {m.gpus_total}"),
        ("idle GPUs on used nodes", str(m.idle_gpus_on_used_nodes)),
        ("jobs spanning NVLink domains", str(m.jobs_spanning_nvlink_domains)),
        ("weighted Jain fairness", f"{m.jain_fairness:.3f}"),
        ("makespan", f"{m.makespan_s} s"),
        ("unplaced intents", str(len(plan.unplaced))),
    )
    by_intent = {p.intent: p for p in plan.placements}
    legend = "".join(
        f'<span><i class="swatch" style="background:{c}"></i>{escape(name)} '
        f"({by_intent[name].gpu_count} GPUs, {escape(by_intent[name].tenant)})</span>"
        for name, c in colours.items())
    legend += f'<span><i class="swatch" style="background:{FREE}"></i>free</span>'
    unplaced = "".join(f"<tr><td>{escape(u.intent)}</td><td>{escape(u.tenant)}</td>"
                       f"<td>{escape(u.reason)}</td><td>{escape(u.message)}</td></tr>"
                       for u in plan.unplaced)
    tenants = "".join(f"<tr><td>{escape(t.tenant)}</td><td>{t.weight}</td>"
                      f"<td>{'-' if t.quota_gpus is None else t.quota_gpus}</td>"
                      f"<td>{t.requested_gpus}</td><td>{t.allocated_gpus}</td></tr>" for t in plan.tenants)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>intentc plan: {escape(plan.topology)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>Plan for topology {escape(plan.topology)}</h1>",
        (f'<div class="meta">seed {plan.seed} · {len(plan.waves)} waves · '
         f"{sum(1 for p in plan.placements if p.allocations)} GPU jobs placed</div>"),
        '<div class="metrics">' + "".join(f'<div class="metric"><b>{escape(v)}</b>{escape(k)}</div>'
                                          for k, v in metric_items) + "</div>",
        "<h2>Cluster</h2>",
        f'<div class="legend">{legend}</div>',
        _tree(nodes, levels, 0, owners, colours),
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
               f"<th>allocated</th></tr>{tenants}</table>"),
              "</body></html>"]
    return "\n".join(parts) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
