"""The YAML surface: lowering (golden), positioned diagnostics for malformed
input (a table with exact codes and line:column), emission round trips, and
robustness against random damage."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from golden_support import assert_golden
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc import ir
from intentc.diagnostics import Diagnostic, Span, format_text
from intentc.frontend.sources import SourceFile
from intentc.frontend.yaml import parse
from intentc.frontend.yaml_emit import dump_program
from intentc.frontend.yaml_read import MAX_ALIAS_EXPANSION, MAX_DEPTH

GOLDEN = Path(__file__).parent / "golden" / "yaml"
INPUTS = sorted(GOLDEN.glob("*.yaml"))
EXAMPLES = sorted((Path(__file__).parents[1] / "intents").rglob("*.yaml"))
H = "apiVersion: intentc.dev/v1alpha1\n"


def load(text: str, path: str = "t.yaml") -> tuple[ir.Program, list[Diagnostic]]:
    return parse(SourceFile(path, text))


def _at(s: Span) -> str:
    return f"{s.line}:{s.column}-{s.end_line}:{s.end_column}"


def dump_ir(node: object, indent: str = "") -> list[str]:
    """A stable text picture of IR nodes with every span, for golden files."""
    lines: list[str] = []
    assert dataclasses.is_dataclass(node)
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(node, ir.Placed) and f.name in ("file", "line", "column", "end_line", "end_column"):
            if f.name == "end_column":          # the five position fields, shown as the span
                lines.append(f"{indent}@ {_at(node.span)}")
        elif f.name == "span":
            lines.append(f"{indent}@ {_at(value)}")
        elif f.name == "spans":
            if isinstance(node, ir.Located):      # its own span, kept inside `spans`
                lines.append(f"{indent}@ {_at(node.span)}")
            lines.extend(f"{indent}@{k} {_at(s)}" for k, s in value.items)
        elif dataclasses.is_dataclass(value):
            lines.append(f"{indent}{f.name}: {type(value).__name__}")
            lines.extend(dump_ir(value, indent + "  "))
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            for i, item in enumerate(value):
                lines.append(f"{indent}{f.name}[{i}]: {type(item).__name__}")
                lines.extend(dump_ir(item, indent + "  "))
        else:
            lines.append(f"{indent}{f.name}: {value!r}")
    return lines


def render(program: ir.Program, diags: list[Diagnostic], source: SourceFile) -> str:
    out: list[str] = []
    for decl in program.declarations():
        out.append(f"{type(decl).__name__} {decl.name}")
        out.extend(dump_ir(decl, "  "))
    out.append("-- diagnostics")
    out.append(format_text(diags, {source.path: source.text}).rstrip("\n"))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# Golden lowering
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_lowering_golden(path: Path) -> None:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    program, diags = parse(source)
    if not path.name.startswith("bad-"):
        assert diags == []
    assert_golden(path.with_suffix(".ir"), render(program, diags, source))


def test_golden_inputs_cover_every_kind() -> None:
    kinds = set()
    for path in INPUTS:
        program, _ = load(path.read_text(encoding="utf-8"), path.name)
        kinds |= {type(d).__name__ for d in program.declarations()}
    assert kinds == {"Tenant", "Dataset", "Intent", "Topology"}


def test_yaml_numbers_become_quantity_text() -> None:
    program, diags = load(H + "kind: Topology\nmetadata: {name: t}\nspec:\n  nodes:\n"
                              "    - {name: n, cpu: 16, memory: 2.50, gpu: {count: 1, memory: 80}}\n")
    assert diags == []
    node = program.topologies[0].nodes[0]
    assert (node.cpu, node.memory, node.gpu_memory) == ("16", "2.50", "80")


def test_spans_point_at_values() -> None:
    text = (H + "kind: Intent\nmetadata:\n  name: a\nspec:\n  trigger: {after: [b, c]}\n"
            "  action: {kind: batch, image: x}\n  context: {tenant: team-a}\n  consumes: [d]\n")
    program, diags = load(text)
    assert diags == []
    intent = program.intents[0]
    assert intent.spans.get("name", intent.span) == Span("t.yaml", 4, 9, 4, 10)
    assert [_at(r.span) for r in intent.trigger.after] == ["6:21-6:22", "6:24-6:25"]
    assert _at(intent.context.tenant.span) == "8:21-8:27"
    assert _at(intent.consumes[0].span) == "9:14-9:15"
    assert intent.span.line == 1 and intent.span.column == 1


def test_best_effort_lowering_avoids_cascades(tmp_path: Path) -> None:
    """A tenant with a schema error still resolves; only the real mistakes are reported,
    and a domain-rule error replaces the schema error at the same place."""
    from intentc.pipeline import check
    (tmp_path / "tenant.yaml").write_text(H + "kind: Tenant\nmetadata: {name: team-a}\n"
                                              "spec: {tier: gld, weight: heavy}\n")
    (tmp_path / "intent.yaml").write_text(H + "kind: Intent\nmetadata: {name: job}\nspec:\n"
                                              "  trigger: push\n  action: {kind: batch, image: x}\n"
                                              "  context: {tenant: team-a}\n")
    result = check([str(tmp_path)])
    codes = sorted((d.code, d.span.line, d.span.column) for d in result.diagnostics)
    assert codes == [("E0211", 4, 27), ("E0408", 4, 14)]


# --------------------------------------------------------------------------
# Malformed input: exact code and position
# --------------------------------------------------------------------------

def _bomb(levels: int = 10) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


INTENT_HEAD = H + "kind: Intent\nmetadata: {name: a}\nspec:\n  trigger: push\n"
CTX = "  context: {tenant: t}\n"

MALFORMED: list[tuple[str, str, str, int, int]] = [
    ("unclosed-flow-map", H + "kind: Dataset\nmetadata: {name: a\nspec: {}\n", "E0201", 4, 5),
    ("tab-indentation", H + "kind: Dataset\nmetadata:\n\tname: a\n", "E0201", 4, 1),
    ("bad-indentation", H + "kind: Dataset\nmetadata:\n  name: a\n bad: 1\n", "E0201", 5, 2),
    ("control-character", H + "kind: Dataset\nmetadata: {name: \x07}\n", "E0201", 3, 18),
    ("unknown-alias", H + "kind: Dataset\nmetadata: {name: *who}\n", "E0201", 3, 18),
    ("alias-bomb", _bomb(), "E0202", 5, 45),
    ("recursive-alias", "a: &a [1, *a]\n", "E0202", 1, 11),
    # column: at or after the 64th bracket (libyaml releases differ in where they stop)
    ("deep-flow-nesting", "a: " + "[" * 5000 + "]" * 5000 + "\n", "E0203", 1, -(3 + MAX_DEPTH)),
    ("deep-block-nesting", "a:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(80)) + "\n",
     "E0203", 1 + MAX_DEPTH, 2 * MAX_DEPTH + 1),
    ("unknown-kind", H + "kind: Intnet\nmetadata: {name: a}\n", "E0204", 2, 7),
    ("unknown-api-version", "apiVersion: intentc.dev/v1\nkind: Dataset\nmetadata: {name: a}\n",
     "E0204", 1, 13),
    ("duplicate-key", H + "kind: Tenant\nmetadata: {name: a}\nspec:\n  tier: gold\n  tier: silver\n",
     "E0205", 6, 3),
    ("list-document", "- apiVersion: intentc.dev/v1alpha1\n", "E0206", 1, 1),
    ("scalar-document", "just text\n", "E0206", 1, 1),
    ("missing-kind", H + "metadata: {name: a}\n", "E0210", 1, 1),
    ("missing-image", INTENT_HEAD + "  action:\n    kind: batch\n" + CTX, "E0210", 6, 3),
    ("missing-metadata-name", H + "kind: Dataset\nmetadata: {}\n", "E0210", 3, 1),
    ("wrong-type-command", INTENT_HEAD + "  action: {kind: batch, image: x, command: run}\n" + CTX,
     "E0211", 6, 44),
    ("wrong-type-trigger", H + "kind: Intent\nmetadata: {name: a}\nspec:\n  trigger: [push]\n"
     "  action: {kind: batch, image: x}\n" + CTX, "E0211", 5, 12),
    ("non-scalar-key", H + "kind: Dataset\nmetadata: {name: a}\n? [x]\n: 1\n", "E0211", 4, 3),
    ("bad-explicit-int", H + "kind: Tenant\nmetadata: {name: a}\nspec: {weight: !!int four}\n",
     "E0211", 4, 16),
    ("unknown-property", INTENT_HEAD + "  action:\n    kind: inference\n    image: x\n"
     "    settings: {kvcache: retain}\n" + CTX, "E0212", 9, 16),
    ("unknown-top-level", H + "kind: Dataset\nmetadata: {name: a}\nspecs: {}\n", "E0212", 4, 1),
    ("enum-tier", H + "kind: Tenant\nmetadata: {name: a}\nspec: {tier: gld}\n", "E0213", 4, 14),
    ("enum-trigger", H + "kind: Intent\nmetadata: {name: a}\nspec:\n  trigger: pull\n"
     "  action: {kind: batch, image: x}\n" + CTX, "E0213", 5, 12),
    ("pattern-name", H + "kind: Dataset\nmetadata: {name: Bad_Name}\n", "E0214", 3, 18),
    ("pattern-quantity", INTENT_HEAD + "  action: {kind: batch, image: x}\n" + CTX
     + "  constraints: {cpu: 16cores}\n", "E0214", 8, 22),
    ("empty-image", INTENT_HEAD + "  action: {kind: batch, image: ''}\n" + CTX, "E0214", 6, 32),
    ("seq-len-too-long", INTENT_HEAD + "  action:\n    kind: inference\n    image: x\n"
     "    settings: {seq_len: 50000}\n" + CTX, "E0215", 9, 25),
    ("auto-batch-max", INTENT_HEAD + "  action:\n    kind: inference\n    image: x\n"
     "    settings:\n      batch: {auto: true, max: 4096}\n" + CTX, "E0215", 10, 32),
    ("zero-gpus", INTENT_HEAD + "  action: {kind: batch, image: x}\n" + CTX
     + "  constraints:\n    gpus: {count: 0}\n", "E0215", 9, 19),
    ("empty-after", H + "kind: Intent\nmetadata: {name: a}\nspec:\n  trigger: {after: []}\n"
     "  action: {kind: batch, image: x}\n" + CTX, "E0216", 5, 20),
    ("two-triggers", H + "kind: Intent\nmetadata: {name: a}\nspec:\n  trigger: {after: [b], schedule: x}\n"
     "  action: {kind: batch, image: x}\n" + CTX, "E0219", 5, 12),
    ("empty-file", "", "E0004", 1, 1),
    ("only-comments", "# nothing here\n\n# still nothing\n", "E0004", 1, 1),
    ("only-separators", "---\n---\n", "E0004", 1, 1),
    ("second-document-bad", H + "kind: Dataset\nmetadata: {name: ok}\n---\n" + H
     + "kind: Dataset\nmetadata: {name: ok2}\nspec: {url: x}\n", "E0212", 8, 8),
    ("error-then-good-document", H + "kind: Dataset\nmetadata: {name: a\n---\n" + H
     + "kind: Dataset\nmetadata: {name: b}\nspec: {uri: [x]}\n", "E0211", 8, 13),
]


@pytest.mark.parametrize("name,text,code,line,col", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed(name: str, text: str, code: str, line: int, col: int) -> None:
    _, diags = load(text)
    found = [(d.code, d.span.line, d.span.column) for d in diags]
    if col < 0:    # a negative column means "at or after"
        assert any(c == code and ln == line and cl >= -col for c, ln, cl in found), found
    else:
        assert (code, line, col) in found, found
    assert all(d.span.file == "t.yaml" and d.span.line >= 1 and d.span.column >= 1 for d in diags)


def test_malformed_table_is_large_and_covers_every_yaml_code() -> None:
    assert len(MALFORMED) >= 20
    codes = {m[2] for m in MALFORMED}
    assert {"E0201", "E0202", "E0203", "E0204", "E0205", "E0206", "E0210", "E0211", "E0212",
            "E0213", "E0214", "E0215", "E0216", "E0219", "E0004"} <= codes


def test_messages_speak_the_users_words() -> None:
    _, diags = load(INTENT_HEAD + "  action:\n    kind: inference\n    image: x\n"
                                  "    settings: {kvcache: retain, seq_len: 50000}\n" + CTX)
    messages = {d.message for d in diags}
    assert 'unknown property "kvcache" in settings (did you mean "kv_cache"?)' in messages
    assert "seq_len must be at most 32768, got 50000" in messages
    _, diags = load(INTENT_HEAD + "  action:\n    kind: batch\n" + CTX)
    assert [d.message for d in diags] == ['missing required property "image" in action']


def test_syntax_error_keeps_earlier_documents_and_resumes_after_it() -> None:
    text = (H + "kind: Dataset\nmetadata: {name: first}\n---\n" + H + "kind: Dataset\nmetadata: [\n---\n"
            + H + "kind: Dataset\nmetadata: {name: third}\n")
    program, diags = load(text)
    assert [d.name for d in program.datasets] == ["first", "third"]
    assert [d.code for d in diags] == ["E0201"]


def test_alias_bomb_is_refused_quickly_and_other_documents_survive() -> None:
    text = H + "kind: Dataset\nmetadata: {name: ok}\n---\n" + _bomb(12)
    program, diags = load(text)
    assert [d.name for d in program.datasets] == ["ok"]
    assert [d.code for d in diags] == ["E0202"]
    assert str(MAX_ALIAS_EXPANSION) in diags[0].message


def test_alias_depth_counts_towards_nesting() -> None:
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, MAX_DEPTH + 5)]
    _, diags = load("\n".join(lines) + "\n")
    assert [d.code for d in diags] == ["E0203"]


def test_huge_nesting_does_not_crash_the_interpreter() -> None:
    _, diags = load("a:\n  " + "- " * 200_000 + "x\n")
    assert [d.code for d in diags] == ["E0203"]


def test_libyaml_parser_is_used_when_available() -> None:
    import yaml

    from intentc.frontend import yaml_read as surface
    if yaml.__with_libyaml__:
        from yaml._yaml import CParser
        assert surface._LOADER is CParser


def test_pure_python_parser_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where PyYAML lacks libyaml, the same documents give the same IR and diagnostics."""
    import yaml

    from intentc.frontend import yaml_read as surface
    cases = [(m[1], "t.yaml") for m in MALFORMED if m[0] != "deep-flow-nesting"]
    cases += [(p.read_text(encoding="utf-8"), p.name) for p in INPUTS]
    fast = [load(text, name) for text, name in cases]
    monkeypatch.setattr(surface, "_LOADER", yaml.SafeLoader)
    monkeypatch.setattr(surface, "_BYTE_OFFSETS", False)
    slow = [load(text, name) for text, name in cases]
    for (p1, d1), (p2, d2) in zip(fast, slow):
        assert p1 == p2
        assert [(d.code, d.span) for d in d1] == [(d.code, d.span) for d in d2]


