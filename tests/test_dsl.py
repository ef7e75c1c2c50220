"""The DSL parser: IR and spans (golden), syntax errors (table), recovery, robustness."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc.diagnostics import Diagnostic, Span
from intentc.frontend import dsl, lark_glue
from intentc.frontend.dsl_errors import EXAMPLES, BadInput
from intentc.frontend.sources import SourceFile
from intentc.ir import FieldSpans, Located, Placed, Program
from tests.golden_support import assert_golden

_PLACED = ("file", "line", "column", "end_line", "end_column")

GOLDEN = Path(__file__).parent / "golden" / "dsl"
INPUTS = sorted(GOLDEN.glob("*.intent"))
EXAMPLE_REPO = sorted((Path(__file__).parents[1] / "intents").rglob("*.intent"))


def parse(text: str, path: str = "t.intent") -> dsl.ParseResult:
    return dsl.parse_full(SourceFile(path, text))


def _span(s: Span) -> str:
    return f"{s.line}:{s.column}-{s.end_line}:{s.end_column}"


def dump(value: Any) -> Any:
    """A deterministic, readable JSON shape of IR values, spans included."""
    if isinstance(value, Span):
        return _span(value)
    if isinstance(value, FieldSpans):
        return {k: _span(s) for k, s in value.items}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"@": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.name == "spans" and isinstance(value, Located):
                out["span"] = dump(value.span)      # kept inside `spans`, shown where it was a field
            if isinstance(value, Placed) and f.name in _PLACED:
                if f.name == "end_column":          # the five position fields, shown as the span
                    out["span"] = dump(value.span)
                continue
            out[f.name] = dump(getattr(value, f.name))
        return out
    if isinstance(value, tuple):
        return [dump(v) for v in value]
    return value


def dump_result(r: dsl.ParseResult) -> str:
    doc = {
        "declarations": [dump(d) for d in r.program.declarations()],
        "diagnostics": [{"code": d.code, "at": _span(d.span), "message": d.message, "hint": d.hint,
                         "related": [f"{_span(x.span)} {x.message}" for x in d.related]}
                        for d in r.diagnostics],
        "comments": [f"{c.line}:{c.column} {'trailing' if c.trailing else 'own-line'} {c.text}"
                     for c in r.comments],
    }
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------
# Golden IR
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_golden_ir(path: Path) -> None:
    result = parse(path.read_text(encoding="utf-8"), path.name)
    assert_golden(path.with_suffix(".ir.json"), dump_result(result))


def _source_of(text: str, s: Span) -> str:
    lines = text.split("\n")
    if s.line == s.end_line:
        return lines[s.line - 1][s.column - 1:s.end_column - 1]
    parts = [lines[s.line - 1][s.column - 1:]] + lines[s.line:s.end_line - 1]
    return "\n".join(parts + [lines[s.end_line - 1][:s.end_column - 1]])


def _nodes(value: Any) -> list[Any]:
    out = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out.append(value)
        for f in dataclasses.fields(value):
            out.extend(_nodes(getattr(value, f.name)))
    elif isinstance(value, tuple):
        for v in value:
            out.extend(_nodes(v))
    return out


@pytest.mark.parametrize("path", [GOLDEN / "full.intent", GOLDEN / "any-order.intent", *EXAMPLE_REPO],
                         ids=lambda p: p.name)
def test_every_field_span_points_at_its_value(path: Path) -> None:
    """Slicing the source at a field's span gives back the value the IR holds."""
    text = path.read_text(encoding="utf-8")
    result = parse(text, path.name)
    assert not result.diagnostics
    checked = 0
    for node in _nodes(result.program):
        spans = getattr(node, "spans", None)
        if not isinstance(spans, FieldSpans):
            continue
        assert node.span.line > 0
        for key, span in spans.items:
            value = getattr(node, key, None) if key != "kind" else node.kind
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                written = _source_of(text, span)
                shown = json.loads(written) if written.startswith('"') else written
                assert str(shown) == str(value) or float(shown) == value, (key, written, value)
                checked += 1
        fields = [getattr(node, f.name) for f in dataclasses.fields(node)]
        for ref in [v for v in fields if type(v).__name__ == "Ref"]:
            assert _source_of(text, ref.span).strip('"') == ref.name
    assert checked


