"""A forecast as people and programs read it: a table, and a document for JSON / YAML (pure).

The table gives times in plan time, as `intentc plan` prints them (`0`,
`+1h30m`), so a row reads against the plan beside it; the document gives
them as absolute UTC times (RFC 3339), which is what a program comparing
with other clocks needs, and keeps seconds where a figure is a length
(`behindSeconds`).  The same per-intent document is the forecast part of
an `Intent` object's status (`status_of`), so `kubectl get intents -o yaml`
and `intentc status -o yaml` say the same thing in the same words.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from intentc.forecast.model import Forecast, IntentForecast, Phase
from intentc.ir.duration import format_duration

COLUMNS = ("NAME", "TENANT", "PHASE", "PLANNED START", "START", "ETA", "BEHIND", "REASON")


def plan_time(seconds: int | None) -> str:
    """Plan time as the plan prints it: `0`, `+2h`, and `-5m` before the epoch; `-` unknown."""
    if seconds is None:
        return "-"
    if seconds == 0:
        return "0"
    return ("+" if seconds > 0 else "-") + format_duration(abs(seconds))


def lag_text(seconds: int | None) -> str:
    """How far behind plan: `+15m` behind, `-5m` ahead, `0` on time, `-` no expectation."""
    return plan_time(seconds)


def absolute(epoch: float, seconds: int | None) -> str | None:
    """Plan time as an RFC 3339 UTC time (whole seconds)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(int(epoch) + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def start_cell(f: IntentForecast) -> str:
    """The actual start, or the expected one marked `~` while it has not started."""
    if f.actual_start_s is not None:
        return plan_time(f.actual_start_s)
    return "-" if f.eta_start_s is None else "~" + plan_time(f.eta_start_s)


def eta_cell(f: IntentForecast) -> str:
    """When it is expected to end (its actual end once it has); `open` for a running server."""
    if f.phase is Phase.BLOCKED:
        return "-"
    if f.eta_end_s is None:
        return "open" if f.eta_start_s is not None else "-"
    return plan_time(f.eta_end_s)


def rows(forecast: Forecast) -> list[tuple[str, ...]]:
    return [(f.intent, f.tenant, f.phase.value, plan_time(f.planned_start_s), start_cell(f), eta_cell(f),
             lag_text(f.behind_s), f.reason or "-") for f in forecast.intents]


def render_table(forecast: Forecast) -> str:
    """kubectl's layout: upper-case headers, columns two spaces apart, no borders."""
    lines = [COLUMNS, *rows(forecast)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS) - 1)]
    out = [f"plan time {plan_time(forecast.now_s)} now (epoch {absolute(forecast.epoch, 0)})"]
    for line in lines:
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1])
    return "\n".join(text.rstrip() for text in out) + "\n"


def status_of(f: IntentForecast, epoch: float) -> dict[str, Any]:
    """One intent's forecast as a document (absolute times): the `intents[]` entries of
    `intentc status -o json` and the `forecast` of an Intent object's status."""
    doc: dict[str, Any] = {
        "phase": f.phase.value,
        "plannedStart": absolute(epoch, f.planned_start_s), "plannedEnd": absolute(epoch, f.planned_end_s),
        "actualStart": absolute(epoch, f.actual_start_s), "actualEnd": absolute(epoch, f.actual_end_s),
        "etaStart": absolute(epoch, f.eta_start_s), "eta": absolute(epoch, f.eta_end_s),
        "behindSeconds": f.behind_s, "behind": lag_text(f.behind_s), "reason": f.reason, "drift": f.drift,
    }
    if f.delayed_by:
        doc["delayedBy"] = list(f.delayed_by)
    if f.pushed:
        doc["pushes"] = list(f.pushed)
    if f.planned_nodes:
        doc["plannedNodes"] = list(f.planned_nodes)
    if f.nodes:
        doc["nodes"] = list(f.nodes)
    return doc


def document(forecast: Forecast) -> dict[str, Any]:
    """The whole forecast: epoch and now, per intent its status, per tenant its lag (seconds)."""
    return {
        "epoch": absolute(forecast.epoch, 0), "now": absolute(forecast.epoch, forecast.now_s),
        "intents": [{"name": f.intent, "tenant": f.tenant, **status_of(f, forecast.epoch)}
                    for f in forecast.intents],
        "tenants": [{"tenant": t, "lagSeconds": s} for t, s in forecast.lag().items()],
        "notes": list(forecast.notes),
    }
