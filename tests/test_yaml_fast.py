"""The compiled YAML reader (`intentc/frontend/_yamlfast.pyx`) against the
Python one: for every text, either it hands the text back (None) or it builds
exactly what `Reader` builds -- the same values of the same types, the same
positions -- and `Reader` says the same diagnostics either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml as pyyaml
from hypothesis import given, settings
from hypothesis import strategies as st

from intentc.frontend import yaml_read
from intentc.frontend.schema import YList, YMap
from tests.speedups import assert_built_where_required, needs

ROOT = Path(__file__).parents[1]
fast = yaml_read._fast
needs_fast = needs(fast, "intentc.frontend._yamlfast")


def test_the_compiled_reader_is_built_where_ci_requires_it() -> None:
    assert_built_where_required(fast, "intentc.frontend._yamlfast")


def shape(value: Any) -> Any:
    """A value with its type and every position spelled out, for ==."""
    if isinstance(value, YMap):
        return ("map", value.at, [(k, value.pos[k], shape(v)) for k, v in value.items()])
    if isinstance(value, YList):
        return ("list", value.at, [(p, shape(v)) for p, v in zip(value.pos, value, strict=True)])
    return (type(value).__name__, value)


def pure(text: str) -> yaml_read.Reader:
    saved, yaml_read._fast = yaml_read._fast, None
    try:
        r = yaml_read.Reader("f.yaml", text)
        r.read()
        return r
    finally:
        yaml_read._fast = saved


def compiled(text: str) -> Any:
    return fast.read(text, YMap, YList, {}, 0, yaml_read._plain_value, yaml_read._INVALID, yaml_read.MAX_DEPTH)


def agree(text: str) -> bool:
    """True when the compiled reader took the text, False when it handed it back."""
    slow = pure(text)
    docs = compiled(text)
    full = yaml_read.Reader("f.yaml", text)
    full.read()
    assert [shape(d) for d in full.docs] == [shape(d) for d in slow.docs]
    assert full.diags == slow.diags
    if docs is None:
        return False
    assert not slow.diags, "the compiled reader took a text the Python reader reports"
    assert [(shape(v), at) for v, at in docs] == [(shape(v), at) for v, at in slow.docs]
    return True


TAKEN = [
    "a: 1\n",
    "",
    "# only a comment\n",
    "---\n...\n",
    "a: 1\n---\nb: [1, 2, {c: d}]\n---\n- x\n- 'y'\n- \"z\"\n",
    "a:\nb: ~\nc: null\nd: ''\n",
    "n: [0, 00, 017, 0x1F, 0b101, 1_000, -3, +4, 1.5, .inf, -.Inf, .nan, 1e3, 190:20:30]\n",
    "b: [yes, No, on, OFF, true, False, y, n]\n",
    "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\n",
    "s: |\n  line one\n  line two\nf: >\n  folded\n  text\n",
    "q: 'it''s'\nr: \"tab\\there \\u00e9\"\n",
    "\"quoted key\": 1\n'single': 2\n? explicit\n: 3\n",
    "nested:\n  - a: 1\n    b:\n      - [x, y]\n      - {}\n  - []\n",
    "unicode: héllo wörld ✓\n✓: key\n",
    "long: " + "x" * 5000 + "\n",
    "- - - - deep\n",
    "key with spaces: v\n1: int key written plainly\n",
    "<<x: not a merge key\n",
    "a:\tb\n",                              # a tab after the colon: libyaml reads it
    "a: <<\n",                              # a plain value `<<`: reported (merge tag), handed back
]

HANDED_BACK = [
    "a: 1\na: 2\n",                          # duplicate key
    "base: &b {x: 1}\nuse: *b\n",             # anchor and alias
    "a: &x 1\n",
    "<<: {a: 1}\n",                           # merge key
    "a: !!str 1\n",                           # explicit tag
    "a: !custom x\n",
    "a: ! x\n",
    "[a, b]: 1\n",                            # a list as a key
    "{a: 1}: 1\n",
    "a: [1, 2\n",                             # syntax error
    "a: 1\n b: 2\n",
    "a: 0b_\n",                               # not a value of its type
    "a: =\n",                                 # the value tag
    "a: \x07\n",                              # a character YAML does not allow
    "a: 1\n---\nb: [\n---\nc: 3\n",           # a broken document between good ones
    "a: " + "[" * 70 + "]" * 70 + "\n",       # nested past MAX_DEPTH
    "a: \ud800\n",                            # not encodable as UTF-8
]


@needs_fast
@pytest.mark.parametrize("text", TAKEN)
def test_the_compiled_reader_takes_what_is_written_the_usual_way(text: str) -> None:
    assert agree(text) or text == "a: <<\n"


@needs_fast
@pytest.mark.parametrize("text", HANDED_BACK)
def test_anything_unusual_goes_back_to_the_python_reader(text: str) -> None:
    assert agree(text) is False


@needs_fast
def test_every_yaml_file_in_the_repository_reads_the_same() -> None:
    files = [p for d in ("intents", "examples", "tests", "schemas") for p in sorted((ROOT / d).rglob("*.y*ml"))]
    assert len(files) > 20
    taken = sum(agree(p.read_text(encoding="utf-8", errors="replace")) for p in files)
    assert taken > len(files) // 2


@needs_fast
def test_the_benchmark_intents_take_the_compiled_path() -> None:
    import random

    from benchmarks.bench_frontend import yaml_intent
    rng = random.Random(1)
    assert all(agree(yaml_intent(i, rng)) for i in range(50))


def test_a_bad_scalar_is_reported_in_every_file_not_only_the_first() -> None:
    """Plain scalars are memoised across files: a value that was reported must
    not be remembered as fine (it was, before the compiled reader)."""
    for _ in range(3):
        r = yaml_read.Reader("f.yaml", "a: 0b_\nb: =\n")
        r.read()
        assert [d.code for d in r.diags] == ["E0211", "E0211"]


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(["yes", "0x1F", "0b_", "=", "<<", "~", "1_0", "2001-01-01", "&a", "*a", "!x", "- ", ": "]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.text(max_size=6), st.sampled_from(["<<", "a", "1"])), inner, max_size=4)),
    max_leaves=20)


@needs_fast
@settings(max_examples=300, deadline=None)
@given(values, st.booleans(), st.sampled_from([None, "'", '"', "|"]))
def test_generated_documents_read_the_same(value: Any, flow: bool, style: str | None) -> None:
    text = pyyaml.safe_dump(value, default_flow_style=flow, default_style=style, allow_unicode=True)
    agree(text)
    agree(text + "---\n" + text)


@needs_fast
@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("ab:-[]{}, \n\t'\"#&*!<>|?~0")), max_size=40))
def test_arbitrary_text_reads_the_same(text: str) -> None:
    agree(text)
