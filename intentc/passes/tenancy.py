"""Pass: what a tenant may claim — its name, its group, its urgency, its GPUs.

Tenants share one cluster, so the repository must not let one of them take
what belongs to the cluster or to another tenant:

* E0901 — a tenant named after a namespace the cluster or intentc owns
  (`kube-system`, `default`, `intentc-system`, ...: `intentc.ir.reserved`);
* E0902 — a tenant group Kubernetes gives to its own components
  (`system:authenticated` would bind `edit` for every user);
* E0903 — a `serve` whose GPU count (the total across replicas) does not
  split evenly into its replicas: rendering would round each replica up
  and the cluster would run more GPUs than the plan and the quota counted;
* E0904 — an intent more urgent than its tenant's SLA ceiling (`max_sla`,
  by default gold P0, silver P1, bronze P2), so a cheaper tier cannot
  starve a dearer one by marking everything P0.

Global (it needs each intent's tenant), cheap, and it never raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Iterator

from intentc.diagnostics import Diagnostic, error
from intentc.diagnostics.suggest import did_you_mean, one_of
from intentc.ir import ActionKind, Intent, Program, SlaClass, Tenant, Tier, vocabulary
from intentc.ir.reserved import reserved_group, reserved_namespace

DEFAULT_TIER = Tier.SILVER      # as in fair share: a tenant without a tier is silver


def sla_ceiling(tenant: Tenant) -> tuple[SlaClass, str]:
    """The most urgent class the tenant may use, and where that limit comes from."""
    if tenant.max_sla in vocabulary(SlaClass):
        return SlaClass(tenant.max_sla), "its max_sla"
    tier = Tier(tenant.tier) if tenant.tier in vocabulary(Tier) else DEFAULT_TIER
    return tier.default_max_sla, f"the {tier.value} tier's default"


def check_tenant_claims(t: Tenant) -> Iterator[Diagnostic]:
    if reserved_namespace(t.name):
        yield error("E0901", f'tenant name "{t.name}" is reserved: the namespace belongs to the cluster '
                             f"or to intentc", t.spans.get("name", t.span),
                    hint="kube-*, intentc-*, openshift-* and default cannot be tenants; pick another name")
    if t.group is not None and reserved_group(t.group):
        yield error("E0902", f'group "{t.group}" is a Kubernetes system group and cannot be bound '
                             f"to a tenant", t.spans.get("group", t.span),
                    hint="name the identity-provider group of the tenant's own people")
    if t.max_sla is not None and t.max_sla not in vocabulary(SlaClass):
        allowed = vocabulary(SlaClass)
        yield error("E0407", f'unknown SLA class "{t.max_sla}"{did_you_mean(t.max_sla, allowed)}',
                    t.spans.get("max_sla", t.span), hint=f"use {one_of(allowed)}")


def check_serve_gpus(i: Intent) -> Iterator[Diagnostic]:
    g, replicas = i.constraints.gpus, i.action.replicas or 1
    if i.action.kind != ActionKind.SERVE.value or g is None or g.count <= 0 or replicas < 1:
        return
    if g.count % replicas:
        per = "less than one GPU" if g.count < replicas else f"{g.count / replicas:g} GPUs"
        yield error("E0903", f"gpus {g.count} is the total across replicas {replicas}: each replica "
                             f"would get {per}", g.spans.get("count", g.span),
                    hint=f"write gpus {replicas * max(1, g.count // replicas)} for "
                         f"{max(1, g.count // replicas)} per replica, or a replica count that divides "
                         f"{g.count}")


_RANKS = {c.value: c.rank for c in SlaClass}


def check_sla_ceiling(i: Intent, tenant: Tenant,
                      ceiling_of: Callable[[Tenant], tuple[SlaClass, str]] = sla_ceiling) -> Iterator[Diagnostic]:
    c = i.constraints
    rank = _RANKS.get(c.sla) if c.sla is not None else None
    if rank is None:
        return
    ceiling, source = ceiling_of(tenant)
    if rank < ceiling.rank:
        yield error("E0904", f'sla {c.sla} is more urgent than tenant "{tenant.name}" may use '
                             f"({ceiling.value}, {source})", c.spans.get("sla", c.span),
                    hint=f"use sla {ceiling.value} or a later class; the platform team raises the "
                         f"ceiling with `max_sla` on the tenant")


def check_tenancy(program: Program) -> tuple[Program, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    tenants = {t.name: t for t in program.tenants}
    for t in program.tenants:
        diags.extend(check_tenant_claims(t))
    # one ceiling per tenant, not per intent: at 100,000 intents the per-intent
    # enum lookups were a third of this pass
    ceilings = {name: sla_ceiling(t) for name, t in tenants.items()}

    def ceiling_of(t: Tenant) -> tuple[SlaClass, str]:
        return ceilings[t.name]
    serve = ActionKind.SERVE.value
    for i in program.intents:
        if i.action.kind == serve:
            diags.extend(check_serve_gpus(i))
        if i.constraints.sla is not None and (tenant := tenants.get(i.tenant)) is not None:
            diags.extend(check_sla_ceiling(i, tenant, ceiling_of))
    return program, diags
