"""The `Intent` CustomResourceDefinition, generated from schemas/intent.schema.json.

The JSON Schema stays the one description of an intent; this module turns
it into the structural OpenAPI v3 schema the API server validates with
(docs/crd.md), so `kubectl apply` of an Intent object is checked by the
server itself:

* `$ref`s are inlined; `title`, `examples` and `$schema` are dropped;
  `const` becomes a one-value `enum`, a numeric `exclusiveMinimum` the
  OpenAPI v3.0 pair `minimum` + `exclusiveMinimum: true`;
  `additionalProperties: false` is dropped (the server prunes unknown
  fields, and rejects them under `kubectl apply --validate=strict`);
  `uniqueItems` on scalars becomes `x-kubernetes-list-type: set`.
* A `oneOf` of scalars (a quantity: "64Gi" or 16) is
  `x-kubernetes-int-or-string`; one that mixes objects and scalars
  (`trigger`, `batch`) keeps its value as written
  (`x-kubernetes-preserve-unknown-fields`): intentc checks it, the server
  does not.
* `apiVersion`, `kind` and `metadata` are the server's own.
* The cross-field domain rules become `x-kubernetes-validations` (CEL,
  Kubernetes ≥ 1.25; older servers would refuse the unknown field, so
  they get the CRD without them).
* A `status` subresource carries what the daemon mirrors: phase, planned
  placement, commit, last heal, and the live forecast (`forecast`: phase,
  planned / actual / expected times, how far behind plan), which the
  printer columns Phase, Start, ETA and Behind show; start and ETA are
  absolute times as strings, since kubectl's `date` columns cannot show a
  time in the future.
"""

from __future__ import annotations

import copy
from typing import Any

from intentc.frontend.schema import load_schema
from intentc.render.capabilities import KubeVersion
from intentc.render.meta import metadata
from intentc.render.model import SHARED_ANNOTATION

GROUP = "intentc.dev"
VERSION = "v1alpha1"
PLURAL = "intents"
NAME = f"{PLURAL}.{GROUP}"
INTENT_SCHEMA = "intent.schema.json"

_DROP = {"title", "examples", "$schema", "additionalProperties", "uniqueItems", "$defs", "const",
         "exclusiveMinimum", "oneOf", "type"}
_SCALARS = {"string", "number", "integer"}

# The domain rules of passes/domain.py that span fields, as the API server checks them.
RULES: dict[tuple[str, ...], list[dict[str, str]]] = {
    ("spec", "action", "settings"): [{
        "rule": "!has(self.kv_cache) || !(self.kv_cache in ['recycle', 'evict']) || !has(self.seq_len) "
                "|| self.seq_len <= 4096",
        "message": 'kv_cache "recycle" or "evict" is not allowed with seq_len above 4096: '
                   'sequences longer than 4096 tokens use "retain"',
    }],
    ("spec", "action"): [{
        "rule": "self.kind == 'serve' || (!has(self.replicas) && !has(self.port))",
        "message": "replicas and port apply to serve actions only",
    }],
}


def _resolve(node: dict[str, Any], here: str) -> tuple[dict[str, Any], str]:
    """Inline one `$ref` (its siblings override the target, as in 2020-12); returns the node
    and the file its own `$ref`s are relative to."""
    while "$ref" in node:
        target, _, pointer = node["$ref"].partition("#")
        file = target or here
        found: Any = load_schema(file)
        for part in pointer.strip("/").split("/"):
            if part:
                found = found[part]
        merged = {**found, **{k: v for k, v in node.items() if k != "$ref"}}
        node, here = merged, file
    return node, here


