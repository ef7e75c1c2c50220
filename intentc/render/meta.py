"""Object metadata every rendered object shares (docs/design.md, "Objects on the cluster")."""

from __future__ import annotations

from typing import Any, Mapping

from intentc.objectmeta import INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL


def labels(tenant: str | None = None, intent: str | None = None) -> dict[str, str]:
    out = {MANAGED_BY_LABEL: MANAGED_BY}
    if tenant:
        out[TENANT_LABEL] = tenant
    if intent:
        out[INTENT_LABEL] = intent
    return out


def metadata(name: str, namespace: str | None = None, *, tenant: str | None = None,
             intent: str | None = None, annotations: Mapping[str, str] | None = None,
             extra_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {**labels(tenant, intent), **(extra_labels or {})}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta
