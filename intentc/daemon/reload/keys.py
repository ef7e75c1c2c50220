"""What a reload compares to decide how much to redo.

An edit is judged by comparing each changed file's declarations before and
after under two projections: what the graph and planner read, and what the
cross-reference passes read.  Both are computed from the two versions of the
changed files only, never over the whole program, so deciding costs the size
of the edit.  A file that appears or disappears compares unequal (`None`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from intentc.daemon.reload.state import FileState
from intentc.diagnostics import Span
from intentc.ir import FieldSpans, Intent, Program, Tenant


def planning_key(intent: Intent) -> tuple[Any, ...]:
    """Everything about an intent that the graph and the planner read.

    Image, command, port and drift policy are absent: changing them cannot
    move a placement or a wave.  Model settings and replicas size `batch: auto`
    (plan/batch_size.py); tags carry the planner's tag rules (intentc/policy)."""
    return (intent.name, intent.tenant, intent.trigger, intent.action.kind, intent.constraints,
            intent.consumes, intent.produces, intent.action.settings, intent.action.replicas,
            intent.context.tags)


def tenant_key(tenant: Tenant) -> tuple[Any, ...]:
    return (tenant.name, tenant.tier, tenant.weight, tenant.quota_gpus)


def plan_inputs(state: FileState | None) -> tuple[Any, ...] | None:
    """What the planner reads of one file's declarations."""
    if state is None:
        return None
    program = state.program
    return tuple(map(planning_key, program.intents)), tuple(map(tenant_key, program.tenants))


def reference_inputs(state: FileState | None) -> tuple[Any, ...] | None:
    """What the cross-reference passes (duplicates, names, GPU products, tenancy) read
    of one file: names, references, tenants' tiers, ceilings and groups, topologies'
    products (spans excluded); what they judge per intent is `per_intent_inputs`."""
    if state is None:
        return None
    return _references(state.program)


def _references(program: Program) -> tuple[Any, ...]:
    return (tuple((t.name, t.tier, t.max_sla, t.group) for t in program.tenants),
            tuple(d.name for d in program.datasets),
            tuple((t.name, tuple(sorted(t.gpu_products))) for t in program.topologies),
            tuple((i.name, i.tenant, i.trigger.after, i.consumes, i.produces) for i in program.intents))


def per_intent_inputs(state: FileState | None) -> tuple[Any, ...] | None:
    """What the cross-reference passes read of one file's intents that they judge per
    intent: the GPU product against the topologies (W0401), the SLA class against the
    tenant's ceiling (E0904), a serve's GPUs against its replicas (E0903).  An edit of only
    these is checked for the changed files' intents (`Reloader`), not the whole program."""
    if state is None:
        return None

    def gpus(i: Intent) -> tuple[Any, ...] | None:
        g = i.constraints.gpus
        return (g.count, g.product) if g else None
    return tuple((i.constraints.sla, i.action.kind, gpus(i), i.action.replicas) for i in state.program.intents)


def declares(state: FileState | None, kind: str) -> bool:
    """The file declares something of `kind` ("tenants", "datasets", ...)."""
    return state is not None and bool(getattr(state.program, kind))


def positions(state: FileState | None) -> tuple[Any, ...] | None:
    """Every position written in one file's declarations (spans and field spans).

    A finding kept from the previous plan or passes points at one of these; when
    a changed file's positions and the pass's inputs are both unchanged, the
    finding is still exactly right (an image edit on its own line moves nothing)."""
    if state is None:
        return None
    out: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, Span):
            out.append(value)
        elif isinstance(value, FieldSpans):
            out.append((value.keys, value.positions))
        elif isinstance(value, tuple):
            for item in value:
                walk(item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))

    for declaration in state.program.declarations():
        walk(declaration)
    return tuple(out)
