"""`plan.json`: the plan as a document (schemas/plan.schema.json), and back.

Keys are sorted and lists keep the model's order (already sorted by name),
so the same plan is always the same bytes and a `git diff` of two plans
shows only what changed.  Domains are a list of {level, domain} rather
than an object, so the outermost-first order of levels survives key sorting.
"""

from __future__ import annotations

import io
import json
from typing import Any

from intentc.plan.model import (
    BatchSizing,
    Metrics,
    NodeAllocation,
    Placement,
    Plan,
    Strategy,
    TenantShare,
    Unplaced,
)

API_VERSION = "intentc.dev/v1alpha1"
KIND = "Plan"


def plan_to_obj(plan: Plan) -> dict[str, Any]:
    wave_of = {name: i for i, wave in enumerate(plan.waves) for name in wave}
    m = plan.metrics
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "topology": plan.topology,
        "basis": {"kind": plan.basis, "notes": list(plan.basis_notes)},
        "seed": plan.seed,
        "waves": [list(w) for w in plan.waves],
        "placements": [{
            "intent": p.intent,
            "tenant": p.tenant,
            "wave": wave_of.get(p.intent),
            "gpus": p.gpu_count,
            "interconnect": p.interconnect,
            "sla": p.sla,
            "start_s": p.start_s,
            "end_s": p.end_s,
            "ready_s": p.ready_s,
            "domains": [{"level": lvl, "domain": dom} for lvl, dom in p.domains],
            "allocations": [{
                "node": a.node, "gpus": list(a.gpus), "numa_nodes": list(a.numa_nodes),
                "nics": list(a.nics), "link": a.link,
            } for a in p.allocations],
        } for p in plan.placements],
        "unplaced": [{"intent": u.intent, "tenant": u.tenant, "reason": u.reason, "message": u.message}
                     for u in plan.unplaced],
        "tenants": [{
            "tenant": t.tenant, "weight": t.weight, "quota_gpus": t.quota_gpus,
            "requested_gpus": t.requested_gpus, "allocated_gpus": t.allocated_gpus,
            "gpu_seconds": t.gpu_seconds,
        } for t in plan.tenants],
        "metrics": {
            "gpus_total": m.gpus_total,
            "gpus_allocated": m.gpus_allocated,
            "idle_gpus_on_used_nodes": m.idle_gpus_on_used_nodes,
            "jobs_spanning_nvlink_domains": m.jobs_spanning_nvlink_domains,
            "jain_fairness": m.jain_fairness,
            "makespan_s": m.makespan_s,
            "critical_path": list(m.critical_path),
            "critical_path_s": m.critical_path_s,
            "queued": m.queued,
            "gpu_seconds": m.gpu_seconds,
            "refused_path": list(m.refused_path),
            "refused_path_s": m.refused_path_s,
        },
        "batches": [{"intent": b.intent, "size": b.size, "max": b.max, "estimate": b.estimate,
                     "derivation": b.derivation} for b in plan.batches],
        "strategies": [{"intent": s.intent, "strategy": s.strategy, "fragmentation": s.fragmentation,
                        "domain": s.domain, "precisions": list(s.precisions)} for s in plan.strategies],
    }


_ENCODER = json.JSONEncoder(indent=2, sort_keys=True, ensure_ascii=False)


def plan_to_json(plan: Plan) -> str:
    """`json.dumps(..., indent=2, sort_keys=True)`, the same text, written chunk by chunk:
    `dumps` joins a list of every chunk (an indented dump runs the pure-Python encoder,
    a few small strings per value), which held several times the plan's own size."""
    out = io.StringIO()
    out.writelines(_ENCODER.iterencode(plan_to_obj(plan)))
    out.write("\n")
    return out.getvalue()


def plan_from_obj(doc: dict[str, Any]) -> Plan:
    """The inverse of `plan_to_obj` (for `intentc diff` of two plans); trusts a schema-valid doc."""
    m = doc["metrics"]
    return Plan(
        topology=doc["topology"],
        waves=tuple(tuple(w) for w in doc["waves"]),
        placements=tuple(Placement(
            p["intent"], p["tenant"],
            tuple(NodeAllocation(a["node"], tuple(a["gpus"]), tuple(a["numa_nodes"]),
                                 tuple(a["nics"]), a["link"]) for a in p["allocations"]),
            tuple((d["level"], d["domain"]) for d in p["domains"]),
            p["interconnect"], p["start_s"], p["end_s"], p["ready_s"], p["sla"]) for p in doc["placements"]),
        unplaced=tuple(Unplaced(u["intent"], u["tenant"], u["reason"], u["message"])
                       for u in doc["unplaced"]),
        tenants=tuple(TenantShare(t["tenant"], t["weight"], t["quota_gpus"], t["requested_gpus"],
                                  t["allocated_gpus"], t["gpu_seconds"]) for t in doc["tenants"]),
        metrics=Metrics(m["gpus_total"], m["gpus_allocated"], m["idle_gpus_on_used_nodes"],
                        m["jobs_spanning_nvlink_domains"], m["jain_fairness"], m["makespan_s"],
                        tuple(m["critical_path"]), m["critical_path_s"], m["queued"], m["gpu_seconds"],
                        tuple(m.get("refused_path", ())), m.get("refused_path_s", 0)),
        seed=doc.get("seed", 0),
        basis=(doc.get("basis") or {}).get("kind", "preview"),
        basis_notes=tuple((doc.get("basis") or {}).get("notes", ())),
        batches=tuple(BatchSizing(b["intent"], b["size"], b["max"], b["estimate"], b["derivation"])
                      for b in doc.get("batches", ())),
        strategies=tuple(Strategy(s["intent"], s["strategy"], s["fragmentation"], s["domain"],
                                  tuple(s["precisions"])) for s in doc.get("strategies", ())),
    )


def plan_from_json(text: str) -> Plan:
    return plan_from_obj(json.loads(text))