# --------------------------------------------------------------------------
# Emission round trip
# --------------------------------------------------------------------------

@pytest.mark.parametrize("path", [p for p in INPUTS if not p.name.startswith("bad-")] + EXAMPLES,
                         ids=lambda p: p.name)
def test_dump_round_trips_files(path: Path) -> None:
    program, diags = load(path.read_text(encoding="utf-8"), path.name)
    assert diags == []
    text = dump_program(program)
    again, diags2 = load(text, "converted.yaml")
    assert diags2 == []
    assert again == program
    assert dump_program(again) == text


def test_dump_layout() -> None:
    program, _ = load((GOLDEN / "intent_full.yaml").read_text(encoding="utf-8"))
    text = dump_program(program, schema_base="../schemas")
    assert text.startswith("# yaml-language-server: $schema=../schemas/intent.schema.json\n"
                           "apiVersion: intentc.dev/v1alpha1\nkind: Intent\nmetadata:\n  name: embed-corpus\n"
                           "spec:\n  trigger:\n    after:\n      - tokenize-corpus\n")
    assert "cpu: '16'" in text and "!!" not in text
    assert dump_program(ir.Program()) == ""


_names = st.from_regex(r"\A[a-z]([a-z0-9-]{0,8}[a-z0-9])?\Z")
_text = st.one_of(
    st.sampled_from(["yes", "no", "on", "off", "null", "~", "16", "0x1F", "1_000", "2001-12-14", "1:30",
                     "a: b", "#c", "- x", "*a", "&b", "!t", "'q'", '"q"', "é", "tab\there", " lead", "trail "]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=16),
)
_quantity = st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,2})?(m|k|Ki|Mi|Gi|Ti)?\Z")
_opt = lambda s: st.none() | s


