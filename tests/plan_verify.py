"""An independent check of a plan.json document: it reads only the document
(and, when given, the topology's GPU counts and the dependencies), never the
planner's code, so a planner bug cannot hide behind its own bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


# --------------------------------------------------------------------------
# Over time, against the instance (issue 37): quotas and SLA order.  `jobs` are plain
# dicts (name, tenant, gpus, product, within, sla, duration, after), `nodes` plain dicts
# (name, gpus, product and one key per domain level): the benchmark's instance data, not
# the planner's types.
# --------------------------------------------------------------------------

def _interval(p: Mapping[str, Any]) -> tuple[int, float]:
    return p["start_s"], float("inf") if p["end_s"] is None else p["end_s"]


def ready_times(doc: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """When each placed job could start: when everything it waits for has ended (0 if nothing)."""
    by = {p["intent"]: p for p in doc["placements"]}
    out = {}
    for j in jobs:
        if j["name"] in by:
            out[j["name"]] = max((by[a]["end_s"] for a in j["after"] if a in by and by[a]["end_s"] is not None),
                                 default=0)
    return out


def quota_violations(doc: Mapping[str, Any], quotas: Mapping[str, int | None]) -> list[str]:
    """Instants where a tenant holds more GPUs than its quota."""
    deltas: dict[str, list[tuple[float, int]]] = {}
    for p in doc["placements"]:
        gpus = sum(len(a["gpus"]) for a in p["allocations"])
        start, end = _interval(p)
        deltas.setdefault(p["tenant"], []).extend(((start, gpus), (end, -gpus)))
    out = []
    for tenant, points in sorted(deltas.items()):
        q = quotas.get(tenant)
        held = 0
        for at, d in sorted(points, key=lambda x: (x[0], x[1])):      # ends before starts
            held += d
            if q is not None and held > q:
                out.append(f"{tenant} holds {held} > {q} at {at}")
                break
    return out


def wrong_durations(doc: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    by = {p["intent"]: p for p in doc["placements"]}
    return [j["name"] for j in jobs if j["name"] in by and by[j["name"]]["end_s"] - by[j["name"]]["start_s"]
            != j["duration"]]


def _fits(job: Mapping[str, Any], free: Mapping[str, int], nodes: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether `job` finds its GPUs among `free` (per node) inside one domain at its `within` level."""
    sums: dict[str, int] = {}
    within = job["within"]
    for name, k in free.items():
        n = nodes[name]
        if k <= 0 or (job["product"] is not None and n["product"] != job["product"]):
            continue
        key = "*" if within is None else str(name if within == "node" else n[within])
        sums[key] = sums.get(key, 0) + k
        if sums[key] >= job["gpus"]:
            return True
    return False


def sla_inversions(doc: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]],
                   nodes: Sequence[Mapping[str, Any]], quotas: Mapping[str, int | None]) -> dict[str, set[str]]:
    """Higher-class jobs delayed by lower-class jobs that started while they waited.

    At every instant where something starts or ends, for each job h that is ready and not
    started: let L be the jobs of a lower class (a larger P number) running then that started
    at or after h was ready.  "gpu": h does not fit in the GPUs free then, but fits with L's
    GPUs freed (and its tenant's quota allows it then).  "quota": h fits in the free GPUs but
    its tenant's quota does not allow it, and would without L's GPUs of the same tenant.
    Jobs that started before h was ready are not counted (nothing is preempted).
    Returns the names of the delayed jobs per kind."""
    by = {p["intent"]: p for p in doc["placements"]}
    spec = {j["name"]: j for j in jobs}
    node_of = {n["name"]: n for n in nodes}
    cap = {n["name"]: n["gpus"] for n in nodes}
    ready = ready_times(doc, jobs)
    rank = {j["name"]: int(j["sla"][1:]) for j in jobs}
    out: dict[str, set[str]] = {"gpu": set(), "quota": set()}
    lower_starts: list[tuple[int, str]] = sorted((p["start_s"], p["intent"]) for p in doc["placements"])
    # only a job that waits while a lower class starts can be delayed by one
    suspects = [h for h in by if by[h]["start_s"] > ready[h] and any(
        ready[h] <= s < by[h]["start_s"] and rank[n] > rank[h] for s, n in lower_starts)]
    if not suspects:
        return out
    times = sorted({t for p in doc["placements"] for t in _interval(p) if t != float("inf")})
    for t in times:
        running = [p for p in doc["placements"] if p["start_s"] <= t < _interval(p)[1]]
        free = dict(cap)
        held: dict[str, int] = {}
        for p in running:
            for a in p["allocations"]:
                free[a["node"]] -= len(a["gpus"])
            held[p["tenant"]] = held.get(p["tenant"], 0) + sum(len(a["gpus"]) for a in p["allocations"])
        for h in suspects:
            if not ready[h] <= t < by[h]["start_s"] or h in out["gpu"] or h in out["quota"]:
                continue
            job = spec[h]
            late = [p for p in running if rank[p["intent"]] > rank[h] and p["start_s"] >= ready[h]]
            if not late:
                continue
            q = quotas.get(job["tenant"])
            fits = _fits(job, free, node_of)
            quota_ok = q is None or held.get(job["tenant"], 0) + job["gpus"] <= q
            if fits and quota_ok:
                continue                    # it could start: it waits for something else (a reservation)
            freed = dict(free)
            mine = 0
            for p in late:
                for a in p["allocations"]:
                    freed[a["node"]] += len(a["gpus"])
                if p["tenant"] == job["tenant"]:
                    mine += sum(len(a["gpus"]) for a in p["allocations"])
            quota_without = q is None or held.get(job["tenant"], 0) - mine + job["gpus"] <= q
            if not fits and _fits(job, freed, node_of) and quota_without:
                out["gpu"].add(h)
            elif fits and not quota_ok and quota_without:
                out["quota"].add(h)
    return out
