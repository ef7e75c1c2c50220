"""Property tests: when schema-diff says "compatible", no document is broken.

Random old schemas for one property, each mutated into a new one (keywords
removed, changed or added: loosenings and tightenings mixed), are compared.
When intentc's verdict is compatible (no finding above INFO), no generated
value that the old schema accepts may be rejected by the new one; when it
is ERR, the counter-example it reports must really be valid before and
invalid after.  Values come from a generic JSON strategy over a small
domain (so many of them hit the schemas' bounds), checked with the
reference validator (`jsonschema`), independently of intentc's own search.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from intentc.diff.schema_verdict import compare_schemas
from intentc.diff.schema_rules import Level

NAMES = ["x", "y", "ab", "abcd"]
small_ints = st.integers(-3, 12)
scalars = st.one_of(st.none(), st.booleans(), small_ints, st.sampled_from([0.5, 2.5, -1.5, 10.0]),
                    st.text(alphabet="abxy", max_size=5))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(NAMES), inner, max_size=4)), max_leaves=8)

KEYWORDS: dict[str, Any] = {
    "type": st.sampled_from(["integer", "number", "string", "array", "object", ["string", "integer"], "null"]),
    "minimum": small_ints, "maximum": small_ints, "exclusiveMinimum": small_ints, "exclusiveMaximum": small_ints,
    "multipleOf": st.sampled_from([1, 2, 3, 0.5]),
    "minLength": st.integers(0, 4), "maxLength": st.integers(0, 4),
    "pattern": st.sampled_from(["^a", "^[ab]+$", "b$", "^(a|b)"]),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
    "minProperties": st.integers(0, 3), "maxProperties": st.integers(0, 3),
    "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    "dependentRequired": st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES), max_size=2,
                                                                          unique=True), max_size=2),
    "propertyNames": st.builds(lambda n: {"maxLength": n}, st.integers(1, 4)),
    "additionalProperties": st.booleans(),
    "enum": st.lists(scalars, min_size=1, max_size=4),
    "const": scalars,
}


def leaf() -> Any:
    return st.dictionaries(st.sampled_from(sorted(KEYWORDS)), st.just(None), max_size=3).flatmap(
        lambda keys: st.fixed_dictionaries({k: KEYWORDS[k] for k in keys}))


schemas = st.recursive(leaf(), lambda inner: st.one_of(
    st.builds(lambda a, b: {**a, "properties": b}, leaf(), st.dictionaries(st.sampled_from(NAMES), inner,
                                                                           max_size=2)),
    st.builds(lambda a, b: {**a, "items": b}, leaf(), inner),
    st.builds(lambda a, kw, bs: {**a, kw: bs}, leaf(), st.sampled_from(["anyOf", "allOf", "oneOf"]),
              st.lists(inner, min_size=1, max_size=2)),
    st.builds(lambda a, b: {**a, "not": b}, leaf(), inner),
), max_leaves=4)


@st.composite
def pairs(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    old = draw(schemas)
    keep = draw(st.sets(st.sampled_from(sorted(old)))) if old else set()
    new = {k: v for k, v in old.items() if k in keep}
    new.update(draw(leaf()))
    return old, new


def document_schema(a: Any) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.test/t.schema.json",
            "type": "object", "properties": {"spec": {"type": "object", "properties": {"a": a}}}}


def _valid(schema: Any, value: Any) -> bool:
    return bool(Draft202012Validator(document_schema(schema)).is_valid({"spec": {"a": value}}))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), st.lists(values, min_size=30, max_size=30))
def test_compatible_verdicts_break_no_document(pair: tuple[Any, Any], docs: list[Any]) -> None:
    old, new = pair
    findings = compare_schemas({"t.json": document_schema(old)}, {"t.json": document_schema(new)}, sample=False)
    level = max((f.severity for f in findings), key=lambda lvl: lvl.rank, default=Level.INFO)
    if level is Level.INFO:
        broken = [v for v in docs if _valid(old, v) and not _valid(new, v)]
        assert not broken, f"said compatible, but {broken[0]!r} was valid before and is invalid after"
    for f in findings:
        if f.example and f.uses and f.uses[0].data_path == ("spec", "a"):
            assert _valid(old, f.example[0]) and not _valid(new, f.example[0]), f.rule.name


@settings(max_examples=150, deadline=None)
@given(schemas)
def test_an_unchanged_schema_has_no_finding(schema: Any) -> None:
    assert compare_schemas({"t.json": document_schema(schema)}, {"t.json": document_schema(schema)}) == []
