"""Objects and pod changes that tag rules require (intentc/policy, docs/policies.md).

* `default-deny-network`: one NetworkPolicy per tenant namespace selecting
  every pod, with no ingress or egress rule: all traffic is denied until the
  tenant adds allow policies of its own.
* `persistent-volume`: a PersistentVolumeClaim `NAME-state` per intent,
  mounted at /var/lib/intentc/state (INTENTC_STATE_DIR) in every pod of the
  intent, including its fallback variants; ReadWriteMany when the intent
  has more than one pod, else ReadWriteOnce.
* `disruption-budget`: a PodDisruptionBudget `NAME` with maxUnavailable 0,
  so a drain or an eviction never takes one of the intent's pods.
"""

from __future__ import annotations

from typing import Any

from intentc.ir import Intent, Tenant
from intentc.render.capabilities import KubeVersion
from intentc.render.meta import metadata
from intentc.objectmeta import INTENT_LABEL, TENANT_LABEL

DENY_ALL_NAME = "intentc-default-deny"
STATE_DIR = "/var/lib/intentc/state"
STATE_VOLUME = "intentc-state"


def default_deny(tenant: Tenant) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": metadata(DENY_ALL_NAME, tenant.name, tenant=tenant.name),
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}


def claim_name(intent: Intent) -> str:
    return f"{intent.name}-state"


def state_claim(intent: Intent, size: str, pods: int) -> dict[str, Any]:
    mode = "ReadWriteMany" if pods > 1 else "ReadWriteOnce"
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": metadata(claim_name(intent), intent.tenant, tenant=intent.tenant, intent=intent.name),
            "spec": {"accessModes": [mode], "resources": {"requests": {"storage": size}}}}


def disruption_budget(intent: Intent, version: KubeVersion) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": metadata(intent.name, intent.tenant, tenant=intent.tenant, intent=intent.name),
            "spec": {"maxUnavailable": 0,
                     "selector": {"matchLabels": {INTENT_LABEL: intent.name, TENANT_LABEL: intent.tenant}}}}


def _pod_spec(body: dict[str, Any]) -> dict[str, Any] | None:
    spec = body.get("spec", {})
    if body["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template = spec.get("template")
    return template["spec"] if isinstance(template, dict) else None


def _copied_to_containers(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A copy of a workload body, and its pod spec, new down to each container; what is
    not on that path is shared with `body`.  Rendered bodies are never mutated after they
    are made (`stamp` copies only the metadata level too), so sharing is safe, and a deep
    copy of every Job at 100,000 intents was an eighth of `compile`."""
    out = dict(body)
    spec = out["spec"] = dict(out["spec"])
    if out["kind"] == "CronJob":
        job = spec["jobTemplate"] = dict(spec["jobTemplate"])
        spec = job["spec"] = dict(job["spec"])
    template = spec["template"] = dict(spec["template"])
    pod = template["spec"] = dict(template["spec"])
    pod["containers"] = [dict(c) for c in pod["containers"]]
    return out, pod


def with_env(body: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """A copy of a workload body whose containers also get `env` (other kinds unchanged)."""
    if body["kind"] not in ("Job", "CronJob", "Deployment"):
        return body
    out, pod = _copied_to_containers(body)
    for c in pod["containers"]:
        c["env"] = sorted([*c.get("env", ()), *({"name": k, "value": v} for k, v in env.items())],
                          key=lambda e: e["name"])
    return out


def with_state_volume(body: dict[str, Any], intent: Intent) -> dict[str, Any]:
    """A copy of a workload body whose pods mount the intent's claim (other kinds unchanged)."""
    if body["kind"] not in ("Job", "CronJob", "Deployment"):
        return body
    out = with_env(body, {"INTENTC_STATE_DIR": STATE_DIR})
    pod = _pod_spec(out)
    assert pod is not None
    # new lists, not appends: the ones `with_env` did not copy are the original body's
    pod["volumes"] = [*pod.get("volumes", ()),
                      {"name": STATE_VOLUME, "persistentVolumeClaim": {"claimName": claim_name(intent)}}]
    for c in pod["containers"]:
        c["volumeMounts"] = [*c.get("volumeMounts", ()), {"name": STATE_VOLUME, "mountPath": STATE_DIR}]
    return out


def pod_count(bodies: list[dict[str, Any]]) -> int:
    """Pods of the intent running at once (Jobs' parallelism, Deployments' replicas)."""
    total = 0
    for b in bodies:
        spec = b.get("spec", {})
        if b["kind"] == "Deployment":
            total += spec.get("replicas", 1)
        elif b["kind"] == "Job" and not spec.get("suspend"):
            total += spec.get("parallelism", 1)
        elif b["kind"] == "CronJob":
            total += spec["jobTemplate"]["spec"].get("parallelism", 1)
    return total