@st.composite
def _intent(draw: st.DrawFn) -> ir.Intent:
    kind = draw(st.sampled_from(["push", "manual", "after", "schedule"]))
    trigger = ir.Trigger(kind,
                         after=tuple(ir.Ref(n) for n in draw(st.lists(_names, min_size=1, max_size=3)))
                         if kind == "after" else (),
                         schedule=draw(_text) if kind == "schedule" else None)
    batch = draw(st.one_of(st.none(), st.builds(ir.Batch, st.just(False), st.integers(1, 2048)),
                           st.builds(ir.Batch, st.just(True), st.none(), _opt(st.integers(1, 2048)))))
    settings = draw(_opt(st.builds(ir.ModelSettings, st.just(batch), _opt(st.integers(1, 32768)),
                                   _opt(st.sampled_from(ir.vocabulary(ir.KvCache))),
                                   _opt(st.sampled_from(ir.vocabulary(ir.Precision))))))
    action = ir.Action(draw(st.sampled_from(ir.vocabulary(ir.ActionKind))), draw(_text),
                       tuple(draw(st.lists(_text, max_size=3))), draw(_opt(_text)), settings,
                       draw(_opt(st.integers(1, 50))), draw(_opt(st.integers(1, 65535))))
    gpus = draw(_opt(st.builds(ir.GpuRequest, st.integers(1, 64), _opt(_text), _opt(_quantity),
                               _opt(st.sampled_from(ir.vocabulary(ir.Scope))),
                               _opt(st.sampled_from(ir.vocabulary(ir.Scope))))))
    tolerance = draw(_opt(st.floats(0, 1, exclude_min=True)))
    constraints = ir.Constraints(draw(_opt(_quantity)), draw(_opt(_quantity)), gpus,
                                 draw(_opt(st.sampled_from(ir.vocabulary(ir.SlaClass)))), tolerance,
                                 draw(_opt(st.sampled_from(["2h", "45m", "1h30m"]))))
    context = ir.Context(ir.Ref(draw(_names)), tuple(draw(st.lists(_text, max_size=3))),
                         draw(_opt(st.sampled_from(ir.vocabulary(ir.DriftPolicy)))))
    refs = st.lists(_names, max_size=3).map(lambda ns: tuple(ir.Ref(n) for n in ns))
    return ir.Intent(draw(_names), trigger, action, context, constraints, draw(refs), draw(refs))


