"""What a CEL rule sees: the intent, its tenant, its datasets and its placement as plain maps.

Every field is present on every intent, `null` where the intent leaves it
out (lists are empty instead), so a rule compares without `has()` guards:
`intent.sla != "P0" || intent.gpus.within == "nvlink"` holds for an intent
without an SLA or without GPUs.  Names follow the YAML form of an intent
(docs/writing-intents.md); docs/rules.md lists them.  Durations are given as
written (`duration: "36h"`) and in seconds (`duration_seconds: 129600`),
which is what a rule compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intentc.ir import Dataset, Intent, Program, Tenant
from intentc.ir.duration import parse_duration
from intentc.plan.model import Placement


def intent_view(i: Intent) -> dict[str, Any]:
    a, c = i.action, i.constraints
    g = c.gpus
    s = a.settings
    batch = s.batch if s is not None else None
    return {
        "name": i.name,
        "tenant": i.tenant,
        "kind": a.kind,
        "image": a.image,
        "command": list(a.command),
        "model": a.model,
        "replicas": a.replicas,
        "port": a.port,
        "tags": list(i.context.tags),
        "drift": i.context.drift,
        "trigger": {"kind": i.trigger.kind, "after": [r.name for r in i.trigger.after],
                    "schedule": i.trigger.schedule},
        "gpus": {"count": g.count if g is not None else 0, "product": g.product if g else None,
                 "memory": g.memory if g else None, "within": g.within if g else None,
                 "prefer": g.prefer if g else None},
        "cpu": c.cpu,
        "memory": c.memory,
        "sla": c.sla,
        "tolerance": c.tolerance,
        "duration": c.duration,
        "duration_seconds": parse_duration(c.duration) if c.duration else None,
        "slack": c.slack,
        "retries": c.retries,
        "fallback": c.fallback,
        "settings": {
            "batch": batch.size if batch is not None and not batch.auto else None,
            "batch_auto": bool(batch is not None and batch.auto),
            "batch_max": batch.max if batch is not None else None,
            "seq_len": s.seq_len if s else None, "kv_cache": s.kv_cache if s else None,
            "precision": s.precision if s else None, "model_memory": s.model_memory if s else None,
            "parameters": s.parameters if s else None, "kv_reuse": s.kv_reuse if s else None,
            "throughput_mode": s.throughput_mode if s else None,
        },
        "consumes": [r.name for r in i.consumes],
        "produces": [r.name for r in i.produces],
        "clusters": list(i.clusters.names) if i.clusters is not None else [],
    }


def tenant_view(t: Tenant | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"name": t.name, "tier": t.tier, "weight": t.weight, "quota_gpus": t.quota_gpus,
            "quota_cpu": t.quota_cpu, "quota_memory": t.quota_memory, "group": t.group,
            "drift": t.drift, "max_sla": t.max_sla}


def datasets_view(i: Intent, declared: dict[str, Dataset]) -> dict[str, Any]:
    """The datasets the intent consumes or produces, by name: `uri` is null for one an intent
    produces (it has no external address), `declared` whether a `dataset` block names it."""
    out: dict[str, Any] = {}
    for role, refs in (("consumes", i.consumes), ("produces", i.produces)):
        for r in refs:
            d = declared.get(r.name)
            entry = out.setdefault(r.name, {"name": r.name, "uri": d.uri if d is not None else None,
                                            "declared": d is not None, "consumed": False, "produced": False})
            entry["consumed" if role == "consumes" else "produced"] = True
    return out


def placement_view(p: Placement | None) -> dict[str, Any] | None:
    """Where the plan put the intent: null when it has no GPUs placed."""
    if p is None or not p.allocations:
        return None
    return {"nodes": list(p.nodes), "gpus": p.gpu_count, "interconnect": p.interconnect,
            "domains": {level: name for level, name in p.domains},
            "start_s": p.start_s, "end_s": p.end_s, "queued_s": p.queued_s, "sla": p.sla}


@dataclass(frozen=True)
class Needs:
    """What the rules of a run read (cel_check.needs): per variable, the fields selected of it
    (None: all of them).  A context holds only that, as the library converts every value of a
    context it is given (some 2 µs each)."""

    fields: tuple[tuple[str, frozenset[str] | None], ...]

    def of(self, root: str) -> tuple[bool, frozenset[str] | None]:
        """(read at all, the fields read or None for all)."""
        for name, got in self.fields:
            if name == root:
                return True, got
        return False, None


EVERYTHING = Needs(tuple((v, None) for v in ("datasets", "intent", "placement", "tenant")))


def _only(view: dict[str, Any] | None, fields: frozenset[str] | None) -> dict[str, Any] | None:
    return view if view is None or fields is None else {k: view[k] for k in fields if k in view}


class Views:
    """The maps for each intent of a program, as much of them as `needs` asks for."""

    def __init__(self, program: Program, placements: dict[str, Placement] | None,
                 needs: Needs = EVERYTHING) -> None:
        self.tenants = {t.name: t for t in program.tenants}
        self.datasets = {d.name: d for d in program.datasets}
        self.placements = placements
        self.needs = needs
        self._tenant_views: dict[str, dict[str, Any] | None] = {}

    def of(self, intent: Intent) -> dict[str, Any]:
        out: dict[str, Any] = {}
        read, fields = self.needs.of("intent")
        if read:
            out["intent"] = _only(intent_view(intent), fields)
        read, fields = self.needs.of("tenant")
        if read:
            t = intent.tenant
            if t not in self._tenant_views:
                self._tenant_views[t] = _only(tenant_view(self.tenants.get(t)), fields)
            out["tenant"] = self._tenant_views[t]
        read, fields = self.needs.of("datasets")
        if read:
            out["datasets"] = datasets_view(intent, self.datasets)
        read, fields = self.needs.of("placement")
        if read and self.placements is not None:
            out["placement"] = _only(placement_view(self.placements.get(intent.name)), fields)
        return out
