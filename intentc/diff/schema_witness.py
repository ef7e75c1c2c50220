"""Counter-examples: a value the base schema accepts and the head rejects.

Where `schema_prove` cannot prove a change compatible, the change is
"maybe"-breaking until a witness settles it.  Two searches, cheapest first:

1. boundary candidates read off both schemas' keywords (each bound and its
   neighbours, each listed value, strings and arrays at each length limit,
   repeated items, objects with and without each named property, an unknown
   property) - exact for the keyword rules, and instant;
2. sampling with hypothesis-jsonschema: values generated from the base
   fragment, filtered by the real 2020-12 validator, until one fails the
   head.  Derandomized with no example database and a fixed example budget,
   so the same schemas always give the same (shrunk) counter-example and the
   search is bounded.

A witness is only ever reported after both validators agree on it, so an
ERR that rests on a witness cannot be a false alarm.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable, Iterator, TypeGuard

from intentc.diff.schema_inline import contains_marker, to_draft7
from intentc.diff.schema_prove import ARRAY_KW, OBJECT_KW, conj, lst, merge_all, mp, raw_types, valid
from intentc.diff.schema_refs import Json, canonical_json

SAMPLES = 150                 # examples hypothesis tries per undecided change (a bounded time each)
MAX_CANDIDATES = 4000
Predicate = Callable[[Json], bool]


def _num(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _subschemas(s: Json) -> Iterator[dict[str, Any]]:
    """`s` and the schemas it combines (they constrain the same instance)."""
    if not isinstance(s, dict):
        return
    yield s
    for kw in ("allOf", "anyOf", "oneOf"):
        for sub in s.get(kw, []) if isinstance(s.get(kw), list) else []:
            yield from _subschemas(sub)
    for kw in ("not", "if", "then", "else"):
        yield from _subschemas(s.get(kw))
    for sub in (s.get("dependentSchemas") or {}).values() if isinstance(s.get("dependentSchemas"), dict) else ():
        yield from _subschemas(sub)


def _scalars(schemas: list[Json]) -> list[Json]:
    out: list[Json] = []
    for s in schemas:
        for d in _subschemas(s):
            if "const" in d:
                out.append(d["const"])
            if isinstance(d.get("enum"), list):
                out.extend(d["enum"])
            for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                v = d.get(kw)
                if _num(v):
                    out.extend([v, v - 1, v + 1, v - 0.5, v + 0.5, math.floor(v), math.ceil(v)])
            m = d.get("multipleOf")
            if _num(m) and m > 0:
                out.extend([m, 2 * m, 3 * m, m / 2, m * 1.5])
                for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                    if _num(d.get(kw)):
                        k = math.floor(d[kw] / m)
                        out.extend([k * m, (k + 1) * m, (k - 1) * m])
            for kw in ("minLength", "maxLength"):
                if _num(d.get(kw)):
                    for n in (d[kw] - 1, d[kw], d[kw] + 1):
                        if 0 <= n <= 1000:
                            out.extend(["a" * int(n), "0" * int(n), "A" * int(n)])
            if isinstance(d.get("propertyNames"), dict):
                out.extend(_scalars([d["propertyNames"]]))
    return out + [None, True, False, 0, 1, -1, 0.5, -0.5, 2, 10, "", "a", "ab", "A", "0"]


def _value_for(schemas: list[Json], depth: int) -> list[Json]:
    """A few values the first schema accepts (for object properties and array items)."""
    if depth > 3:
        return [None]
    first = schemas[0] if schemas else True
    pool = [v for v in _candidates(schemas, depth + 1) if valid(first, v)]
    return pool[:5] if pool else [None]


@contextmanager
def _isolated() -> Iterator[None]:
    """Hypothesis as a library call, not a test run: its files (charmap cache) go to
    intentc's cache directory instead of a `.hypothesis/` in the user's repository, and
    constants it would mine from whatever local modules happen to be imported (newer
    Hypothesis releases do) are left out, so a counter-example depends on the schemas
    alone - the same in the CLI, in a test process or in a daemon."""
    import importlib

    from hypothesis import configuration

    from intentc.pipeline.loading import default_cache_dir

    try:
        providers: Any = importlib.import_module("hypothesis.internal.conjecture.providers")
    except ImportError:          # older Hypothesis: no provider module, no local constants
        providers = None

    home = os.path.join(default_cache_dir() or os.path.join(tempfile.gettempdir(), "intentc"), "hypothesis")
    previous_home = getattr(configuration, "__hypothesis_home_directory", None)
    mine = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    configuration.set_hypothesis_home_dir(home)
    if mine is not None and hasattr(providers, "Constants"):
        setattr(providers, "_get_local_constants", lambda: providers.Constants())
    if isinstance(cache, dict):
        cache.clear()
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous_home)
        if mine is not None:
            setattr(providers, "_get_local_constants", mine)
        if isinstance(cache, dict):
            cache.clear()


@lru_cache(maxsize=512)
def name_for(pattern: str) -> str | None:
    """The simplest string matching `pattern` (a property name `patternProperties` governs)."""
    from hypothesis import find, settings
    from hypothesis import strategies as st
    try:
        with warnings.catch_warnings(), _isolated():
            warnings.simplefilter("ignore")
            found: str = find(st.from_regex(pattern), lambda _: True,
                              settings=settings(derandomize=True, database=None, max_examples=10))
            return found
    except Exception:          # a pattern Python's re cannot read
        return None


def _names(schemas: list[Json]) -> list[str]:
    names: list[str] = []
    for s in schemas:
        for d in _subschemas(s):
            for pattern in mp(d, "patternProperties"):
                name = name_for(pattern)
                if name is not None:
                    names.append(name)
            for kw in ("properties", "dependentRequired", "dependentSchemas"):
                if isinstance(d.get(kw), dict):
                    names.extend(d[kw])
                    if kw == "dependentRequired":
                        for need in d[kw].values():
                            if isinstance(need, list):
                                names.extend(x for x in need if isinstance(x, str))
            if isinstance(d.get("required"), list):
                names.extend(x for x in d["required"] if isinstance(x, str))
    return sorted(set(names))


def _prop_schema(schemas: list[Json], name: str) -> list[Json]:
    out: list[Json] = []
    for s in schemas:
        for d in _subschemas(s):
            if isinstance(d.get("properties"), dict) and name in d["properties"]:
                out.append(d["properties"][name])
    return out or [True]


def _candidates(schemas: list[Json], depth: int = 0) -> list[Json]:
    out = _scalars(schemas)
    items_from = [d.get(kw) for s in schemas for d in _subschemas(s) for kw in ("contains", "items")
                  if d.get(kw) not in (None, True)]
    items_from += [p[0] for s in schemas for d in _subschemas(s)
                   if isinstance(p := d.get("prefixItems"), list) and p]
    elems = _value_for(items_from or [True], depth) + [0, "a", None]
    lengths = {0, 1, 2, 3}
    for s in schemas:
        for d in _subschemas(s):
            for kw in ("minItems", "maxItems", "minContains", "maxContains"):
                if _num(d.get(kw)) and d[kw] <= 64:
                    lengths |= {max(int(d[kw]) + k, 0) for k in (-1, 0, 1)}
    for length in sorted(lengths):
        for e in elems:
            out.append([e] * length)                     # repeated items (uniqueItems)
        out.append(list(range(length)))
        out.append([elems[0]] + list(range(1, length)) if length else [])
    names = _names(schemas)
    if depth <= 3:
        values = {n: _value_for(_prop_schema(schemas, n), depth) for n in names}
        base_obj = {n: values[n][0] for n in names}
        out.append({})
        out.append(dict(base_obj))
        out.append({**base_obj, "zz-unknown": 0})
        out.append({"zz-unknown": 0})
        for n in names:
            for v in values[n]:
                out.append({n: v})
                out.append({**base_obj, n: v})
            out.append({k: v for k, v in base_obj.items() if k != n})
        sizes = {0, 1, 2, 3}
        for s in schemas:
            for d in _subschemas(s):
                for kw in ("minProperties", "maxProperties"):
                    if _num(d.get(kw)) and d[kw] <= 64:
                        sizes |= {max(int(d[kw]) + k, 0) for k in (-1, 0, 1)}
        pool = names + [f"zz-{i}" for i in range(max(sizes) + 1)]
        for size in sorted(sizes):
            out.append({k: base_obj.get(k, 0) for k in pool[:size]})
            out.append({f"zz-{i}": 0 for i in range(size)})
    return out


def candidates(schemas: list[Json]) -> list[Json]:
    """Distinct boundary values, in a fixed order."""
    seen: set[str] = set()
    out: list[Json] = []
    for v in _candidates(schemas):
        key = type(v).__name__ + canonical_json(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
        if len(out) >= MAX_CANDIDATES:
            break
    return out


def _strategy(s: Json, depth: int = 0) -> Any:
    """A hypothesis strategy for (a superset of) the values of a 2020-12 fragment.

    Scalars come from hypothesis-jsonschema; objects and arrays are built
    here, because its object generator relies on a Hypothesis internal that
    newer Hypothesis releases changed.  Anything not modelled (dependencies,
    `not`, `if`) is left to the validity filter the caller applies."""
    import hypothesis.strategies as st
    from hypothesis_jsonschema import from_schema

    if s is False:
        return st.nothing()
    d: dict[str, Any] = s if isinstance(s, dict) else {}
    if depth > 4 or not {k for k in d if k not in ("not", "if", "then", "else")}:
        return _any_value()          # unconstrained here: small values keep every draw cheap
    if "const" in d:
        return st.just(d["const"])
    if isinstance(d.get("enum"), list) and d["enum"]:
        return st.sampled_from(d["enum"])
    for kw in ("anyOf", "oneOf"):
        if isinstance(d.get(kw), list) and d[kw]:
            rest = {k: v for k, v in d.items() if k != kw}
            return st.one_of([_strategy(conj(rest, b), depth + 1) for b in d[kw]])
    if isinstance(d.get("allOf"), list):
        merged = merge_all(d)
        d = merged if merged is not None else {k: v for k, v in d.items() if k != "allOf"}
    types = raw_types(d)
    parts = []
    if "object" in types:
        parts.append(_object_strategy(d, depth))
    if "array" in types:
        parts.append(_array_strategy(d, depth))
    scalar = sorted(types - {"object", "array"})
    if scalar:
        keep = {k: v for k, v in d.items() if k not in OBJECT_KW | ARRAY_KW and k not in ("not", "if", "then", "else")}
        parts.append(from_schema(to_draft7({**keep, "type": scalar})))
    return st.one_of(parts) if parts else st.nothing()


@lru_cache(maxsize=1)
def _any_value() -> Any:
    import hypothesis.strategies as st
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-20, 20), st.floats(-20, 20, allow_nan=False),
                        st.text(max_size=6))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                        max_leaves=5)


def _object_strategy(d: dict[str, Any], depth: int) -> Any:
    import hypothesis.strategies as st

    props = mp(d, "properties")
    req = [x for x in d.get("required", []) if isinstance(x, str)] if isinstance(d.get("required"), list) else []
    add = d.get("additionalProperties", True)
    required = {k: _strategy(props.get(k, add), depth + 1) for k in req}
    optional = {k: _strategy(v, depth + 1) for k, v in sorted(props.items()) if k not in req}
    fixed = st.fixed_dictionaries(required, optional=optional)
    if add is False:
        return fixed
    names = _strategy({**d["propertyNames"], "type": "string"}, depth + 1) \
        if isinstance(d.get("propertyNames"), dict) else st.text(max_size=8)
    extra = st.dictionaries(names, _strategy(add, depth + 1), max_size=3)
    return st.tuples(fixed, extra).map(lambda t: {**t[1], **t[0]})


def _array_strategy(d: dict[str, Any], depth: int) -> Any:
    import hypothesis.strategies as st

    lo = min(int(d["minItems"]), 32) if _num(d.get("minItems")) else 0
    hi = min(int(d["maxItems"]) if _num(d.get("maxItems")) else lo + 5, lo + 5)
    prefix = lst(d, "prefixItems")
    head = st.tuples(*[_strategy(p, depth + 1) for p in prefix]).map(list)
    rest = st.lists(_strategy(d.get("items", True), depth + 1), min_size=max(lo - len(prefix), 0),
                    max_size=max(hi - len(prefix), 0),
                    unique_by=canonical_json if d.get("uniqueItems") is True else None)
    return st.tuples(head, rest).map(lambda t: t[0] + t[1])


# Base fragments for which no generated draw was valid (an unsatisfiable or, for the
# generator, unreachable base): the same derandomized draws would come again, so a
# later search on the same base is skipped.  Bounded, and an optimisation only.
_BARREN: dict[str, bool] = {}


def _sample(base: Json, found: Predicate) -> tuple[bool, Json]:
    """(True, value) for the first value hypothesis finds satisfying `found`, shrunk."""
    key = canonical_json(base)
    if contains_marker(base) or key in _BARREN:
        return False, None
    from hypothesis import HealthCheck, Phase, find, settings

    config = settings(max_examples=SAMPLES, derandomize=True, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck), phases=(Phase.generate, Phase.shrink),
                      report_multiple_bugs=False)
    fertile = False

    def condition(v: Json) -> bool:
        nonlocal fertile
        if not valid(base, v):
            return False
        fertile = True
        return found(v)
    try:
        with warnings.catch_warnings(), _isolated():
            warnings.simplefilter("ignore")
            # no filter: every draw counts as one of the SAMPLES examples, which bounds the time
            return True, find(_strategy(base), condition, settings=config)
    except Exception:          # no example (NoSuchExample), unsatisfiable, an unsupported schema
        if not fertile and len(_BARREN) < 4096:
            _BARREN[key] = True
        return False, None


def witness(base: Json, head: Json, also: Predicate = lambda v: True,
            extra: tuple[Json, ...] = (), sample: bool = True) -> tuple[bool, Json]:
    """A value valid under `base`, invalid under `head`, for which `also` holds:
    (True, value), or (False, None) when none was found."""
    def found(v: Json) -> bool:
        return valid(base, v) and not valid(head, v) and also(v)

    for v in candidates([base, head, *extra]):
        if found(v):
            return True, v
    if not sample:
        return False, None
    return _sample(base, found)

