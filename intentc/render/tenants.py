"""Per-tenant objects (Namespace, RoleBinding, ResourceQuota) and SLA PriorityClasses.

A tenant's namespace is named after the tenant (tenant names are DNS-1123
labels, checked by the domain pass), so everything a tenant runs can be
found, bound and bounded in one place.
"""

from __future__ import annotations

from typing import Any, Iterable

from intentc.ir import SlaClass, Tenant
from intentc.render.meta import metadata
from intentc.render.binding import GPU_QUOTA

ROLE_BINDING_NAME = "intentc-tenant-edit"
QUOTA_NAME = "intentc-tenant-quota"
TENANT_CLUSTER_ROLE = "edit"

# Higher value = admitted / kept first; P0 is the most important class.
PRIORITY_VALUES = {SlaClass.P0: 4000, SlaClass.P1: 3000, SlaClass.P2: 2000, SlaClass.P3: 1000}


def priority_class_name(sla: str) -> str:
    return f"intentc-{sla.lower()}"


def namespace(tenant: Tenant) -> dict[str, Any]:
    extra = {"intentc.dev/tier": tenant.tier} if tenant.tier else {}
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": metadata(tenant.name, tenant=tenant.name, extra_labels=extra)}


def role_binding(tenant: Tenant) -> dict[str, Any] | None:
    if not tenant.group:
        return None
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": metadata(ROLE_BINDING_NAME, tenant.name, tenant=tenant.name),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": TENANT_CLUSTER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": tenant.group}],
    }


def resource_quota(tenant: Tenant, planned_gpus: int = 0, gpu_key: str = GPU_QUOTA,
                   ceiling: int | None = None) -> dict[str, Any]:
    """Every tenant namespace is bounded.  Without a declared GPU quota the
    bound is what the plan allocated to the tenant (0 without GPU intents):
    the tenant's group has `edit` in its namespace, and without a quota a
    pod created by hand could take any GPU the plan gave someone else.
    `gpu_key` is the render target's: DRA claims are counted per device class.
    A target whose own admission bounds tenants (Kueue: nominal quota plus what
    the cohort lends) gives `ceiling` instead: a lower bound here would stop the
    pods of Jobs it admitted on borrowed GPUs from being created."""
    gpus = ceiling if ceiling is not None else tenant.quota_gpus if tenant.quota_gpus is not None else planned_gpus
    hard: dict[str, str] = {gpu_key: str(gpus)}
    if tenant.quota_cpu:
        hard["requests.cpu"] = tenant.quota_cpu
    if tenant.quota_memory:
        hard["requests.memory"] = tenant.quota_memory
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": metadata(QUOTA_NAME, tenant.name, tenant=tenant.name),
            "spec": {"hard": hard}}


def priority_classes(slas: Iterable[str]) -> list[dict[str, Any]]:
    out = []
    for sla in sorted(set(slas)):
        try:
            cls = SlaClass(sla)
        except ValueError:      # reported by the domain pass; nothing to render
            continue
        out.append({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": metadata(priority_class_name(cls.value), extra_labels={"intentc.dev/sla": cls.value}),
            "value": PRIORITY_VALUES[cls],
            "description": f"intentc SLA class {cls.value} (P0 is admitted first).",
        })
    return out
