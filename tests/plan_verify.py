"""An independent check of a plan.json document: it reads only the document
(and, when given, the topology's GPU counts and the dependencies), never the
planner's code, so a planner bug cannot hide behind its own bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def overlaps(doc: Mapping[str, Any]) -> list[str]:
    """Every pair of intents that hold the same GPU at overlapping times (open ends run forever)."""
    held: dict[tuple[str, int], list[tuple[int, float, str]]] = {}
    for p in doc["placements"]:
        end = float("inf") if p["end_s"] is None else p["end_s"]
        for a in p["allocations"]:
            for g in a["gpus"]:
                held.setdefault((a["node"], g), []).append((p["start_s"], end, p["intent"]))
    out = []
    for (node, g), spans in sorted(held.items()):
        spans.sort()
        for (s1, e1, i1), (s2, e2, i2) in zip(spans, spans[1:]):
            if s2 < e1 and s1 < e2 and not (s1 == e1 or s2 == e2):
                out.append(f"{node} GPU {g}: {i1} [{s1}, {e1}) and {i2} [{s2}, {e2})")
    return out


def order_violations(doc: Mapping[str, Any], after: Mapping[str, list[str]]) -> list[str]:
    """Intents that start before an intent they depend on has ended (or, for serve, started)."""
    by = {p["intent"]: p for p in doc["placements"]}
    out = []
    for name, befores in after.items():
        if name not in by:
            continue
        for b in befores:
            if b not in by:
                out.append(f"{name} runs but {b}, which it waits for, does not")
                continue
            done = by[b]["end_s"] if by[b]["end_s"] is not None else by[b]["start_s"]
            if by[name]["start_s"] < done or by[name]["ready_s"] < done:
                out.append(f"{name} starts at {by[name]['start_s']} before {b} is done at {done}")
    return out


def over_capacity(doc: Mapping[str, Any], gpus: Mapping[str, int]) -> list[str]:
    return [f"{p['intent']}: {a['node']} GPU {g}" for p in doc["placements"] for a in p["allocations"]
            for g in a["gpus"] if not 0 <= g < gpus[a["node"]]]
