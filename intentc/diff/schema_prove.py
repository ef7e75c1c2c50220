"""Proving that a schema change admits every value it admitted before.

`implies(a, b)` answers "is every instance valid under `a` also valid under
`b`?" from the keywords of two self-contained (inlined) 2020-12 fragments.
It is *sound, not complete*: True is a proof; False only means "not proven"
and sends the change to the witness search (`schema_witness`), which either
finds a value the base accepts and the head rejects (breaking) or does not
(maybe).  Soundness rests on two moves that are always safe: dropping
constraints of `a` (a superset of `a` that fits in `b` proves `a` fits), and
checking `b` keyword by keyword, per JSON type, never dropping any of `b`'s.

Meaning, not spelling: numeric bounds are compared as intervals (for the
integer type `exclusiveMaximum: 10` is `maximum: 9`), `multipleOf` by exact
divisibility, and finite schemas (`enum`/`const`) by validating each value.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any, Iterable, TypeGuard

from jsonschema import Draft202012Validator

from intentc.diff.schema_inline import RECURSIVE, contains_marker
from intentc.diff.schema_refs import Json, canonical_json

TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
# Keywords that never change which instances are valid (2020-12: `format` is an annotation by default).
NEUTRAL = frozenset({"format", "default", "contentEncoding", "contentMediaType", "$comment", "title",
                     "description", "examples", "deprecated", "readOnly", "writeOnly", "$schema", "$id",
                     "$defs", "definitions", "$anchor"})
COMBINATORS = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
NUMBER_KW = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
STRING_KW = frozenset({"minLength", "maxLength", "pattern"})
ARRAY_KW = frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains",
                      "maxContains", "unevaluatedItems"})
OBJECT_KW = frozenset({"properties", "patternProperties", "additionalProperties", "required", "minProperties",
                       "maxProperties", "dependentRequired", "dependentSchemas", "propertyNames",
                       "unevaluatedProperties"})
GENERAL_KW = frozenset({"type", "enum", "const"})


@lru_cache(maxsize=4096)
def _validator(key: str) -> Any:
    import json
    return Draft202012Validator(json.loads(key))


def valid(schema: Json, value: Json) -> bool:
    """2020-12 validity of `value` under a self-contained fragment (a cut cycle counts as valid)."""
    try:
        return bool(_validator(canonical_json(schema)).is_valid(value))
    except Exception:          # an unresolvable marker or a broken regex: not decidable here
        return True


def lst(d: dict[str, Any], key: str) -> list[Any]:
    v = d.get(key)
    return v if isinstance(v, list) else []


def mp(d: dict[str, Any], key: str) -> dict[str, Any]:
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _dict(s: Json) -> dict[str, Any] | None:
    """None for the false schema; {} for true."""
    if s is False:
        return None
    if s is True or not isinstance(s, dict):
        return {}
    return {k: v for k, v in s.items() if k not in NEUTRAL}


def finite_values(a: dict[str, Any]) -> list[Json] | None:
    """The values `a` can take when it lists them (`const`/`enum`), else None."""
    if "const" in a:
        return [a["const"]]
    if isinstance(a.get("enum"), list):
        return list(a["enum"])
    return None


def implies(a: Json, b: Json) -> bool:
    return _implies(a, b, 0)


def _implies(a_raw: Json, b_raw: Json, depth: int) -> bool:
    if depth > 32:
        return False
    a, b = _dict(a_raw), _dict(b_raw)
    if a is None or b == {}:
        return True
    if b is None:
        return False
    if canonical_json(a) == canonical_json(b):
        return True
    if a == RECURSIVE or b == RECURSIVE:
        return False
    values = finite_values(a)
    if values is not None and not contains_marker(b):
        return all(valid(b, v) for v in values if valid(a_raw, v))
    # the head's combinators, each exactly
    if isinstance(b.get("allOf"), list):
        rest = {k: v for k, v in b.items() if k != "allOf"}
        return all(_implies(a, s, depth + 1) for s in b["allOf"]) and _implies(a, rest, depth + 1)
    # the base's alternatives: every branch (with the rest of the base) must fit
    for kw in ("anyOf", "oneOf"):
        if isinstance(a.get(kw), list) and a[kw]:
            rest = {k: v for k, v in a.items() if k != kw}
            if canonical_json(a[kw]) == canonical_json(b.get(kw)):
                brest = {k: v for k, v in b.items() if k != kw}
                if _implies(rest, brest, depth + 1):
                    return True
            if all(_implies(conj(rest, s), b, depth + 1) for s in a[kw]):
                return True
            a = rest          # dropping the alternative from the base is safe
    if isinstance(a.get("allOf"), list):
        merged = merge_all(a)
        if merged is not None and _implies(merged, b, depth + 1):
            return True
        rest = {k: v for k, v in a.items() if k != "allOf"}
        if any(_implies(conj(rest, s), b, depth + 1) for s in a["allOf"] if isinstance(s, dict)):
            return True
        a = rest
    if isinstance(b.get("anyOf"), list):
        rest = {k: v for k, v in b.items() if k != "anyOf"}
        if not _implies(a, rest, depth + 1):
            return False
        if any(_implies(a, s, depth + 1) for s in b["anyOf"]):
            return True
        kinds = sorted(raw_types(a) - ({"integer"} if "number" in raw_types(a) else set()))
        # the base split by JSON type: each part may fit a different branch
        return len(kinds) > 1 and all(any(_implies({**a, "type": t}, s, depth + 1) for s in b["anyOf"])
                                      for t in kinds)
    if isinstance(b.get("oneOf"), list):
        rest = {k: v for k, v in b.items() if k != "oneOf"}
        if not _implies(a, rest, depth + 1):
            return False
        branches = b["oneOf"]
        if canonical_json(branches) == canonical_json(a.get("oneOf")):
            return True
        for i, s in enumerate(branches):
            if _implies(a, s, depth + 1) and all(_disjoint(a, t) for j, t in enumerate(branches) if j != i):
                return True
        return False
    if "not" in b:
        rest = {k: v for k, v in b.items() if k != "not"}
        return _implies(a, rest, depth + 1) and _excludes(a, b["not"], depth)
    if "if" in b or "then" in b or "else" in b:
        rest = {k: v for k, v in b.items() if k not in ("if", "then", "else")}
        if not _implies(a, rest, depth + 1):
            return False
        same = all(canonical_json(a.get(k)) == canonical_json(b.get(k)) for k in ("if", "then", "else"))
        if same:
            return True
        if "if" not in b:
            return True                       # then/else without if are ignored (2020-12, 10.2.2)
        then_ok = _implies(a, b.get("then", True), depth + 1)
        else_ok = _implies(a, b.get("else", True), depth + 1)
        return (then_ok and else_ok) or (then_ok and _implies(a, b["if"], depth + 1)) \
            or (else_ok and _excludes(a, b["if"], depth))
    return _per_type(a, b, depth)


def conj(rest: dict[str, Any], s: Json) -> Json:
    """`rest` and `s` both hold; written as one dict when they share no keyword."""
    d = _dict(s)
    if d is None:
        return False
    if not rest:
        return d
    if not set(rest) & set(d):
        return {**rest, **d}
    return {**rest, "allOf": list(rest.get("allOf", [])) + [d]}


def merge_all(a: dict[str, Any]) -> dict[str, Any] | None:
    """allOf folded into its parent when no keyword is written twice."""
    out = {k: v for k, v in a.items() if k != "allOf"}
    for s in a["allOf"]:
        d = _dict(s)
        if d is None or set(d) & set(out):
            return None
        out.update(d)
    return out


def _types(s: dict[str, Any]) -> set[str]:
    t = s.get("type")
    if t is None:
        return set(TYPES)
    ts = {t} if isinstance(t, str) else set(x for x in t if isinstance(x, str)) if isinstance(t, list) else set(TYPES)
    if "number" in ts:
        ts.add("integer")
    return ts


def _disjoint(a: dict[str, Any], s: Json) -> bool:
    """No value satisfies both (only decided by type sets and finite values)."""
    d = _dict(s)
    if d is None:
        return True
    values = finite_values(a)
    if values is not None:
        return not any(valid(a, v) and valid(d, v) for v in values)
    values = finite_values(d)
    if values is not None:
        return not any(valid(a, v) and valid(d, v) for v in values)
    ta, td = _types(a), _types(d)
    if not ta & td:
        return True
    if ta & td == {"object"}:
        # a discriminator: a property both require, with values no one value satisfies
        both = _names(lst(a, "required")) & _names(lst(d, "required"))
        return any(_disjoint(_dict(mp(a, "properties").get(n, True)) or {},
                             mp(d, "properties").get(n, True)) for n in sorted(both))
    return False


def _names(values: list[Any]) -> set[str]:
    return {x for x in values if isinstance(x, str)}


def _excludes(a: dict[str, Any], n: Json, depth: int) -> bool:
    """No value of `a` is valid under `n` (so `not n` admits all of `a`)."""
    d = _dict(n)
    if d is None:
        return True
    if d == {}:
        return False
    values = finite_values(d)
    if values is not None and not contains_marker(a):
        return not any(valid(a, v) for v in values if valid(d, v))
    if _disjoint(a, d):
        return True
    if "not" in d and len(d) == 1:
        return _implies(a, d["not"], depth + 1)           # not not X = X
    return False


# --------------------------------------------------------------------------
# Per JSON type
# --------------------------------------------------------------------------

def _per_type(a: dict[str, Any], b: dict[str, Any], depth: int) -> bool:
    known = NUMBER_KW | STRING_KW | ARRAY_KW | OBJECT_KW | GENERAL_KW
    if set(b) - known:
        return False                      # a keyword of the head this prover does not read
    if "const" in b or "enum" in b:
        return False                      # the base is not finite (handled above): not provable
    tb = _types(b)
    for t in sorted(raw_types(a)):
        if t == "number":
            if "number" in raw_types(b):
                ok = _numbers(a, b, integer=False)
            elif "integer" in tb and _integral(a):
                ok = _numbers(a, b, integer=True)
            else:
                ok = _empty_numbers(a, integer=False)
        elif t == "integer":
            ok = (_numbers(a, b, integer=True) if "integer" in tb else _empty_numbers(a, integer=True))
        elif t not in tb:
            ok = _empty(a, t)
        elif t == "string":
            ok = _strings(a, b)
        elif t == "array":
            ok = _arrays(a, b, depth)
        elif t == "object":
            ok = _objects(a, b, depth)
        else:
            ok = True
        if not ok:
            return False
    return True


def raw_types(s: dict[str, Any]) -> set[str]:
    t = s.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set(TYPES)


def _num(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _frac(v: Any) -> Fraction:
    return Fraction(str(v)) if isinstance(v, float) else Fraction(v)


Bound = tuple[Fraction, bool] | None        # (value, exclusive)


def numeric_interval(s: dict[str, Any], integer: bool) -> tuple[Bound, Bound]:
    lo: Bound = None
    hi: Bound = None
    if _num(s.get("minimum")):
        lo = (_frac(s["minimum"]), False)
    if _num(s.get("exclusiveMinimum")):
        e = (_frac(s["exclusiveMinimum"]), True)
        lo = e if lo is None or e[0] >= lo[0] else lo
    if _num(s.get("maximum")):
        hi = (_frac(s["maximum"]), False)
    if _num(s.get("exclusiveMaximum")):
        e = (_frac(s["exclusiveMaximum"]), True)
        hi = e if hi is None or e[0] <= hi[0] else hi
    if integer:                           # the same set of integers, written with inclusive integer bounds
        if lo is not None:
            lo = (Fraction(math.floor(lo[0]) + 1), False) if lo[1] else (Fraction(math.ceil(lo[0])), False)
        if hi is not None:
            hi = (Fraction(math.ceil(hi[0]) - 1), False) if hi[1] else (Fraction(math.floor(hi[0])), False)
    return lo, hi


def lower_ok(a: Bound, b: Bound) -> bool:
    if b is None:
        return True
    if a is None:
        return False
    return a[0] > b[0] or (a[0] == b[0] and (a[1] or not b[1]))


def upper_ok(a: Bound, b: Bound) -> bool:
    if b is None:
        return True
    if a is None:
        return False
    return a[0] < b[0] or (a[0] == b[0] and (a[1] or not b[1]))


def _interval_empty(lo: Bound, hi: Bound) -> bool:
    if lo is None or hi is None:
        return False
    return lo[0] > hi[0] or (lo[0] == hi[0] and (lo[1] or hi[1]))


def _empty_numbers(a: dict[str, Any], integer: bool) -> bool:
    return _interval_empty(*numeric_interval(a, integer))


def _integral(a: dict[str, Any]) -> bool:
    m = a.get("multipleOf")
    return _num(m) and _frac(m).denominator == 1


def _numbers(a: dict[str, Any], b: dict[str, Any], integer: bool) -> bool:
    lo_a, hi_a = numeric_interval(a, integer)
    if _interval_empty(lo_a, hi_a):
        return True
    lo_b, hi_b = numeric_interval(b, integer)
    if not (lower_ok(lo_a, lo_b) and upper_ok(hi_a, hi_b)):
        return False
    mb = b.get("multipleOf")
    if _num(mb) and mb > 0:
        ma = a.get("multipleOf")
        step = _frac(ma) if _num(ma) and ma > 0 else (Fraction(1) if integer else None)
        if step is None or (step / _frac(mb)).denominator != 1:
            return False
    return True


def _empty(a: dict[str, Any], t: str) -> bool:
    """`a` admits no value of type `t` (only by its own bounds for that type)."""
    if t in ("integer", "number"):
        return _empty_numbers(a, t == "integer")
    lo, hi = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"),
              "object": ("minProperties", "maxProperties")}.get(t, ("", ""))
    return _num(a.get(lo)) and _num(a.get(hi)) and a[lo] > a[hi]


def _counts_ok(a: dict[str, Any], b: dict[str, Any], lo: str, hi: str, floor_a: int = 0,
               ceil_a: int | None = None) -> bool:
    """[lo, hi] of `a` inside that of `b`; `floor_a`/`ceil_a`: bounds `a` implies otherwise
    (its required properties; the properties of a closed object)."""
    amin = max(a[lo] if _num(a.get(lo)) else 0, floor_a)
    if _num(b.get(lo)) and amin < b[lo]:
        return False
    amax = min(x for x in (a.get(hi) if _num(a.get(hi)) else None, ceil_a) if x is not None) \
        if _num(a.get(hi)) or ceil_a is not None else None
    return not (_num(b.get(hi)) and (amax is None or amax > b[hi]))


def _strings(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if _empty(a, "string"):
        return True
    if not _counts_ok(a, b, "minLength", "maxLength"):
        return False
    return "pattern" not in b or a.get("pattern") == b["pattern"]


def _arrays(a: dict[str, Any], b: dict[str, Any], depth: int) -> bool:
    if _empty(a, "array"):
        return True
    if not _counts_ok(a, b, "minItems", "maxItems"):
        return False
    if b.get("uniqueItems") is True and a.get("uniqueItems") is not True \
            and not (_num(a.get("maxItems")) and a["maxItems"] <= 1):
        return False
    for kw in ("contains", "minContains", "maxContains", "unevaluatedItems"):
        if kw in b and canonical_json(a.get(kw)) != canonical_json(b[kw]):
            return False
    pa = lst(a, "prefixItems")
    pb = lst(b, "prefixItems")
    ia, ib = a.get("items", True), b.get("items", True)
    for i in range(max(len(pa), len(pb))):
        if _num(a.get("maxItems")) and i >= a["maxItems"]:
            break
        if not _implies(pa[i] if i < len(pa) else ia, pb[i] if i < len(pb) else ib, depth + 1):
            return False
    if _num(a.get("maxItems")) and a["maxItems"] <= max(len(pa), len(pb)):
        return True
    return _implies(ia, ib, depth + 1)


def _search(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return True


def _name_schemas(s: dict[str, Any], name: str) -> list[Json]:
    """The subschemas `s` applies to the property `name`."""
    props = mp(s, "properties")
    pats = mp(s, "patternProperties")
    out = [props[name]] if name in props else []
    matched = [v for p, v in sorted(pats.items()) if _search(p, name)]
    out += matched
    if name not in props and not matched:
        out.append(s.get("additionalProperties", True))
    return out


def _all_of(schemas: Iterable[Json]) -> Json:
    items = [s for s in schemas if s is not True and s != {}]
    if any(s is False for s in items):
        return False
    return items[0] if len(items) == 1 else ({"allOf": items} if items else True)


def _objects(a: dict[str, Any], b: dict[str, Any], depth: int) -> bool:
    if _empty(a, "object"):
        return True
    req_a, req_b = _names(lst(a, "required")), _names(lst(b, "required"))
    if not req_b <= req_a:
        return False
    props_a = mp(a, "properties")
    closed = a.get("additionalProperties") is False and not a.get("patternProperties")
    if not _counts_ok(a, b, "minProperties", "maxProperties", floor_a=len(req_a),
                      ceil_a=len(props_a) if closed else None):
        return False
    dep_a = mp(a, "dependentRequired")
    dep_b = mp(b, "dependentRequired")
    for k, need in sorted(dep_b.items()):
        if closed and k not in props_a:
            continue                      # the base never has the key: the dependency never applies
        if not isinstance(need, list) or not set(need) <= req_a | set(dep_a.get(k, [])):
            return False
    for k, s in (b.get("dependentSchemas") or {}).items():
        ds_a = (a.get("dependentSchemas") or {}).get(k)
        if not (ds_a is not None and _implies(conj(_strip_combinators(a), ds_a), s, depth + 1)) \
                and not _implies(_strip_combinators(a), s, depth + 1):
            return False
    if "unevaluatedProperties" in b and canonical_json(a.get("unevaluatedProperties")) != \
            canonical_json(b["unevaluatedProperties"]):
        return False
    if "propertyNames" in b and not _names_ok(a, b["propertyNames"], depth):
        return False
    # property values: every name either side describes, and the rest
    names = set((a.get("properties") or {})) | set((b.get("properties") or {})) | req_b
    for name in sorted(names):
        if not _implies(_all_of(_name_schemas(a, name)), _all_of(_name_schemas(b, name)), depth + 1):
            return False
    pats_a = mp(a, "patternProperties")
    pats_b = mp(b, "patternProperties")
    for p, sb in sorted(pats_b.items()):
        if p in pats_a:
            if not _implies(pats_a[p], sb, depth + 1):
                return False
        elif not _implies(a.get("additionalProperties", True), sb, depth + 1) or any(
                not _implies(sa, sb, depth + 1) for q, sa in pats_a.items()):
            return False
    add_b = b.get("additionalProperties", True)
    for q, sa in sorted(pats_a.items()):
        if q not in pats_b and not _implies(sa, add_b, depth + 1):
            return False
    return _implies(a.get("additionalProperties", True), add_b, depth + 1)


def _strip_combinators(a: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in a.items() if k not in COMBINATORS}


def _names_ok(a: dict[str, Any], names_b: Json, depth: int) -> bool:
    closed = a.get("additionalProperties") is False and not a.get("patternProperties")
    if closed:
        return all(valid(names_b, n) for n in (a.get("properties") or {}))
    names_a = a.get("propertyNames", True)
    d = _dict(names_a)
    return d is None or _implies({**d, "type": "string"} if "type" not in d else d, names_b, depth + 1)
