"""The compiled DSL parse (`intentc/frontend/_dslfast.pyx`) against lark's loop
and the Python lexer: for every text, either the compiled loop hands it back
(False) or the file parses to exactly what the reference path builds -- the
same IR, every position, the same diagnostics and comments."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.exceptions import UnexpectedInput

from intentc.frontend import dsl, dsl_errors
from intentc.frontend.sources import SourceFile
from tests.ir_shape import shape
from tests.speedups import assert_built_where_required, needs

ROOT = Path(__file__).parents[1]
fast = dsl._FAST
needs_fast = needs(fast, "intentc.frontend._dslfast")


def test_the_compiled_parser_is_built_where_ci_requires_it() -> None:
    assert_built_where_required(fast, "intentc.frontend._dslfast")


def test_it_can_be_turned_off_for_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTENTC_PURE_DSL", "1")
    assert dsl._compiled() is None


def parsed(text: str) -> Any:
    result = dsl.parse_full(SourceFile("f.intent", text))
    return shape(result.program), shape(result.diagnostics), shape(result.comments)


def reference(text: str) -> Any:
    saved, dsl._FAST = dsl._FAST, None
    try:
        return parsed(text)
    finally:
        dsl._FAST = saved


def taken(text: str) -> bool:
    """Whether the compiled loop parses `text` itself."""
    with dsl._LOCK:
        dsl._LOWER.begin("f.intent")
        try:
            return bool(fast(text))
        finally:
            dsl._LOWER.begin("")


def agree(text: str) -> bool:
    """True when the compiled loop took the text, False when it handed it back;
    the result is the reference path's either way."""
    slow = reference(text)
    assert parsed(text) == slow
    took = taken(text)
    assert took == lark_parses(text), "the compiled loop takes exactly what lark parses without an error"
    return took


def lark_parses(text: str) -> bool:
    with dsl._LOCK:
        dsl._LOWER.begin("f.intent")
        try:
            dsl._PARSER.parse(text)
            return True
        except UnexpectedInput:
            return False
        finally:
            dsl._LOWER.begin("")


INTENT = """\
# a whole-line comment
tenant team-a {            # trailing
  tier: gold
  weight: 2
  quota: gpus 16, cpu 64, memory 512Gi
  group: "research"
  drift: heal
  max_sla: high
}

dataset corpus { uri: "s3://bucket/corpus \\"v2\\" \\u00e9" }
dataset bare

intent train-7b {
  trigger: after prep, tokenize
  action: batch image "reg/app:1.0" command ["python", "-m", "train",] replicas 4 {
    batch: auto (max 512)
    seq_len: 4096
    precision: bf16
  }
  context: tenant team-a, tags [nightly, "big one"], drift report
  constraints: gpus 8 x H100 memory 80Gi within nvlink prefer rack, sla high, retries 3
  consumes: corpus
  produces: ckpt-7b
  clusters: { region: eu, "tier": gpu, }
}

intent serve { trigger: on push action: serve model "m" port 8080 context: tenant team-a clusters: [a, b] }
intent cron { trigger: schedule "0 * * * *" action: batch image "x" context: tenant tenant }
"""

TAKEN = [
    INTENT,
    INTENT.replace("\n", "\r\n"),                     # CRLF line ends
    INTENT.replace("  ", "\t").replace(" {", "\x0c{"),  # tabs, a form feed
    "",                                                # nothing: E0004, from parse_full
    "# only a comment",
    "tenant t { tier: gold }",                          # no line break at the end
    "intent x { trigger: on push action: batch image \"é ✓ 𝄞\" context: tenant t }\n",
    "tenant intent { tier: tenant }\n",                 # keywords where a value goes
    "tenant t { weight: x }\n",                         # a semantic error: reported by the lowering
    "tenant t { tier: gold tier: silver }\n",           # a clause twice
    "intent i { }\n",                                   # required clauses missing
    'tenant t { group: "a\\\\" }\n',                     # an escaped backslash, then the closing quote
    'tenant t { group: "bad \\q escape" }\n',           # a bad escape: the lowering reports it
    "tenant " + "x" * 70000 + " {\n}\n",                # a column past 65,535
    "\n" * 70000 + "tenant t {}\n",                     # a line past 65,535
]

HANDED_BACK = [
    "tenant t {\n  tier gold\n}\n",                     # a missing colon
    "tenant t { weightx: 1 }\n",                         # an unknown clause
    "tenant t {\n",                                      # the end too soon
    "tenant t { group: \"open\n}\n",                     # a string left open
    'tenant t { group: "a\\\n" }\n',                     # a backslash before a line break
    'tenant t { group: "a\\',                            # a backslash at the very end
    "tenant t { tier: gold }\n@\n",                      # a character no token starts with
    "tenant t { tier: gøld }\n",                         # a non-ASCII word
    "tenant t { tier:\x0bgold }\n",                      # a vertical tab
    "tenant a { tier: }\ntenant b { x }\ntenant c { tier: gold }\n",   # two errors, then a good block
    "}\n",
]


@needs_fast
@pytest.mark.parametrize("text", TAKEN)
def test_the_compiled_loop_takes_what_parses(text: str) -> None:
    assert agree(text) is True


@needs_fast
@pytest.mark.parametrize("text", HANDED_BACK)
def test_anything_that_does_not_parse_goes_back_to_lark(text: str) -> None:
    assert agree(text) is False


@needs_fast
@pytest.mark.parametrize("example", dsl_errors.EXAMPLES, ids=lambda e: e.name)
def test_every_error_example_reads_the_same(example: dsl_errors.BadInput) -> None:
    agree(example.text)


@needs_fast
def test_every_intent_file_in_the_repository_parses_the_same() -> None:
    files = sorted(p for p in ROOT.rglob("*.intent") if ".git" not in p.parts)
    assert len(files) > 10
    assert sum(agree(p.read_text(encoding="utf-8")) for p in files) > len(files) // 2


@needs_fast
def test_the_benchmark_intents_take_the_compiled_path() -> None:
    from benchmarks.bench_frontend import dsl_intent
    rng = random.Random(1)
    assert all(agree(dsl_intent(i, rng)) for i in range(50))


@needs_fast
def test_the_comments_list_of_a_handed_back_parse_is_the_reference_one() -> None:
    """The compiled loop appends comments as it goes; a text it hands back
    must not leave them in front of the reference path's."""
    text = "# one\ntenant t { tier: gold } # two\ntenant u { tier }\n"
    assert agree(text) is False
    comments = dsl.parse_full(SourceFile("f.intent", text)).comments
    assert [c.text for c in comments] == ["# one", "# two"]


VOCABULARY = ["tenant", "dataset", "intent", "tier", "trigger", "action", "context", "constraints",
              "on", "after", "schedule", "batch", "image", "gpus", "x", "auto", "max", "tags", "clusters",
              "team-a", "1.5", "16Gi", "-3", '"s"', '"a\\"b"', '"\\u00e9"', "{", "}", ":", ",", "[", "]",
              "(", ")", "# c", " ", "\n", "\t", "\r\n"]


@needs_fast
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(VOCABULARY), max_size=40))
def test_token_soup_reads_the_same(words: list[str]) -> None:
    agree(" ".join(words))


@needs_fast
@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(INTENT) - 1), st.sampled_from(["", "{", "}", ":", '"', "\\", "#", "\n", "@", "é", " x "]))
def test_one_edit_to_a_good_file_reads_the_same(at: int, insert: str) -> None:
    agree(INTENT[:at] + insert + INTENT[at + 1:])