def test_declaration_spans_run_from_keyword_to_closing_brace() -> None:
    text = (GOLDEN / "full.intent").read_text(encoding="utf-8")
    program = parse(text).program
    for decl in program.declarations():
        written = _source_of(text, decl.span)
        assert written.split()[0] in ("tenant", "dataset", "intent")
        assert written.endswith("}") or decl.name == "bare"
    embed = program.intents[0]
    assert _source_of(text, embed.action.settings.span).startswith("{") if embed.action.settings else False
    assert _source_of(text, embed.trigger.span) == "on push"
    assert _source_of(text, embed.context.spans.get("tags", embed.span)) == '[stateful, nightly, "with space"]'


def test_same_program_from_any_clause_order() -> None:
    a = parse('intent i {\n trigger: manual\n action: batch image "b"\n context: tenant t\n}\n').program
    b = parse('intent i { context: tenant t action: batch image "b" trigger: manual }').program
    assert a == b and a.intents


def test_values_are_kept_as_written_for_the_semantic_passes() -> None:
    program = parse((GOLDEN / "any-order.intent").read_text(encoding="utf-8")).program
    assert program.tenant("Team_A") is not None
    settings_ = program.intents[0].action.settings
    assert settings_ is not None and settings_.kv_cache == "recyle" and settings_.precision == "fp12"


def test_keyword_prefixes_are_not_split() -> None:
    """`weightx` is an unknown clause, not `weight` followed by `x`."""
    diags = parse("tenant t {\n  weightx: 4\n}\n").diagnostics
    assert [(d.code, d.span.line, d.span.column, d.span.end_column) for d in diags] == [("E0101", 2, 3, 10)]
    assert "'weightx'" in diags[0].message


def test_grammar_ships_with_the_checkout() -> None:
    assert dsl.grammar_text() == (Path(__file__).parents[1] / "grammar" / "intent.lark").read_text("utf-8")


def test_empty_file_declares_nothing() -> None:
    assert [d.code for d in parse("# only a comment\n").diagnostics] == ["E0004"]


# --------------------------------------------------------------------------
# The bad-input table (shared with dsl_errors, which draws hints from it)
# --------------------------------------------------------------------------

def test_table_covers_every_syntax_code() -> None:
    assert len(EXAMPLES) >= 20
    assert {e.code for e in EXAMPLES} >= {"E0101", "E0102", "E0103", "E0104", "E0105", "E0106", "E0107"}
    assert len({e.name for e in EXAMPLES}) == len(EXAMPLES)


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_bad_input(ex: BadInput) -> None:
    diags = parse(ex.text).diagnostics
    hits = [d for d in diags if (d.code, d.span.line, d.span.column) == (ex.code, ex.line, ex.column)]
    assert hits, [(d.code, d.span.line, d.span.column, d.message) for d in diags]
    assert len(diags) == 1, diags
    if ex.hint is not None:
        assert hits[0].hint is not None


@pytest.mark.parametrize("text, message", [
    ("intent j {\n  trigger {\n}\n", "expected ':' after 'trigger', found '{'"),
    ("tenant", "unexpected end of file: expected a name"),
    ("tenant t { weight: }", "expected a number after ':', found '}'"),
    ("intent j { action: }", "expected an action kind (batch, training, inference or serve) after ':', found '}'"),
    ("dataset d { uri: 3 }", "expected a quoted string after ':', found '3'"),
])
def test_messages_name_what_was_expected_in_words(text: str, message: str) -> None:
    assert [d.message for d in parse(text).diagnostics] == [message]


def test_hints_generalise_to_unseen_inputs() -> None:
    """The examples' hints apply to other inputs that fail the same way."""
    d, = parse('intent j {\n  action: serve image ghcr.io/x port 80\n}\n').diagnostics
    assert d.hint is not None and "quoted" in d.hint
    d, = parse("tenant t {\n  weight 4\n}\n").diagnostics
    assert d.hint is not None and "colon" in d.hint


def test_missing_brace_at_end_notes_the_opening_brace() -> None:
    d, = parse("tenant t {\n  tier: gold\n").diagnostics
    assert d.code == "E0103" and (d.span.line, d.span.column) == (3, 1)
    assert [(r.span.line, r.span.column) for r in d.related] == [(1, 10)]


def test_duplicate_clause_notes_the_first() -> None:
    d, = parse("tenant t { tier: gold\n tier: silver }").diagnostics
    assert d.code == "E0105" and (d.span.line, d.span.column) == (2, 2)
    assert [(r.span.line, r.span.column) for r in d.related] == [(1, 12)]


# --------------------------------------------------------------------------
# Recovery
# --------------------------------------------------------------------------

def test_three_broken_blocks_three_diagnostics_good_blocks_kept() -> None:
    result = parse((GOLDEN / "recovery.intent").read_text(encoding="utf-8"))
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("E0101", 7), ("E0101", 14), ("E0101", 29)]
    names = [d.name for d in result.program.declarations()]
    assert names == ["good-a", "raw", "good-b", "good-c"]


