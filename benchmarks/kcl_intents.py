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
        (after != Undefined and after != None) != (schedule != Undefined and schedule != None), "a trigger has exactly one of after and schedule"
        len(after) >= 1 if after != Undefined and after != None, "after lists at least one intent"
        all a in after {len(a) >= 1} if after != Undefined and after != None, "an intent name is not empty"
        len(schedule) >= 1 if schedule != Undefined and schedule != None, "schedule is not empty"

schema Batch:
    auto?: bool
    max?: int
    check:
        1 <= max <= 2048 if max != Undefined and max != None, "batch max is 1..2048"

schema Settings:
    batch?: int | Batch
    seq_len?: int
    kv_cache?: "recycle" | "retain" | "evict"
    precision?: "fp32" | "tf32" | "fp16" | "bf16" | "fp8" | "int8" | "int4"
    check:
        1 <= int(batch) <= 2048 if typeof(batch) == "int", "batch is 1..2048"
        1 <= seq_len <= 32768 if seq_len != Undefined and seq_len != None, "seq_len is 1..32768"

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
        len(model) >= 1 if model != Undefined and model != None, "model is not empty"
        replicas >= 1 if replicas != Undefined and replicas != None, "replicas is at least 1"
        1 <= port <= 65535 if port != Undefined and port != None, "port is 1..65535"

schema Context:
    tenant: str
    tags?: [str]
    drift?: "report" | "heal" | "rollback"
    check:
        len(tenant) >= 1, "tenant is not empty"
        all t in tags {len(t) >= 1} if tags != Undefined and tags != None, "a tag is not empty"

schema Gpus:
    count: int
    product?: str
    memory?: str
    within?: "nvlink" | "node" | "rack" | "zone"
    prefer?: "nvlink" | "node" | "rack" | "zone"
    check:
        count >= 1, "GPU count is at least 1"
        len(product) >= 1 if product != Undefined and product != None, "product is not empty"
        regex.match(memory, QUANTITY) if memory != Undefined and memory != None, "GPU memory is a quantity"

schema Constraints:
    cpu?: str
    memory?: str
    gpus?: Gpus
    sla?: "P0" | "P1" | "P2" | "P3"
    tolerance?: float
    duration?: str
    check:
        regex.match(cpu, QUANTITY) if cpu != Undefined and cpu != None, "cpu is a quantity"
        regex.match(memory, QUANTITY) if memory != Undefined and memory != None, "memory is a quantity"
        0 < tolerance <= 1 if tolerance != Undefined and tolerance != None, "tolerance is in (0, 1]"
        regex.match(duration, r"^([0-9]+(\.[0-9]+)?(ms|s|m|h|d))+$") if duration != Undefined and duration != None, "duration"

schema Spec:
    trigger: "push" | "manual" | Trigger
    action: Action
    context: Context
    constraints?: Constraints
    consumes?: [str]
    produces?: [str]
    check:
        all c in consumes {len(c) >= 1} if consumes != Undefined and consumes != None, "a consumed dataset name is not empty"
        all p in produces {regex.match(p, NAME)} if produces != Undefined and produces != None, "a produced dataset is a DNS-1123 label"

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
    """A KCL module: `kcl.mod`, the schema package `schema/intent.k`, and one
    `<intent>.k` per intent importing it; returns the intent files (the program)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kcl.mod").write_text('[package]\nname = "bench"\nedition = "v0.9.0"\nversion = "0.0.1"\n')
    (directory / "schema").mkdir(exist_ok=True)
    (directory / "schema" / "intent.k").write_text(SCHEMA)
    files = []
    for n, i in enumerate(intents):
        body = {"apiVersion": "intentc.dev/v1alpha1", "kind": "Intent",
                "metadata": {"name": i.name}, "spec": _spec(i)}
        f = directory / f"{i.name}.k"
        f.write_text(f"import schema\n\nintent_{n} = schema.Intent {_value(body)}\n")
        files.append(f)
    return files
