"""The compiled IR plumbing (`intentc/_compactfast.pyx`) against the Python
functions it stands in for: pickling and unpickling a node, interning its
strings in place, making a `Span`, packing positions.  Same values, same
types, same positions, the same strings interned, and pickles that load on
an install with either implementation."""

from __future__ import annotations

import pickle
import random
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intentc import compact, diagnostics, ir
from intentc.compact import Compact
from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile
from tests.ir_shape import shape
from tests.speedups import assert_built_where_required, needs

ROOT = Path(__file__).parents[1]
FAST = compact.FAST
needs_fast = needs(FAST, "intentc._compactfast")


def test_the_compiled_plumbing_is_built_where_ci_requires_it() -> None:
    assert_built_where_required(FAST, "intentc._compactfast")


def programs() -> list[Any]:
    """The IR of every intent file in the repository and of 40 benchmark intents (both surfaces)."""
    from benchmarks.bench_frontend import dsl_intent, yaml_intent
    rng = random.Random(3)
    texts = [(str(p), p.read_text(encoding="utf-8")) for d in ("intents", "examples", "tests")
             for p in sorted((ROOT / d).rglob("*")) if p.suffix in (".intent", ".yaml", ".yml") and p.is_file()]
    texts += [(f"b{i}.intent", dsl_intent(i, rng)) for i in range(20)]
    texts += [(f"b{i}.yaml", yaml_intent(i, rng)) for i in range(20)]
    out = []
    for path, text in texts:
        result = parse_source(SourceFile(path, text))
        out.append((result.program, result.diagnostics))
    return out


def nodes(value: Any) -> list[Compact]:
    found: list[Compact] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(v)
        elif isinstance(v, Compact):
            found.append(v)
            stack.extend(getattr(v, n) for k in type(v).__mro__ for n in getattr(k, "__slots__", ()))
    return found


def interned_fields(value: Any) -> list[tuple[str, bool]]:
    """Each `INTERNED` string field below `value`, and whether it is the interned object."""
    return [(name, sys.intern(v) is v) for n in nodes(value) for name in type(n).INTERNED
            if isinstance(v := getattr(n, name), str)]


def fresh_strings(value: Any) -> Any:
    """`value` rebuilt with a new, uninterned object for every string field, through the
    Python reference (``cls(*fields)``)."""
    if isinstance(value, tuple):
        return tuple(fresh_strings(v) for v in value)
    if isinstance(value, Compact) and not isinstance(value, ir.FieldSpans):
        values = [fresh_strings(v) for v in compact._fields_py(value)]
        return type(value)(*values)
    if type(value) is str and value:
        return "".join(list(value))        # equal, not the same object
    return value


@pytest.fixture(scope="module")
def corpus() -> list[Any]:
    found = programs()
    assert len(found) > 40
    return found


@needs_fast
def test_a_pickle_loads_the_same_through_either_implementation(corpus: list[Any]) -> None:
    for value in corpus:
        blob = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        assert b"_compactfast" not in blob, "a pickle must name the Python module's functions"
        compiled = pickle.loads(blob)
        saved = compact._build, ir._field_spans
        try:
            compact._build, ir._field_spans = compact._build_py, ir._field_spans_py   # an install without it
            reference = pickle.loads(blob)
        finally:
            compact._build, ir._field_spans = saved
        assert shape(compiled) == shape(reference) == shape(value)
        assert interned_fields(compiled) == interned_fields(reference)
        assert all(ok for _, ok in interned_fields(compiled))
        for a, b in zip(nodes(compiled), nodes(reference)):
            if isinstance(a, ir.FieldSpans) and a.keys:
                assert a.keys is b.keys is ir._KEYS[a.keys]      # one tuple per set of keys, either way


@needs_fast
def test_pickles_made_by_the_python_reduce_load_the_same(corpus: list[Any]) -> None:
    saved = Compact.__reduce__
    try:
        Compact.__reduce__ = compact._reduce_py           # type: ignore[method-assign]
        blobs = [pickle.dumps(v, pickle.HIGHEST_PROTOCOL) for v in corpus]
    finally:
        Compact.__reduce__ = saved                        # type: ignore[method-assign]
    for value, blob in zip(corpus, blobs):
        assert shape(pickle.loads(blob)) == shape(value)


@needs_fast
def test_interning_in_place_matches_the_python_walk(corpus: list[Any]) -> None:
    for program, _ in corpus:
        a, b = fresh_strings(program), fresh_strings(program)
        assert not interned_fields(a) or not all(ok for _, ok in interned_fields(a))
        compact.intern_strings(a)
        compact._intern_strings_py(b)
        assert shape(a) == shape(b) == shape(program)
        assert interned_fields(a) == interned_fields(b)
        assert all(ok for _, ok in interned_fields(a))


@needs_fast
def test_build_checks_the_number_of_values() -> None:
    ref = ir.Ref("a", "f", 1, 2, 3, 4)
    with pytest.raises(TypeError):
        compact._build(ir.Ref, ("a", "f", 1))
    assert shape(compact._build(ir.Ref, compact._fields_py(ref))) == shape(ref)