def test_block_followed_by_garbage_is_kept() -> None:
    result = parse("tenant a {}\n@@@\ntenant b {}\n")
    assert [d.name for d in result.program.tenants] == ["a", "b"]
    assert [d.code for d in result.diagnostics] == ["E0102"]


def test_positions_after_recovery_are_absolute() -> None:
    text = "tenant a { tier gold }\n\n  intent b {\n    trigger: on push\n    action: batch image x\n  }\n"
    diags = parse(text).diagnostics
    assert [(d.span.line, d.span.column) for d in diags] == [(1, 17), (5, 25)]


# --------------------------------------------------------------------------
# Never raise
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "[" * 100_000,
    "intent j { action: batch image \"b\" command " + "[" * 50_000,
    "tenant t { tier: " + "gold " * 200_000 + "}",
    "a" * 1_000_000,
    '"' * 10_001,
    "\x00\x01\x02\ufffd\u2028tenant\x0b",
    "tenant t {\n" * 5_000,
    "}" * 10_000,
])
def test_pathological_inputs_give_diagnostics(text: str) -> None:
    result = parse(text)
    assert result.diagnostics
    n_lines = text.count("\n") + 1
    assert all(1 <= d.span.line <= n_lines and d.span.column >= 1 for d in result.diagnostics)


def _check_never_raises(text: str) -> None:
    result = parse(text)
    n_lines = text.count("\n") + 1
    for d in result.diagnostics:
        assert isinstance(d, Diagnostic)
        assert 1 <= d.span.line <= n_lines and d.span.column >= 1, d
    assert isinstance(result.program, Program)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('tenantdasintrgcopu{}[]():,"#\\ \n\tx8.-_') + ["\u00e9", "@"]),
               max_size=200))
def test_random_text_never_raises(text: str) -> None:
    _check_never_raises(text)


_VALID = [(GOLDEN / "full.intent").read_text(encoding="utf-8")] + \
    [p.read_text(encoding="utf-8") for p in EXAMPLE_REPO]


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_VALID))
    for _ in range(draw(st.integers(1, 5))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["delete", "insert", "dup-line", "swap", "truncate"]))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 30)):]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(["{", "}", ":", '"', ",", "[", "#", "\n", "tenant ", "x"])) + text[i:]
        elif op == "truncate":
            text = text[:i]
        elif op == "swap" and i + 1 < len(text):
            text = text[:i] + text[i + 1] + text[i] + text[i + 2:]
        else:
            lines = text.split("\n")
            j = i % len(lines)
            lines.insert(j, lines[j])
            text = "\n".join(lines)
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_mutated_valid_files_never_raise(text: str) -> None:
    _check_never_raises(text)


def test_the_lalr_loop_is_lark_cythons() -> None:
    """The grammar is lark's; the loop that drives its table is lark-cython's
    compiled one, fed by our lexer (docs/frontend-scale.md)."""
    assert dsl._PARSER.loop_module == "lark_cython.lark_cython"
    result = dsl.parse_full(SourceFile("x.intent", "tenant t { tier: gold }\nintent {\n"))
    assert [d.code for d in result.diagnostics] == ["E0101"] and len(result.program.tenants) == 1


@pytest.mark.parametrize("before", [0, 1, lark_glue.KeywordLexer.BATCH - 3, lark_glue.KeywordLexer.BATCH, 3 * lark_glue.KeywordLexer.BATCH + 1])
def test_positions_past_a_lexed_batch(before: int) -> None:
    """The lexer works ahead in batches of tokens: a token, a comment or a bad
    character after a batch boundary, on the same line or after line breaks
    and blank lines, keeps its exact position."""
    tags = ", ".join(f"t{k}" for k in range(before))
    text = (f'intent j {{\n  trigger: on push\n  action: batch image "b:1"\n'
            f"  context: tenant t, tags [{tags}]  # note\n\n  \t\n  constraints: cpu 4 @\n}}\n")
    result = parse(text)
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("E0102", 7, 22)]
    line4 = text.split("\n")[3]
    assert [(c.line, c.column, c.text) for c in result.comments] == [(4, line4.index("#") + 1, "# note")]
    args = "".join(f'"a{k}", ' for k in range(before))
    one_line = f'tenant t {{ tier: gold }} intent j {{ action: batch image "b" command [{args}@] }}'
    same_line = parse(one_line).diagnostics
    assert [(d.code, d.span.line, d.span.column) for d in same_line] == [("E0102", 1, one_line.index("@") + 1)]
