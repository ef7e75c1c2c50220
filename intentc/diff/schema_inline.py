"""Self-contained schema fragments: `$ref`s inlined, for deciding and sampling.

The verdict of a change ("does every value the base accepted pass the
head?") is decided on plain JSON Schema values: the prover reads keywords,
the sampler hands the fragment to hypothesis-jsonschema, and counter-examples
are checked with a validator that needs no registry.  So each side's
fragment is made self-contained first: every `$ref` is replaced by its
target (resolved in the file where it was written), and a recursive
reference is cut with a marker the prover treats as "unknown".
"""

from __future__ import annotations

from typing import Any

from intentc.diff.schema_refs import Json, Loc, SchemaSet, escape

RECURSIVE = {"$ref": "urn:intentc:recursive"}       # a cut cycle: the prover and the sampler give up on it
MAX_DEPTH = 24

# Keywords whose value is a schema / a list of schemas / a map of schemas.
SCHEMA_KEYWORDS = ("additionalProperties", "items", "contains", "propertyNames", "not", "if", "then", "else",
                   "unevaluatedItems", "unevaluatedProperties", "contentSchema")
LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
MAP_KEYWORDS = ("properties", "patternProperties", "dependentSchemas")
DROPPED = frozenset({"$defs", "definitions", "$id", "$schema", "$anchor", "$dynamicAnchor", "$comment",
                     "$vocabulary", "title", "description", "examples", "deprecated", "readOnly", "writeOnly"})


def inline(schemas: SchemaSet, raw: Json, loc: Loc, seen: tuple[Loc, ...] = ()) -> Json:
    """`raw` (written at `loc`) with every `$ref` replaced by its target."""
    if isinstance(raw, bool):
        return raw
    if not isinstance(raw, dict):
        return True
    if len(seen) > MAX_DEPTH:
        return RECURSIVE
    out: dict[str, Any] = {}
    for kw, v in raw.items():
        if kw in DROPPED or kw == "$ref":
            continue
        here = (loc[0], f"{loc[1]}/{escape(kw)}")
        if kw in SCHEMA_KEYWORDS:
            out[kw] = inline(schemas, v, here, seen)
        elif kw in LIST_KEYWORDS and isinstance(v, list):
            out[kw] = [inline(schemas, s, (here[0], f"{here[1]}/{i}"), seen) for i, s in enumerate(v)]
        elif kw in MAP_KEYWORDS and isinstance(v, dict):
            out[kw] = {k: inline(schemas, s, (here[0], f"{here[1]}/{escape(k)}"), seen) for k, s in v.items()}
        else:
            out[kw] = v
    ref = raw.get("$ref")
    if isinstance(ref, str):
        target = schemas.resolve(ref, loc)
        if target is None or target in seen:
            resolved: Json = RECURSIVE
        else:
            resolved = inline(schemas, schemas.node(target), target, seen + (target,))
        if not out:
            return resolved
        out["allOf"] = list(out.get("allOf", [])) + [resolved]
    return out


def contains_marker(schema: Json) -> bool:
    if isinstance(schema, dict):
        return schema == RECURSIVE or any(contains_marker(v) for v in schema.values())
    if isinstance(schema, list):
        return any(contains_marker(v) for v in schema)
    return False


def to_draft7(schema: Json) -> Json:
    """The same constraints in draft-07 spelling, for hypothesis-jsonschema,
    which generates from drafts 4-7.  Keywords draft-07 has no word for are
    dropped: the strategy then generates a superset, and every sample is
    checked against the real 2020-12 schema anyway."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for kw, v in schema.items():
        if kw in ("minContains", "maxContains", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
                  "dependentRequired", "dependentSchemas", "prefixItems", "items", "$dynamicRef"):
            continue
        if kw in SCHEMA_KEYWORDS:
            out[kw] = to_draft7(v)
        elif kw in LIST_KEYWORDS and isinstance(v, list):
            out[kw] = [to_draft7(s) for s in v]
        elif kw in MAP_KEYWORDS and isinstance(v, dict):
            out[kw] = {k: to_draft7(s) for k, s in v.items()}
        else:
            out[kw] = v
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(prefix, list):
        out["items"] = [to_draft7(s) for s in prefix]
        if items is not None:
            out["additionalItems"] = to_draft7(items)
    elif items is not None:
        out["items"] = to_draft7(items)
    deps: dict[str, Any] = {}
    if isinstance(schema.get("dependentRequired"), dict):
        deps.update(schema["dependentRequired"])
    if isinstance(schema.get("dependentSchemas"), dict):
        for k, s in schema["dependentSchemas"].items():
            deps[k] = to_draft7(s) if k not in deps else {"allOf": [to_draft7(s)], "required": deps[k]}
    if deps:
        out["dependencies"] = deps
    return out