def structural(node: dict[str, Any], here: str = INTENT_SCHEMA, path: tuple[str, ...] = (),
               cel: bool = True) -> dict[str, Any]:
    node, here = _resolve(node, here)
    out: dict[str, Any] = {}
    if "description" in node:
        out["description"] = node["description"]
    if "oneOf" in node:
        types = {b.get("type") for b in (_resolve(b, here)[0] for b in node["oneOf"])}
        if types <= _SCALARS:
            out["x-kubernetes-int-or-string"] = True
        else:
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif "type" in node:
        t = node["type"]
        if isinstance(t, list):
            out["nullable"] = "null" in t
            t = next(x for x in t if x != "null")
        out["type"] = t
    elif "const" in node:
        out["type"] = "string" if isinstance(node["const"], str) else "boolean"
    for key, value in node.items():
        if key in _DROP or key in ("description", "properties", "items"):
            continue
        out[key] = copy.deepcopy(value)
    if "const" in node:
        out["enum"] = [node["const"]]
    if isinstance(node.get("exclusiveMinimum"), (int, float)) and not isinstance(node["exclusiveMinimum"], bool):
        out["minimum"] = node["exclusiveMinimum"]
        out["exclusiveMinimum"] = True
    if "properties" in node:
        out["properties"] = {k: structural(v, here, (*path, k), cel) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = structural(node["items"], here, (*path, "[]"), cel)
        if node.get("uniqueItems") and out["items"].get("type") in _SCALARS:
            out["x-kubernetes-list-type"] = "set"
    if cel and path in RULES:
        out["x-kubernetes-validations"] = copy.deepcopy(RULES[path])
    return out


STATUS = {
    "type": "object",
    "description": "What the intentc daemon observed: written by it, never by a user.",
    "properties": {
        "phase": {"type": "string", "description": ("Pending, Running, Fallback (a fallback variant runs), Scheduled (a CronJob), "
                                                   "Succeeded or Failed (intentc/daemon/phase.py).")},
        "placement": {"type": "string", "description": "The planned nodes and GPU indices."},
        "commit": {"type": "string", "description": "The commit the intent's objects were applied from."},
        "lastHeal": {"type": "string", "format": "date-time", "description": "When drift was last healed."},
        "forecast": {
            "type": "object",
            "description": ("The live forecast (intentc/forecast): the intent's phase, the plan's times, the "
                            "cluster's so far and the expected rest, re-planned on the live cluster."),
            "properties": {
                "phase": {"type": "string", "description": "Queued, Admitted, Running, Succeeded, Failed or Blocked."},
                "plannedStart": {"type": "string", "format": "date-time", "nullable": True},
                "plannedEnd": {"type": "string", "format": "date-time", "nullable": True},
                "actualStart": {"type": "string", "format": "date-time", "nullable": True},
                "actualEnd": {"type": "string", "format": "date-time", "nullable": True},
                "etaStart": {"type": "string", "format": "date-time", "nullable": True,
                             "description": "When it starts (or started)."},
                "eta": {"type": "string", "format": "date-time", "nullable": True,
                        "description": "When it is expected to end (or ended); null: open-ended or blocked."},
                "behindSeconds": {"type": "integer", "nullable": True,
                                  "description": "How far behind the plan (negative: ahead)."},
                "behind": {"type": "string", "description": "behindSeconds as a duration: +15m behind, -5m ahead."},
                "reason": {"type": "string", "description": "Why it is blocked, re-placed or late."},
                "drift": {"type": "boolean", "description": "Schedule drift: running past its declared duration."},
                "delayedBy": {"type": "array", "items": {"type": "string"}},
                "pushes": {"type": "array", "items": {"type": "string"}},
                "plannedNodes": {"type": "array", "items": {"type": "string"}},
                "nodes": {"type": "array", "items": {"type": "string"}},
            },
        },
        "batchRecommendation": {
            "type": "object",
            "description": ("A serving intent's batch recommended from live metrics (intentc/tune, docs/sizing.md): "
                            "published, never applied; `intentc tune` writes it into the intent files."),
            "properties": {
                "batch": {"type": "integer", "minimum": 1, "description": "The recommended batch."},
                "current": {"type": "integer", "minimum": 1,
                            "description": "The batch the workload runs: its fixed batch, or the plan's size "
                                           "for `batch: auto`."},
                "direction": {"type": "string", "enum": ["grow", "shrink", "hold"]},
                "reason": {"type": "string", "description": "What the observations showed, and the rule applied."},
                "auto": {"type": "boolean", "description": "The intent declares `batch: auto`."},
                "observations": {"type": "integer", "minimum": 0,
                                 "description": "Observations at the current batch the recommendation is made from."},
                "observedAt": {"type": "string", "format": "date-time", "description": "The last observation."},
            },
        },
    },
}


def intent_crd(version: KubeVersion) -> dict[str, Any]:
    spec_schema = structural(load_schema(INTENT_SCHEMA)["properties"]["spec"], path=("spec",))
    columns = [
        {"name": "Tenant", "type": "string", "jsonPath": ".spec.context.tenant"},
        {"name": "Action", "type": "string", "jsonPath": ".spec.action.kind"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.forecast.phase"},
        {"name": "Start", "type": "string", "jsonPath": ".status.forecast.etaStart"},
        {"name": "ETA", "type": "string", "jsonPath": ".status.forecast.eta"},
        {"name": "Behind", "type": "string", "jsonPath": ".status.forecast.behind"},
        {"name": "Workload", "type": "string", "jsonPath": ".status.phase", "priority": 1},
        {"name": "Placement", "type": "string", "jsonPath": ".status.placement", "priority": 1},
        {"name": "Commit", "type": "string", "jsonPath": ".status.commit", "priority": 1},
        {"name": "Batch", "type": "integer", "jsonPath": ".status.batchRecommendation.current", "priority": 1},
        {"name": "Recommended", "type": "integer", "jsonPath": ".status.batchRecommendation.batch", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": metadata(NAME, annotations={SHARED_ANNOTATION: "cluster"}),
        "spec": {
            "group": GROUP,
            "names": {"kind": "Intent", "listKind": "IntentList", "plural": PLURAL, "singular": "intent",
                      "categories": ["intentc"]},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": load_schema(INTENT_SCHEMA)["description"],
                    "required": ["spec"],
                    "properties": {"spec": spec_schema, "status": STATUS},
                }},
            }],
        },
    }
