"""The plan as terminal tables (`intentc plan --format text`).

Rendered by rich into a string with a fixed width and no colour codes, so
the output is the same in a terminal, a CI log and a test.
"""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table

from intentc.ir.duration import format_duration
from intentc.plan.model import Placement, Plan


def gpus_cell(p: Placement) -> str:
    return ", ".join(f"{a.node}[{','.join(str(g) for g in a.gpus)}]" for a in p.allocations) or "-"


def scope_cell(p: Placement) -> str:
    """The innermost level whose domain the whole gang shares (ignoring the node when several)."""
    if not p.allocations:
        return "-"
    shared = [(lvl, dom) for lvl, dom in p.domains if dom is not None]
    if not shared:
        return "cluster"
    lvl, dom = shared[-1]
    return f"{lvl} {dom}"


def links_cell(p: Placement) -> str:
    links = sorted({a.link for a in p.allocations})
    return f"{p.interconnect} ({'/'.join(links)})" if links else p.interconnect


def render_text(plan: Plan, width: int = 160) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False, soft_wrap=False)
    m = plan.metrics
    basis = ("on the live cluster" if plan.basis == "live"
             else "an empty-cluster preview (give --kubeconfig/--context to plan on what is free now)")
    console.print(f"Plan for topology {plan.topology} (seed {plan.seed}): {basis}")
    for note in plan.basis_notes:
        console.print(f"  live: {note}")

    waves = Table(title="Waves", box=box.SIMPLE, title_justify="left")
    waves.add_column("wave", justify="right")
    waves.add_column("intents")
    for i, names in enumerate(plan.waves):
        waves.add_row(str(i), ", ".join(names))
    console.print(waves)

    wave_of = {name: i for i, wave in enumerate(plan.waves) for name in wave}
    placed = Table(title="Placements", box=box.SIMPLE, title_justify="left")
    for col, just in (("intent", "left"), ("tenant", "left"), ("sla", "left"), ("wave", "right"),
                      ("start", "right"), ("end", "right"), ("queued", "right"), ("GPUs", "right"),
                      ("nodes [GPU indices]", "left"), ("shared domain", "left"), ("interconnect", "left")):
        placed.add_column(col, justify=just)  # type: ignore[arg-type]
    for p in plan.placements:
        wave = wave_of.get(p.intent)
        placed.add_row(p.intent, p.tenant, p.sla, "-" if wave is None else str(wave), plan_time(p.start_s),
                       "open" if p.end_s is None else plan_time(p.end_s), _duration(p.queued_s) if p.queued_s else "-",
                       str(p.gpu_count), gpus_cell(p), scope_cell(p), links_cell(p))
    console.print(placed)

    if plan.unplaced:
        unplaced = Table(title="Unplaced", box=box.SIMPLE, title_justify="left")
        for col in ("intent", "tenant", "reason", "why"):
            unplaced.add_column(col)
        for u in plan.unplaced:
            unplaced.add_row(u.intent, u.tenant, u.reason, u.message)
        console.print(unplaced)

    if plan.batches:
        batches = Table(title="Batch sizes (batch: auto)", box=box.SIMPLE, title_justify="left")
        for col, just in (("intent", "left"), ("batch", "right"), ("max", "right"), ("estimate", "right"),
                          ("derivation", "left")):
            batches.add_column(col, justify=just)  # type: ignore[arg-type]
        for b in plan.batches:
            batches.add_row(b.intent, str(b.size), "-" if b.max is None else str(b.max),
                            "-" if b.estimate is None else str(b.estimate), b.derivation)
        console.print(batches)

    if plan.strategies:
        decided = Table(title="Strategies (SLA, tolerance, fragmentation)", box=box.SIMPLE, title_justify="left")
        for col, just in (("intent", "left"), ("strategy", "left"), ("domain", "left"),
                          ("fragmentation", "right"), ("precisions", "left")):
            decided.add_column(col, justify=just)  # type: ignore[arg-type]
        for st in plan.strategies:
            decided.add_row(st.intent, st.strategy, st.domain, f"{100 * st.fragmentation:.0f}%",
                            ", ".join(st.precisions))
        console.print(decided)

    tenants = Table(title="Tenants", box=box.SIMPLE, title_justify="left")
    for col in ("tenant", "weight", "quota", "requested", "peak GPUs", "GPU-hours", "share"):
        tenants.add_column(col, justify="left" if col == "tenant" else "right")
    total = sum(t.gpu_seconds for t in plan.tenants)
    for t in plan.tenants:
        share = f"{100 * t.gpu_seconds / total:.1f}%" if total else "-"
        tenants.add_row(t.tenant, str(t.weight), "-" if t.quota_gpus is None else str(t.quota_gpus),
                        str(t.requested_gpus), str(t.allocated_gpus), f"{t.gpu_seconds / 3600:.1f}", share)
    console.print(tenants)

    metrics = Table(title="Metrics", box=box.SIMPLE, title_justify="left", show_header=False)
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    used = f"{100 * m.gpus_allocated / m.gpus_total:.1f}%" if m.gpus_total else "-"
    for name, value in (
        ("peak GPUs held at once", f"{m.gpus_allocated} / {m.gpus_total} ({used})"),
        ("idle GPUs on used nodes at start", str(m.idle_gpus_on_used_nodes)),
        ("jobs spanning NVLink domains", str(m.jobs_spanning_nvlink_domains)),
        ("weighted Jain fairness (peak GPUs)", f"{m.jain_fairness:.3f}"),
        ("makespan", _duration(m.makespan_s)),
        ("critical path", f"{_duration(m.critical_path_s)}: " + (" → ".join(m.critical_path) or "-")),
        ("queued intents", str(m.queued)),
        ("GPU-hours", f"{m.gpu_seconds / 3600:.1f}"),
    ):
        metrics.add_row(name, value)
    console.print(metrics)
    # rich pads every cell to the column width; trailing blanks are noise in logs and diffs.
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _duration(seconds: int) -> str:
    return format_duration(seconds)


def plan_time(seconds: int) -> str:
    """A plan time as an offset from the plan's start."""
    return "0" if seconds == 0 else "+" + format_duration(seconds)
