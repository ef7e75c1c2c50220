"""Plan-level requirements of tags, checked with the tag's position.

`exclusive-domain` is a property of the plan, not of one intent: the
intent's nodes, and every NVLink domain they belong to, must hold no GPU of
another tenant while it runs.  A node outside any NVLink domain is its own
domain (its GPUs talk over PCIe).  The planner keeps other tenants off those
domains at overlapping times (`exclusive`, plan/schedule.py), so this check
finds what the planner could not keep apart.  Each violation is E1020 at the
tag, with the other tenant's intent as a related position.  The
organisation's CEL rules are evaluated here too, with the plan's placements
(`plan/cel_check.py`).

It lives with the planner, its one caller, because it reads the plan: the
policy package (the rule vocabulary and its loading) sits below planning.
"""

from __future__ import annotations

from intentc import ir
from intentc.diagnostics import Diagnostic, Related, error
from intentc.plan.model import Placement, Plan
from intentc.policy.catalogue import Policies, Requirement
from intentc.plan.cel_check import evaluate


def _domains(p: Placement, nvlink_of: dict[str, str]) -> set[str]:
    """Node names and NVLink domains (prefixed, so the two never collide) of a placement."""
    out = set()
    for node in p.nodes:
        out.add(f"node {node}")
        out.add(f"NVLink domain {nvlink_of[node]}" if node in nvlink_of else f"node {node}")
    return out


def check_plan(program: ir.Program, plan: Plan, topology: ir.Topology, policies: Policies) -> list[Diagnostic]:
    nvlink_of = {n.name: d for n in topology.nodes if (d := n.domain("nvlink")) is not None}
    intents = {i.name: i for i in program.intents}
    placed = [p for p in plan.placements if p.allocations]
    shared: dict[str, list[Placement]] = {}
    for p in placed:
        for d in _domains(p, nvlink_of):
            shared.setdefault(d, []).append(p)
    diags: list[Diagnostic] = []
    for p in placed:
        intent = intents.get(p.intent)
        if intent is None:
            continue
        for index, rule, req in policies.requirements(intent):
            if req is not Requirement.EXCLUSIVE_DOMAIN:
                continue
            for where in sorted(_domains(p, nvlink_of)):
                others = sorted((o for o in shared[where] if o.tenant != p.tenant and _overlap(o, p)),
                                key=lambda o: o.intent)
                if not others:
                    continue
                other = others[0]
                other_intent = intents.get(other.intent)
                related = []
                if other_intent is not None:
                    gpus = other_intent.constraints.spans.get("gpus", other_intent.span)
                    related.append(Related(f"intent '{other.intent}' of tenant {other.tenant} placed here", gpus))
                why = f" ({rule.reason})" if rule.reason else ""
                diags.append(error(
                    "E1020", f"intent '{intent.name}' is tagged {rule.tag}, which requires {req.describe}{why}, "
                             f"but its {where} also holds intent '{other.intent}' of tenant {other.tenant}",
                    intent.context.tag_span(index), related=related,
                    hint="give the intent `within nvlink` on a domain of its own, give the other tenant's intent "
                         "a different product or scope, or add capacity"))
                break                                   # one violation per intent and tag is enough
    return diags + evaluate(program, policies.cel, plan)     # the organisation's rules, with the placement


def _overlap(a: Placement, b: Placement) -> bool:
    """True if the two hold their GPUs at some same instant (an open end runs for good)."""
    return (a.end_s is None or b.start_s < a.end_s) and (b.end_s is None or a.start_s < b.end_s)


def exclusive(program: ir.Program, policies: Policies) -> frozenset[str]:
    """Intents the planner keeps apart from other tenants (`exclusive-domain`)."""
    return frozenset(i.name for i in program.intents if policies.requires(i, Requirement.EXCLUSIVE_DOMAIN))


def pinned(program: ir.Program, policies: Policies) -> frozenset[str]:
    """Intents the planner must not move while repacking (`no-repack`)."""
    return frozenset(i.name for i in program.intents if policies.requires(i, Requirement.NO_REPACK))