@st.composite
def _topology(draw: st.DrawFn) -> ir.Topology:
    levels = tuple(draw(st.lists(_names, min_size=1, max_size=4, unique=True)))
    nodes = []
    for name in draw(st.lists(_names, max_size=3)):
        domains = tuple((lvl, draw(_text)) for lvl in levels if draw(st.booleans()))
        labels = tuple(sorted(draw(st.dictionaries(_text, _text, max_size=3)).items()))
        nodes.append(ir.TopologyNode(name, draw(st.integers(0, 16)), draw(_opt(_text)), draw(_opt(_quantity)),
                                     draw(_opt(_quantity)), draw(_opt(_quantity)), domains, labels,
                                     draw(_opt(_text))))
    return ir.Topology(draw(_names), levels, tuple(nodes))


_tenant = st.builds(ir.Tenant, _names, _opt(st.sampled_from(ir.vocabulary(ir.Tier))), _opt(st.integers(1, 100)),
                    _opt(st.integers(1, 1000)), _opt(_quantity), _opt(_quantity), _opt(_text),
                    _opt(st.sampled_from(ir.vocabulary(ir.DriftPolicy))))
_dataset = st.builds(ir.Dataset, _names, _opt(_text))
_program = st.builds(ir.Program, st.lists(_tenant, max_size=2).map(tuple), st.lists(_dataset, max_size=2).map(tuple),
                     st.lists(_intent(), max_size=2).map(tuple), st.lists(_topology(), max_size=2).map(tuple))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_program)
