"""The schema-diff verdict, held against the JSON Schema 2020-12 specification.

Each row is an old/new schema for one property (`spec.a`) and the verdict
the specification implies, written from the keyword's definition in
JSON Schema Validation 2020-12, not from what intentc prints:

* ``BREAK``: some value valid under the old schema is invalid under the new.
  The row names such a value (`witness`); the test first checks it with the
  reference validator (`jsonschema`), so a wrong row fails on its own, then
  requires an ERR finding.
* ``OK``: every value valid before stays valid (the new schema only admits
  more, or the same); intentc must prove it: no finding above INFO.
* ``SAFE``: the same, but beyond what a keyword-level proof can see (e.g. two
  regular expressions for one language); it must not be ERR.

Both loosening and tightening are listed for every keyword.  Row ids are
"keyword: what changes".
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from intentc.diff.schema_verdict import compare_schemas
from intentc.diff.schema_rules import Level

BREAK, OK, SAFE = "break", "ok", "safe"
I, N, S = {"type": "integer"}, {"type": "number"}, {"type": "string"}
A, O = {"type": "array"}, {"type": "object"}
NONE: Any = object()         # no witness (OK / SAFE rows)


def _(base: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {**base, **kw}


ROWS: list[tuple[str, Any, Any, str, Any]] = [
    # ---- numbers: minimum / exclusiveMinimum / maximum / exclusiveMaximum as one interval (6.2.2-6.2.5)
    ("minimum: raised", _(I, minimum=0), _(I, minimum=5), BREAK, 0),
    ("minimum: lowered", _(I, minimum=5), _(I, minimum=0), OK, NONE),
    ("minimum: added", I, _(I, minimum=0), BREAK, -1),
    ("minimum: removed", _(I, minimum=0), I, OK, NONE),
    ("maximum: lowered", _(N, maximum=10), _(N, maximum=5), BREAK, 7.5),
    ("maximum: raised", _(N, maximum=5), _(N, maximum=10), OK, NONE),
    ("maximum: added", N, _(N, maximum=10), BREAK, 11),
    ("maximum: removed", _(N, maximum=10), N, OK, NONE),
    ("exclusiveMaximum -> maximum, same value: admits one more", {"exclusiveMaximum": 10}, {"maximum": 10}, OK,
     NONE),
    ("maximum -> exclusiveMaximum, same value: rejects the bound", {"maximum": 10}, {"exclusiveMaximum": 10},
     BREAK, 10),
    ("exclusiveMinimum -> minimum, same value", _(N, exclusiveMinimum=0), _(N, minimum=0), OK, NONE),
    ("minimum -> exclusiveMinimum, same value", _(N, minimum=0), _(N, exclusiveMinimum=0), BREAK, 0),
    ("exclusiveMaximum: lowered", _(N, exclusiveMaximum=10), _(N, exclusiveMaximum=5), BREAK, 6),
    ("exclusiveMaximum: raised", _(N, exclusiveMaximum=5), _(N, exclusiveMaximum=10), OK, NONE),
    ("exclusiveMinimum: raised", _(N, exclusiveMinimum=0), _(N, exclusiveMinimum=1), BREAK, 0.5),
    ("exclusiveMinimum: lowered", _(N, exclusiveMinimum=1), _(N, exclusiveMinimum=0), OK, NONE),
    ("integer: exclusiveMaximum 10 -> maximum 9 is the same set", _(I, exclusiveMaximum=10), _(I, maximum=9), OK,
     NONE),
    ("integer: maximum 9 -> exclusiveMaximum 10 is the same set", _(I, maximum=9), _(I, exclusiveMaximum=10), OK,
     NONE),
    ("integer: minimum 0.5 -> minimum 1 is the same set", _(I, minimum=0.5), _(I, minimum=1), OK, NONE),
    ("number: maximum 9 -> exclusiveMaximum 10 admits more", _(N, maximum=9), _(N, exclusiveMaximum=10), OK, NONE),
    ("number: exclusiveMaximum 10 -> maximum 9 rejects 9.5", _(N, exclusiveMaximum=10), _(N, maximum=9), BREAK,
     9.5),
    ("both bounds written, the stricter one moves", _(N, maximum=10, exclusiveMaximum=8),
     _(N, maximum=10, exclusiveMaximum=10), OK, NONE),
    ("interval shifted up", _(I, minimum=0, maximum=10), _(I, minimum=5, maximum=20), BREAK, 2),
    ("interval widened both sides", _(I, minimum=0, maximum=10), _(I, minimum=-5, maximum=20), OK, NONE),
    ("bounds on a value that is a string are ignored", S, _(S, maximum=3), OK, NONE),
    ("maximum added to an untyped value", {}, {"maximum": 3}, BREAK, 4),
    # ---- multipleOf (6.2.1)
    ("multipleOf: 4 -> 2 (every multiple of 4 is even)", _(I, multipleOf=4), _(I, multipleOf=2), OK, NONE),
    ("multipleOf: 2 -> 4", _(I, multipleOf=2), _(I, multipleOf=4), BREAK, 2),
    ("multipleOf: added", I, _(I, multipleOf=3), BREAK, 1),
    ("multipleOf: removed", _(I, multipleOf=3), I, OK, NONE),
    ("multipleOf: 1 added to integers", I, _(I, multipleOf=1), OK, NONE),
    ("multipleOf: 0.5 -> 0.25", _(N, multipleOf=0.5), _(N, multipleOf=0.25), OK, NONE),
    ("multipleOf: 0.25 -> 0.5", _(N, multipleOf=0.25), _(N, multipleOf=0.5), BREAK, 0.25),
    ("multipleOf: 6 -> 4 (6 is no multiple of 4)", _(I, multipleOf=6), _(I, multipleOf=4), BREAK, 6),
    # ---- strings (6.3)
    ("minLength: raised", _(S, minLength=1), _(S, minLength=3), BREAK, "ab"),
    ("minLength: lowered", _(S, minLength=3), _(S, minLength=1), OK, NONE),
    ("minLength: added", S, _(S, minLength=1), BREAK, ""),
    ("minLength: removed", _(S, minLength=2), S, OK, NONE),
    ("maxLength: lowered", _(S, maxLength=5), _(S, maxLength=2), BREAK, "abc"),
    ("maxLength: raised", _(S, maxLength=2), _(S, maxLength=5), OK, NONE),
    ("maxLength: added", S, _(S, maxLength=3), BREAK, "abcd"),
    ("maxLength: removed", _(S, maxLength=3), S, OK, NONE),
    ("pattern: added", S, _(S, pattern="^[a-z]+$"), BREAK, "A"),
    ("pattern: removed", _(S, pattern="^[a-z]+$"), S, OK, NONE),
    ("pattern: narrowed", _(S, pattern="^[a-z]+$"), _(S, pattern="^[a-c]+$"), BREAK, "z"),
    ("pattern: the same language spelt differently", _(S, pattern="^a"), _(S, pattern="^(a|a)"), SAFE, NONE),
    ("pattern: widened", _(S, pattern="^[a-c]+$"), _(S, pattern="^[a-z]+$"), SAFE, NONE),
    ("format is an annotation (6.3 / 7.2.1)", S, _(S, format="email"), OK, NONE),
    # ---- arrays (6.4, 10.3.1)
    ("minItems: raised", _(A, minItems=1), _(A, minItems=2), BREAK, [1]),
    ("minItems: lowered", _(A, minItems=2), _(A, minItems=1), OK, NONE),
    ("minItems: added", A, _(A, minItems=1), BREAK, []),
    ("maxItems: lowered", _(A, maxItems=3), _(A, maxItems=1), BREAK, [1, 2]),
    ("maxItems: raised", _(A, maxItems=1), _(A, maxItems=3), OK, NONE),
    ("maxItems: removed", _(A, maxItems=1), A, OK, NONE),
    ("uniqueItems: false -> true", _(A, uniqueItems=False), _(A, uniqueItems=True), BREAK, [1, 1]),
    ("uniqueItems: added", A, _(A, uniqueItems=True), BREAK, ["x", "x"]),
    ("uniqueItems: true -> false", _(A, uniqueItems=True), _(A, uniqueItems=False), OK, NONE),
    ("uniqueItems: added where at most one item", _(A, maxItems=1), _(A, maxItems=1, uniqueItems=True), OK, NONE),
    ("items: narrowed", _(A, items=N), _(A, items=I), BREAK, [0.5]),
    ("items: widened", _(A, items=I), _(A, items=N), OK, NONE),
    ("items: added", A, _(A, items=S), BREAK, [1]),
    ("items: removed", _(A, items=S), A, OK, NONE),
    ("prefixItems: first item narrowed", _(A, prefixItems=[N]), _(A, prefixItems=[I]), BREAK, [0.5]),
    ("prefixItems: first item widened", _(A, prefixItems=[I]), _(A, prefixItems=[N]), OK, NONE),
    ("prefixItems: added", A, _(A, prefixItems=[I]), BREAK, ["a"]),
    ("prefixItems: removed", _(A, prefixItems=[I]), A, OK, NONE),
    ("items: false after prefixItems (closes the tuple)", _(A, prefixItems=[I]), _(A, prefixItems=[I], items=False),
     BREAK, [1, 2]),
    ("contains: narrowed", _(A, contains=I), _(A, contains=_(I, minimum=5)), BREAK, [1]),
    ("contains: added", A, _(A, contains=I), BREAK, []),
    ("contains: removed", _(A, contains=I), A, OK, NONE),
    ("maxContains: added", _(A, contains={"const": 1}), _(A, contains={"const": 1}, maxContains=1), BREAK, [1, 1]),
    ("minContains: raised", _(A, contains=I, minContains=1), _(A, contains=I, minContains=2), BREAK, [1]),
    ("unevaluatedProperties: false added", _(O, properties={"x": I}),
     _(O, properties={"x": I}, unevaluatedProperties=False), BREAK, {"y": 1}),
    # ---- objects (6.5, 10.3.2)
    ("minProperties: added", O, _(O, minProperties=1), BREAK, {}),
    ("minProperties: raised", _(O, minProperties=1), _(O, minProperties=2), BREAK, {"x": 1}),
    ("minProperties: lowered", _(O, minProperties=2), _(O, minProperties=1), OK, NONE),
    ("minProperties: removed", _(O, minProperties=2), O, OK, NONE),
    ("maxProperties: added", O, _(O, maxProperties=1), BREAK, {"x": 1, "y": 2}),
    ("maxProperties: lowered", _(O, maxProperties=3), _(O, maxProperties=2), BREAK, {"x": 1, "y": 2, "z": 3}),
    ("maxProperties: raised", _(O, maxProperties=2), _(O, maxProperties=3), OK, NONE),
    ("maxProperties: removed", _(O, maxProperties=2), O, OK, NONE),
    ("minProperties: added, implied by required", _(O, required=["x"]), _(O, required=["x"], minProperties=1), OK,
     NONE),
    ("required: added", _(O, properties={"x": I}), _(O, properties={"x": I}, required=["x"]), BREAK, {}),
    ("required: removed", _(O, properties={"x": I}, required=["x"]), _(O, properties={"x": I}), OK, NONE),
    ("required: a new required property", O, _(O, properties={"y": S}, required=["y"]), BREAK, {}),
    ("dependentRequired: added", O, _(O, dependentRequired={"x": ["y"]}), BREAK, {"x": 1}),
    ("dependentRequired: grows", _(O, dependentRequired={"x": ["y"]}), _(O, dependentRequired={"x": ["y", "z"]}),
     BREAK, {"x": 1, "y": 2}),
    ("dependentRequired: shrinks", _(O, dependentRequired={"x": ["y", "z"]}), _(O, dependentRequired={"x": ["y"]}),
     OK, NONE),
    ("dependentRequired: removed", _(O, dependentRequired={"x": ["y"]}), O, OK, NONE),
    ("propertyNames: added", O, _(O, propertyNames={"maxLength": 3}), BREAK, {"abcd": 1}),
    ("propertyNames: removed", _(O, propertyNames={"maxLength": 3}), O, OK, NONE),
    ("propertyNames: loosened", _(O, propertyNames={"maxLength": 3}), _(O, propertyNames={"maxLength": 5}), OK,
     NONE),
    ("propertyNames: tightened", _(O, propertyNames={"maxLength": 5}), _(O, propertyNames={"maxLength": 3}),
     BREAK, {"abcd": 1}),
    ("propertyNames: added to a closed object whose names fit",
     _(O, properties={"ab": I}, additionalProperties=False),
     _(O, properties={"ab": I}, additionalProperties=False, propertyNames={"maxLength": 3}), OK, NONE),
    ("additionalProperties: closed", _(O, properties={"x": I}), _(O, properties={"x": I}, additionalProperties=False),
     BREAK, {"y": 1}),
    ("additionalProperties: opened", _(O, properties={"x": I}, additionalProperties=False), _(O, properties={"x": I}),
     OK, NONE),
    ("additionalProperties: schema narrowed", _(O, additionalProperties=N), _(O, additionalProperties=I), BREAK,
     {"y": 0.5}),
    ("additionalProperties: schema widened", _(O, additionalProperties=I), _(O, additionalProperties=N), OK, NONE),
    ("properties: a property's type narrowed", _(O, properties={"x": N}), _(O, properties={"x": I}), BREAK,
     {"x": 0.5}),
    ("properties: a new property on an open object constrains it", O, _(O, properties={"x": I}), BREAK, {"x": "s"}),
    ("properties: a new property on a closed object", _(O, additionalProperties=False),
     _(O, properties={"x": I}, additionalProperties=False), OK, NONE),
    ("properties: removed from a closed object", _(O, properties={"x": I}, additionalProperties=False),
     _(O, additionalProperties=False), BREAK, {"x": 1}),
    ("properties: removed from an open object", _(O, properties={"x": I}), O, SAFE, NONE),
    ("patternProperties: narrowed", _(O, patternProperties={"^x": N}), _(O, patternProperties={"^x": I}), BREAK,
     {"x1": 0.5}),
    ("patternProperties: added", O, _(O, patternProperties={"^x": I}), BREAK, {"x1": "s"}),
    ("dependentSchemas: added", O, _(O, dependentSchemas={"x": {"required": ["y"]}}), BREAK, {"x": 1}),
    # ---- const, enum, type (6.1)
    ("const: added", S, _(S, const="a"), BREAK, "b"),
    ("const: changed", {"const": "a"}, {"const": "b"}, BREAK, "a"),
    ("const: removed", {"const": "a"}, {}, OK, NONE),
    ("const -> enum containing it", {"const": "a"}, {"enum": ["a", "b"]}, OK, NONE),
    ("enum -> const of one of its values", {"enum": ["a", "b"]}, {"const": "a"}, BREAK, "b"),
    ("enum: value added", {"enum": ["a"]}, {"enum": ["a", "b"]}, OK, NONE),
    ("enum: value removed", {"enum": ["a", "b"]}, {"enum": ["a"]}, BREAK, "b"),
    ("enum: added", S, _(S, enum=["a"]), BREAK, "b"),
    ("enum: removed", _(S, enum=["a"]), S, OK, NONE),
    ("enum: reordered", {"enum": ["a", "b"]}, {"enum": ["b", "a"]}, OK, NONE),
    ("enum -> type that holds every value", {"enum": [1, 2]}, _(I, minimum=1, maximum=2), OK, NONE),
    ("enum -> type missing a value", {"enum": [1, "x"]}, I, BREAK, "x"),
    ("type: narrowed", {"type": ["string", "integer"]}, S, BREAK, 1),
    ("type: widened", S, {"type": ["string", "integer"]}, OK, NONE),
    ("type: integer -> number", I, N, OK, NONE),
    ("type: number -> integer", N, I, BREAK, 0.5),
    ("type: integer -> number with multipleOf 1", I, _(N, multipleOf=1), OK, NONE),
    ("type: changed", S, I, BREAK, "a"),
    ("type: added", {}, S, BREAK, 1),
    ("type: removed", S, {}, OK, NONE),
    # ---- combinators (10.2)
    ("allOf: added to a property that had none", I, _(I, allOf=[{"minimum": 0}]), BREAK, -1),
    ("allOf: removed", _(I, allOf=[{"minimum": 0}]), I, OK, NONE),
    ("allOf: a branch added", {"allOf": [I]}, {"allOf": [I, {"minimum": 0}]}, BREAK, -1),
    ("allOf: a branch removed", {"allOf": [I, {"minimum": 0}]}, {"allOf": [I]}, OK, NONE),
    ("anyOf: added to a property that had none", {}, {"anyOf": [S, I]}, BREAK, None),
    ("anyOf: a branch removed", {"anyOf": [S, I]}, {"anyOf": [S]}, BREAK, 1),
    ("anyOf: a branch added", {"anyOf": [S]}, {"anyOf": [S, I]}, OK, NONE),
    ("anyOf: removed", {"anyOf": [S, I]}, {}, OK, NONE),
    ("anyOf: a branch narrowed", {"anyOf": [S, N]}, {"anyOf": [S, I]}, BREAK, 0.5),
    ("anyOf: a branch widened", {"anyOf": [S, I]}, {"anyOf": [S, N]}, OK, NONE),
    ("anyOf: a branch narrowed where another branch still covers it", {"anyOf": [_(I, maximum=5), I]},
     {"anyOf": [_(I, maximum=3), I]}, SAFE, NONE),
    ("allOf: a branch narrowed", {"allOf": [I, {"maximum": 10}]}, {"allOf": [I, {"maximum": 5}]}, BREAK, 7),
    ("oneOf: a branch narrowed", {"oneOf": [S, N]}, {"oneOf": [S, I]}, BREAK, 0.5),
    ("patternProperties: removed", _(O, patternProperties={"^x": I}), O, OK, NONE),
    ("oneOf: added to a property that had none", N, _(N, oneOf=[{"minimum": 0}, {"maximum": 10}]), BREAK, 5),
    ("oneOf: a branch removed", {"oneOf": [S, I]}, {"oneOf": [S]}, BREAK, 1),
    ("oneOf: a disjoint branch added", {"oneOf": [S]}, {"oneOf": [S, I]}, OK, NONE),
    ("oneOf: an overlapping branch added", {"oneOf": [S]}, {"oneOf": [S, {"minLength": 1}]}, BREAK, "a"),
    ("oneOf -> anyOf of the same branches", {"oneOf": [S, I]}, {"anyOf": [S, I]}, OK, NONE),
    ("oneOf: a branch loosened so that it overlaps another", {"oneOf": [_(I, maximum=5), _(I, minimum=10)]},
     {"oneOf": [_(I, maximum=5), _(I, minimum=3)]}, BREAK, 4),
    ("anyOf: a property narrowed inside a discriminated branch",
     {"anyOf": [_(O, properties={"k": {"const": "a"}, "v": I}, required=["k"]),
                _(O, properties={"k": {"const": "b"}}, required=["k"])]},
     {"anyOf": [_(O, properties={"k": {"const": "a"}, "v": _(I, maximum=3)}, required=["k"]),
                _(O, properties={"k": {"const": "b"}}, required=["k"])]}, BREAK, {"k": "a", "v": 4}),
    ("oneOf: a discriminated branch added", {"oneOf": [_(O, properties={"k": {"const": "a"}}, required=["k"])]},
     {"oneOf": [_(O, properties={"k": {"const": "a"}}, required=["k"]),
                _(O, properties={"k": {"const": "b"}}, required=["k"])]}, OK, NONE),
    ("anyOf -> the same types as a type list", {"anyOf": [S, I]}, {"type": ["string", "integer"]}, OK, NONE),
    ("a type list -> anyOf of the same types", {"type": ["string", "integer"]}, {"anyOf": [S, I]}, OK, NONE),
    ("null removed from an anyOf", {"anyOf": [S, {"type": "null"}]}, S, BREAK, None),
    ("a bound moved from the parent's allOf into the property (same meaning)",
     _(O, properties={"x": I}, allOf=[{"properties": {"x": {"maximum": 5}}}]), _(O, properties={"x": _(I, maximum=5)}),
     SAFE, NONE),
    ("a bound moved from the property into the parent's allOf (same meaning)", _(O, properties={"x": _(I, maximum=5)}),
     _(O, properties={"x": I}, allOf=[{"properties": {"x": {"maximum": 5}}}]), SAFE, NONE),
    ("not: added, rejecting a value that was valid", I, _(I, **{"not": {"const": 3}}), BREAK, 3),
    ("not: added, rejecting only values that were invalid", I, _(I, **{"not": S}), OK, NONE),
    ("not: removed", _(I, **{"not": {"const": 3}}), I, OK, NONE),
    ("not: widened (rejects more)", {"not": {"const": 3}}, {"not": {"enum": [3, 4]}}, BREAK, 4),
    ("not: narrowed (rejects less)", {"not": {"enum": [3, 4]}}, {"not": {"const": 3}}, SAFE, NONE),
    ("if/then: added", O, _(O, **{"if": {"required": ["x"]}, "then": {"required": ["y"]}}), BREAK, {"x": 1}),
    ("if/then: removed", _(O, **{"if": {"required": ["x"]}, "then": {"required": ["y"]}}), O, OK, NONE),
    ("if/then/else: else tightened", _(I, **{"if": {"minimum": 0}, "then": {}, "else": {}}),
     _(I, **{"if": {"minimum": 0}, "then": {}, "else": {"minimum": -5}}), BREAK, -6),
    ("then without if has no effect (10.2.2.2)", I, _(I, then={"const": 0}), OK, NONE),
    # ---- $ref to changed definitions (8.2.3.1)
    ("$ref: the definition narrowed", {"$ref": "#/$defs/wide"}, {"$ref": "#/$defs/narrow"}, BREAK, 7),
    ("$ref: the definition widened", {"$ref": "#/$defs/narrow"}, {"$ref": "#/$defs/wide"}, OK, NONE),
    ("$ref: to an equal definition elsewhere", {"$ref": "#/$defs/wide"}, {"$ref": "#/$defs/wide2"}, OK, NONE),
    ("$ref: inlined with the same meaning", {"$ref": "#/$defs/wide"}, _(I, maximum=10), OK, NONE),
]

DEFS = {"wide": _(I, maximum=10), "wide2": _(I, maximum=10), "narrow": _(I, maximum=5)}


def document_schema(a: Any) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.test/thing.schema.json", "type": "object",
            "properties": {"kind": {"const": "Thing"}, "spec": {"type": "object", "properties": {"a": a}}},
            "$defs": DEFS}


def verdict(old: Any, new: Any, sample: bool = True) -> Level:
    findings = compare_schemas({"thing.schema.json": document_schema(old)},
                               {"thing.schema.json": document_schema(new)}, sample=sample)
    return max((f.severity for f in findings), key=lambda lvl: lvl.rank, default=Level.INFO)


def test_the_table_is_large_and_covers_both_directions() -> None:
    assert len(ROWS) >= 100
    assert len({r[0] for r in ROWS}) == len(ROWS)
    assert sum(r[3] == BREAK for r in ROWS) >= 40 and sum(r[3] != BREAK for r in ROWS) >= 40


@pytest.mark.parametrize("name,old,new,expected,value", ROWS, ids=[r[0] for r in ROWS])
def test_verdict(name: str, old: Any, new: Any, expected: str, value: Any) -> None:
    if expected == BREAK:
        # the row itself, by the reference validator: the witness is valid before and invalid after
        def check(schema: Any) -> bool:
            return bool(Draft202012Validator(document_schema(schema)).is_valid({"spec": {"a": value}}))
        assert check(old) and not check(new), "the row's witness does not show a break"
        assert verdict(old, new) is Level.ERR
    elif expected == OK:
        assert verdict(old, new) is Level.INFO
    else:
        assert verdict(old, new) is not Level.ERR


def test_verdicts_are_deterministic() -> None:
    """Sampling is derandomized: the same schemas give the same counter-example, every run."""
    old, new = _(S, pattern="^[a-z]+$"), _(S, pattern="^[a-c]+$")
    runs = [compare_schemas({"t.json": document_schema(old)}, {"t.json": document_schema(new)}) for _ in range(3)]
    assert len({repr([(f.fingerprint, f.severity, f.example) for f in run]) for run in runs}) == 1
    assert runs[0][0].example and runs[0][0].severity is Level.ERR
