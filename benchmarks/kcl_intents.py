"""The benchmark's intents as KCL: one `.k` file per intent plus a schema with
the checks of `schemas/intent.schema.json`, for the side-by-side figures of
benchmarks/bench_frontend.py.

The `.k` files are written from the IR `intentc check` builds of the very
files it is timed on, so both tools see the same intents.  The KCL schema
mirrors the JSON Schema clause for clause: required fields, closed
vocabularies (action kind, kv_cache, precision, SLA, scope), integer ranges
(batch 1..2048, seq_len 1..32768, GPU count >= 1, port 1..65535), the
DNS-1123 pattern of names and produced datasets, and the Kubernetes quantity
pattern of cpu / memory.  KCL has no cross-file name resolution or dependency
graph, so like check-jsonschema it does schema validation only.
"""

from __future__ import annotations

import json
from pathlib import Path

from intentc.ir import Intent

SCHEMA = r'''
import regex

NAME = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
QUANTITY = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$"

schema Metadata:
    name: str
    check:
        regex.match(name, NAME), "metadata.name must be a DNS-1123 label"

schema Trigger:
    after?: [str]
    schedule?: str
    check:
        (after != None) != (schedule != None), "a trigger has exactly one of after and schedule"
        after == None or len(after) >= 1, "after lists at least one intent"
        all a in after or [] {len(a) >= 1}, "an intent name is not empty"
        schedule == None or len(schedule) >= 1, "schedule is not empty"

schema Batch:
    auto?: bool
    max?: int
    check:
        max == None or 1 <= max <= 2048, "batch max is 1..2048"

schema Settings:
    batch?: int | Batch
    seq_len?: int
    kv_cache?: "recycle" | "retain" | "evict"
    precision?: "fp32" | "tf32" | "fp16" | "bf16" | "fp8" | "int8" | "int4"
    check:
        batch == None or typeof(batch) != "int" or 1 <= batch <= 2048, "batch is 1..2048"
        seq_len == None or 1 <= seq_len <= 32768, "seq_len is 1..32768"

schema Action:
    kind: "batch" | "training" | "inference" | "serve"
    image: str
    model?: str
    command?: [str]
    replicas?: int
    port?: int
    settings?: Settings
    check:
        len(image) >= 1, "image is not empty"
        model == None or len(model) >= 1, "model is not empty"
        replicas == None or replicas >= 1, "replicas is at least 1"
        port == None or 1 <= port <= 65535, "port is 1..65535"

schema Context:
    tenant: str
    tags?: [str]
    drift?: "report" | "heal" | "rollback"
    check:
        len(tenant) >= 1, "tenant is not empty"
        all t in tags or [] {len(t) >= 1}, "a tag is not empty"

schema Gpus:
    count: int
    product?: str
    memory?: str
    within?: "nvlink" | "node" | "rack" | "zone"
    prefer?: "nvlink" | "node" | "rack" | "zone"
    check:
        count >= 1, "GPU count is at least 1"
        product == None or len(product) >= 1, "product is not empty"
        memory == None or regex.match(memory, QUANTITY), "GPU memory is a quantity"

schema Constraints:
    cpu?: str
    memory?: str
    gpus?: Gpus
    sla?: "P0" | "P1" | "P2" | "P3"
    tolerance?: float
    duration?: str
    check:
        cpu == None or regex.match(cpu, QUANTITY), "cpu is a quantity"
        memory == None or regex.match(memory, QUANTITY), "memory is a quantity"
        tolerance == None or 0 < tolerance <= 1, "tolerance is in (0, 1]"
        duration == None or regex.match(duration, r"^([0-9]+(\.[0-9]+)?(ms|s|m|h|d))+$"), "duration"

schema Spec:
    trigger: "push" | "manual" | Trigger
    action: Action
    context: Context
    constraints?: Constraints
    consumes?: [str]
    produces?: [str]
    check:
        all c in consumes or [] {len(c) >= 1}, "a consumed dataset name is not empty"
        all p in produces or [] {regex.match(p, NAME)}, "a produced dataset is a DNS-1123 label"

schema Intent:
    apiVersion: "intentc.dev/v1alpha1"
    kind: "Intent"
    metadata: Metadata
    spec: Spec
'''


def _value(v: object) -> str:
    """A KCL literal (JSON strings, numbers and lists are valid KCL)."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(v)


def _spec(i: Intent) -> dict[str, object]:
    t = i.trigger
    trigger: object = (t.kind if t.kind in ("push", "manual") else
                       {"after": [r.name for r in t.after]} if t.kind == "after" else {"schedule": t.schedule})
    a = i.action
    action: dict[str, object] = {"kind": a.kind, "image": a.image}
    if a.model is not None:
        action["model"] = a.model
    if a.settings is not None:
        s = a.settings
        settings: dict[str, object] = {}
        if s.batch is not None:
            settings["batch"] = (s.batch.size if not s.batch.auto else
                                 {"auto": True, **({"max": s.batch.max} if s.batch.max else {})})
        for key in ("seq_len", "kv_cache", "precision"):
            if getattr(s, key) is not None:
                settings[key] = getattr(s, key)
        action["settings"] = settings
    spec: dict[str, object] = {"trigger": trigger, "action": action,
                               "context": {"tenant": i.context.tenant.name, "tags": list(i.context.tags)}}
    c = i.constraints
    cons: dict[str, object] = {k: getattr(c, k) for k in ("cpu", "memory", "sla") if getattr(c, k) is not None}
    if c.gpus is not None:
        cons["gpus"] = {"count": c.gpus.count, **{k: getattr(c.gpus, k) for k in ("product", "within")
                                                   if getattr(c.gpus, k) is not None}}
    spec["constraints"] = cons
    spec["consumes"] = [r.name for r in i.consumes]
    spec["produces"] = [r.name for r in i.produces]
    return spec


def write_kcl(intents: tuple[Intent, ...], directory: Path) -> list[Path]:
    """`schema.k` and one `<intent>.k` per intent; returns them all, schema first."""
    directory.mkdir(parents=True, exist_ok=True)
    files = [directory / "schema.k"]
    files[0].write_text(SCHEMA)
    for n, i in enumerate(intents):
        body = {"apiVersion": "intentc.dev/v1alpha1", "kind": "Intent",
                "metadata": {"name": i.name}, "spec": _spec(i)}
        f = directory / f"{i.name}.k"
        f.write_text(f"intent_{n} = Intent {_value(body)}\n")
        files.append(f)
    return files