def test_dump_then_parse_is_identity(program: ir.Program) -> None:
    text = dump_program(program)
    again, diags = load(text, "generated.yaml")
    assert [d for d in diags if d.code in ("E0201", "E0211")] == [], text
    assert again == program, text


# --------------------------------------------------------------------------
# Random damage never raises
# --------------------------------------------------------------------------

_SEEDS = [p.read_text(encoding="utf-8") for p in INPUTS]


@st.composite
def _damaged(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(_SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "delete", "duplicate", "insert"]))
        lines = text.split("\n")
        if op == "flip" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + chr(ord(text[i]) ^ (1 << draw(st.integers(0, 6)))) + text[i + 1:]
        elif op == "delete":
            i = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[:i] + lines[i + 1:])
        elif op == "duplicate":
            i = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[:i + 1] + lines[i:])
        else:
            i = draw(st.integers(0, len(text)))
            text = text[:i] + draw(st.sampled_from(["&a ", "*a", "<<: ", "[", "{", "- ", ": ", "---\n", "\t", "!!int ",
                                                    "? ", "|\n", "'", '"', "%YAML 1.1\n"])) + text[i:]
    return text


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_damaged())
def test_random_damage_gives_diagnostics_not_exceptions(text: str) -> None:
    program, diags = load(text, "damaged.yaml")
    lines = text.count("\n") + 1
    for d in diags:
        assert d.span.file == "damaged.yaml"
        assert 1 <= d.span.line <= lines and d.span.column >= 1
    for decl in program.declarations():
        assert isinstance(decl.name, str)
