"""Where the IR keeps positions: a node's own span inside its field spans, references and
triggers as five fields, 16-bit packing with a 32-bit fallback.  Spans never take part in
equality, and every form survives pickling (the parse cache and the workers ship the IR so)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from intentc.diagnostics import Span
from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile
from intentc.ir import NO_SPAN, Constraints, FieldSpans, Ref, Trigger, span_of

positions = st.tuples(*(st.integers(0, 2**32 - 1),) * 4)


@given(own=positions, fields=st.dictionaries(st.sampled_from(["cpu", "memory", "sla", "gpus"]), positions))
def test_field_spans_give_back_every_position_packed_narrow_or_wide(own: tuple[int, ...],
                                                                  fields: dict[str, tuple[int, ...]]) -> None:
    packed = FieldSpans.pack("a.intent", dict(fields), own)
    assert packed.own() == Span("a.intent", *own)
    assert dict(packed.items) == {k: Span("a.intent", *p) for k, p in fields.items()}
    for key, p in fields.items():
        assert packed.get(key, NO_SPAN) == Span("a.intent", *p)
    assert packed.get("", NO_SPAN) is NO_SPAN          # the own span is not a field
    wide = any(v > 0xFFFF for p in (own, *fields.values()) for v in p)
    assert len(packed.positions) == (16 if wide else 8) * (len(fields) + 1)
    assert pickle.loads(pickle.dumps(packed)) == packed
    assert packed.own_start() == ("a.intent", own[0], own[1])
    assert FieldSpans.pack("a.intent", dict(fields)).own_start() == (NO_SPAN.file, NO_SPAN.line, NO_SPAN.column)


@given(st.lists(st.tuples(st.sampled_from(["b.intent", "a.yaml", "<none>"]), positions, st.sampled_from("xyz"),
                          st.booleans()), max_size=12))
def test_canonical_order_is_by_the_own_span_then_the_name(decls: list[tuple[str, tuple[int, ...], str, bool]]) -> None:
    """`Program.canonical` sorts by (file, line, column, name) of each declaration's own
    span, read from the packed positions (`own_start`), a node without one as `NO_SPAN`."""
    from intentc.ir import Dataset, Program

    made = [Dataset(name, f"s3://{name}", spans=FieldSpans.pack(file, {}, own if has else None))
            for file, own, name, has in decls]
    ordered = Program(datasets=tuple(made)).canonical().datasets
    by_span = sorted(made, key=lambda d: (d.span.file, d.span.line, d.span.column, d.name))
    assert [id(d) for d in ordered] == [id(d) for d in by_span]


def test_a_node_without_a_span_of_its_own_reports_no_span() -> None:
    assert Constraints().span is NO_SPAN and not Constraints().has_span
    assert FieldSpans.pack("a.yaml", {"cpu": (1, 2, 1, 5)}).own() is NO_SPAN
    at = Span("a.yaml", 3, 4, 3, 9)
    c = Constraints(cpu="4", spans=FieldSpans.at(at))
    assert c.span == at and c.has_span and c.spans.items == ()
    # a check's fallback is the node itself: its span is unpacked only when asked
    assert span_of((c.spans, "cpu", c)) == at
    assert span_of((FieldSpans.pack("a.yaml", {"cpu": (1, 2, 1, 5)}), "cpu", c)) == Span("a.yaml", 1, 2, 1, 5)


def test_references_and_triggers_keep_their_span_as_fields_and_compare_without_it() -> None:
    a = Ref("team-a", "x.intent", 2, 3, 2, 9)
    assert a.span == Span("x.intent", 2, 3, 2, 9)
    assert a == Ref("team-a") and hash(a) == hash(Ref("team-a"))
    assert Ref("team-a").span == NO_SPAN
    t = Trigger("after", (a,), None, "x.intent", 1, 1, 1, 20)
    assert t.span == Span("x.intent", 1, 1, 1, 20) and t == Trigger("after", (Ref("team-a"),))
    back = pickle.loads(pickle.dumps(t))
    assert back.span == t.span and back.after[0].span == a.span


@pytest.mark.parametrize("width", [10, 70_000])
def test_a_parsed_intent_past_column_65535_keeps_its_positions(width: int) -> None:
    """A value beyond 16 bits (a very long line) falls back to 32-bit packing, same spans."""
    text = ("tenant t { tier: gold }\n"
            f'intent a {{\n  trigger: on push\n  action: batch image "{"x" * width}"\n'
            "  context: tenant t\n  constraints: cpu 2\n}\n")
    program = parse_source(SourceFile("w.intent", text)).program
    intent = program.intents[0]
    assert intent.span == Span("w.intent", 2, 1, 7, 2)
    image = intent.action.spans.get("image", NO_SPAN)
    assert (image.line, image.column, image.end_column) == (4, 23, 23 + width + 2)
    assert intent.action.span.end_column == 23 + width + 2
    assert intent.context.tenant.span == Span("w.intent", 5, 19, 5, 20)
