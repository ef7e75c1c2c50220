"""Check a manifest against the Kubernetes OpenAPI schema carried by the `kubernetes` client.

The client's generated model classes are the reference.  Two checks, both
strict:

1. a recursive walk over each model's `attribute_map` / `openapi_types`:
   every key must be a field's JSON name (so `backoff_limit` is rejected
   although pydantic would accept it as an alias), every value must have
   the declared type (quantities are strings: `nvidia.com/gpu: 8` is what
   a 1.20 server rejects in server-side apply), required fields present;
2. pydantic validation of the top-level model (`extra="forbid"`, strict
   types), as a second opinion on everything the walk does not model.

The schema is the client's (release 1.37), i.e. a superset of older
servers; fields a given server version lacks are the renderer's business
(`intentc.render.capabilities`) and are tested there.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import pydantic
from kubernetes.client import models

_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")


# Versions the client no longer ships models for, checked against their
# successor (the fields intentc renders are the same in both).
_SUCCESSOR = {("batch/v1beta1", "CronJob"): "batch/v1",
              ("policy/v1beta1", "PodDisruptionBudget"): "policy/v1",
              ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): "autoscaling/v2"}


def model_class(api_version: str, kind: str) -> type[Any] | None:
    """The generated model for an apiVersion/kind, e.g. batch/v1 Job → V1Job."""
    api_version = _SUCCESSOR.get((api_version, kind), api_version)
    group, _, version = api_version.rpartition("/")
    ver = version[:1].upper() + version[1:]
    prefix = "".join(p[:1].upper() + p[1:] for p in group.split(".")[0].split("-")) if group else "Core"
    for name in (f"{prefix}{ver}{kind}", f"{ver}{kind}"):
        cls = getattr(models, name, None)
        if cls is not None:
            return cls
    return None


def _check_primitive(value: Any, type_name: str, path: str) -> list[str]:
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "datetime": isinstance(value, str),
        "date": isinstance(value, str),
        "object": True,
    }[type_name]
    return [] if ok else [f"{path}: expected {type_name}, got {type(value).__name__} {value!r}"]


def _walk(value: Any, type_name: str, path: str) -> list[str]:
    if type_name in ("str", "int", "bool", "float", "datetime", "date", "object"):
        return _check_primitive(value, type_name, path)
    m = _LIST.match(type_name)
    if m:
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        return [e for i, item in enumerate(value) for e in _walk(item, m[1], f"{path}[{i}]")]
    m = _DICT.match(type_name)
    if m:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {type(value).__name__}"]
        return [e for k, item in value.items() for e in
                ([f"{path}: key {k!r} is not a string"] if not isinstance(k, str) else [])
                + _walk(item, m[1], f"{path}.{k}")]
    cls = getattr(models, type_name, None)
    if cls is None:
        return [f"{path}: unknown schema type {type_name}"]
    return _walk_model(value, cls, path)


def _walk_model(value: Any, cls: type[Any], path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({cls.__name__}), got {type(value).__name__}"]
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    errors = []
    for key, item in value.items():
        attr = by_json.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: unknown field (not in {cls.__name__})")
            continue
        errors.extend(_walk(item, cls.openapi_types[attr], f"{path}.{key}"))
    for attr, info in cls.model_fields.items():
        if info.is_required() and cls.attribute_map.get(attr, attr) not in value:
            errors.append(f"{path}.{cls.attribute_map.get(attr, attr)}: required field missing")
    return errors


def validate_manifest(body: Mapping[str, Any]) -> list[str]:
    """Human-readable schema violations of one object; empty when valid."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return ["apiVersion and kind must be strings"]
    cls = model_class(api_version, kind)
    if cls is None:
        return [f"no schema for {api_version} {kind}"]
    errors = _walk_model(dict(body), cls, kind)
    if not errors:
        try:
            cls.model_validate(dict(body))
        except pydantic.ValidationError as e:
            errors = [f"{kind}.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
    return errors