@needs_fast
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8), st.integers(-5, 2**33), st.integers(0, 70000), st.integers(0, 10), st.integers(0, 10))
def test_make_span_matches(file: str, line: int, column: int, end_line: int, end_column: int) -> None:
    a = diagnostics.make_span(file, line, column, end_line, end_column)
    b = diagnostics.make_span_py(file, line, column, end_line, end_column)
    assert type(a) is type(b) is diagnostics.Span
    assert a == b == diagnostics.Span(file, line, column, end_line, end_column)
    assert hash(a) == hash(b)
    assert pickle.loads(pickle.dumps(a)) == a


@needs_fast
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 70000), st.integers(-3, 2**32 + 3), st.booleans(), st.none()),
                max_size=24).map(lambda xs: xs[:len(xs) // 4 * 4]))
def test_packing_positions_matches_struct(flat: list[Any]) -> None:
    try:
        expected: bytes | None = ir._packed_py(flat)
    except (struct.error, TypeError):
        expected = None
    got = FAST.pack_positions(flat)
    if got is not None:
        assert got == expected
    else:       # handed back: the reference decides (and raises for what it cannot pack)
        assert not all(type(v) is int and 0 <= v <= 0xFFFFFFFF for v in flat)


def compiled_init_classes() -> list[type]:
    return sorted(compact.GENERATED_INITS, key=lambda c: c.__qualname__)


@needs_fast
def test_the_node_classes_get_the_compiled_init() -> None:
    names = {c.__name__ for c in compiled_init_classes()}
    assert {"Intent", "Tenant", "Ref", "Action", "Constraints", "Diagnostic", "FieldSpans"} <= names


@needs_fast
def test_the_compiled_init_builds_what_the_generated_one_builds(corpus: list[Any]) -> None:
    seen: dict[type, int] = {}
    for program, diags in corpus:
        for node in nodes(program) + nodes(diags):
            cls = type(node)
            generated = compact.GENERATED_INITS.get(cls)
            if generated is None or seen.get(cls, 0) >= 20:
                continue
            seen[cls] = seen.get(cls, 0) + 1
            values = compact._fields_py(node)
            names = compact._init_spec(cls)[0]
            for args, kwargs in [(values, {}), ((), dict(zip(names, values))),
                                 (values[:1], dict(zip(names[1:], values[1:])))]:
                a, b = object.__new__(cls), object.__new__(cls)
                cls.__init__(a, *args, **kwargs)
                generated(b, *args, **kwargs)
                assert shape(a) == shape(b) == shape(node)
    assert len(seen) >= 8


@needs_fast
@pytest.mark.parametrize("cls", compiled_init_classes(), ids=lambda c: c.__name__)
def test_defaults_and_bad_arguments_as_the_generated_init(cls: type) -> None:
    generated = compact.GENERATED_INITS[cls]
    names, kinds, _ = compact._init_spec(cls)
    required = {n: f"v{i}" for i, (n, k) in enumerate(zip(names, kinds)) if k == 0}
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), required),                                       # every default and factory
        ((), {}),                                             # missing arguments (unless none is required)
        (tuple(range(len(names) + 1)), {}),                   # one too many
        ((), {**required, "no_such_field": 1}),
    ]
    if names:
        calls.append((("x",), {names[0]: "y"}))              # a value given twice
    for args, kwargs in calls:
        a, b = object.__new__(cls), object.__new__(cls)
        outcome = []
        for init, obj in ((cls.__init__, a), (generated, b)):
            try:
                init(obj, *args, **kwargs)
                outcome.append(shape(obj))
            except TypeError:
                outcome.append(TypeError)
        assert outcome[0] == outcome[1], (args, kwargs)
    if not required:
        x, y = cls(), object.__new__(cls)
        generated(y)
        for n, k in zip(names, kinds):                        # a factory makes a fresh value each time
            if k == 2 and isinstance(getattr(x, n), (list, dict, set)):
                assert getattr(x, n) is not getattr(y, n)


positions = st.tuples(st.integers(0, 70000), st.integers(0, 70000), st.integers(0, 10), st.integers(0, 10))


@needs_fast
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["", "name", "tier", "quota_gpus", "label:a", "z"]), positions, max_size=6),
       st.booleans())
def test_field_spans_are_packed_as_the_python_path_packs_them(mapping: dict[str, tuple[int, int, int, int]],
                                                             as_spans: bool) -> None:
    values: dict[str, Any] = ({k: diagnostics.Span("f", *v) for k, v in mapping.items()} if as_spans else mapping)
    make = ir.FieldSpans.located if as_spans else ir.FieldSpans.pack
    compiled = make("f", values)
    saved, ir._FAST = ir._FAST, None
    try:
        reference = make("f", values)
    finally:
        ir._FAST = saved
    assert type(compiled) is type(reference) is ir.FieldSpans
    assert (compiled.file, compiled.keys, compiled.positions) == (reference.file, reference.keys, reference.positions)
    assert compiled.keys is reference.keys                     # one tuple per set of keys
    assert shape(compiled) == shape(reference)


@needs_fast
def test_field_spans_hand_back_what_they_cannot_pack() -> None:
    assert FAST.field_spans(ir.FieldSpans, "f", {"a": (1, 2, 3)}, {}) is None
    assert FAST.field_spans(ir.FieldSpans, "f", {"a": (1, 2, 3, -1)}, {}) is None
    with pytest.raises(struct.error):
        ir.FieldSpans.pack("f", {"a": (1, 2, 3, -1)})
