"""The DSL printer and `intentc fmt`: canonical, idempotent, meaning- and comment-preserving."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from intentc.cli import app
from intentc.frontend.dsl import parse_full
from intentc.frontend.dsl_print import format_program, format_source, quote, word
from intentc.ir import (Action, Batch, Constraints, Context, Dataset, GpuRequest, Intent, ModelSettings,
                        Program, Ref, Tenant, Trigger)
from intentc.frontend.sources import SourceFile
from tests.golden_support import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "dsl"
VALID = [p for p in sorted(GOLDEN.glob("*.intent")) if p.stem in ("full", "any-order")] + \
    sorted((Path(__file__).parents[1] / "intents").rglob("*.intent")) + [GOLDEN / "fmt" / "messy.intent"]


def fmt(text: str) -> str:
    out, diags = format_source(SourceFile("t.intent", text))
    assert out is not None, diags
    return out


def program_of(text: str) -> Program:
    result = parse_full(SourceFile("t.intent", text))
    assert not result.diagnostics, result.diagnostics
    return result.program


def test_golden_layout() -> None:
    source = (GOLDEN / "fmt" / "messy.intent").read_text(encoding="utf-8")
    assert_golden(GOLDEN / "fmt" / "messy.formatted.intent", fmt(source))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_idempotent_and_meaning_preserving(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    once = fmt(text)
    assert fmt(once) == once
    assert program_of(once) == program_of(text)
    before = sorted(c.text for c in parse_full(SourceFile("t", text)).comments)
    assert sorted(c.text for c in parse_full(SourceFile("t", once)).comments) == before


def test_files_with_errors_are_not_formatted() -> None:
    out, diags = format_source(SourceFile("t.intent", "tenant t { tier gold }\n"))
    assert out is None and [d.code for d in diags] == ["E0101"]
    out, diags = format_source(SourceFile("t.intent", "tenant t { weight: 1.5 }\n"))
    assert out is None and [d.code for d in diags] == ["E0107"]


# --------------------------------------------------------------------------
# Comments
# --------------------------------------------------------------------------

@pytest.mark.parametrize("source, expected", [
    ("# lead\ntenant a { tier: gold }\n", "# lead\ntenant a {\n  tier: gold\n}\n"),
    ("tenant a {\n  tier: gold # why gold\n}\n", "tenant a {\n  tier: gold  # why gold\n}\n"),
    ("tenant a {\n  weight: 2\n  # about the tier\n  tier: gold\n}\n",
     "tenant a {\n  # about the tier\n  tier: gold\n  weight: 2\n}\n"),
    ("tenant a {\n  tier: gold\n  # closing thoughts\n}\n",
     "tenant a {\n  tier: gold\n  # closing thoughts\n}\n"),
    ("tenant a {}\n# the end\n", "tenant a {}\n\n# the end\n"),
    ("dataset d {\n  # inside\n}\ndataset e\n", "dataset d\n# inside\n\ndataset e\n"),
    ("# header\n\n\n\ndataset d\n", "# header\n\ndataset d\n"),
    ("tenant a {} # one\ntenant b {\n}   # two\n", "tenant a {}  # one\n\ntenant b {}  # two\n"),
    ("tenant a {\n  tier: gold  # g\n  weight: 10  # w\n}\n",
     "tenant a {\n  tier: gold  # g\n  weight: 10  # w\n}\n"),
    ("tenant a {\n  tier: gold # g\n  weight: 1000 # w\n}\n",
     "tenant a {\n  tier: gold    # g\n  weight: 1000  # w\n}\n"),
])
def test_comments_stay_where_they_belong(source: str, expected: str) -> None:
    assert fmt(source) == expected
    assert fmt(expected) == expected


def test_comment_inside_settings_block_keeps_it_open() -> None:
    src = 'intent i {\n  trigger: manual\n  action: batch image "b" {\n    # later\n  }\n  context: tenant t\n}\n'
    assert fmt(src) == src


def test_empty_settings_block_is_kept() -> None:
    out = fmt('intent i { trigger: manual action: batch image "b" {} context: tenant t }')
    assert 'action: batch image "b" {}\n' in out
    assert program_of(out).intents[0].action.settings == ModelSettings()


# --------------------------------------------------------------------------
# Printing a Program that did not come from DSL text (convert --to dsl)
# --------------------------------------------------------------------------

def test_program_without_spans_or_comments() -> None:
    program = Program(
        tenants=(Tenant("team a", tier="gold", quota_cpu="1.5", group='say "hi"'),),
        datasets=(Dataset("raw", uri="s3://x"),),
        intents=(Intent("job", Trigger("schedule", schedule="0 * * * *"),
                        Action("batch", "img:1", command=("a b", "\\n")),
                        Context(Ref("team a"), tags=("x y",)),
                        Constraints(tolerance=1e20, gpus=GpuRequest(2, product="A100"))),),
    )
    text = format_program(program)
    assert 'tenant "team a" {' in text and 'group: "say \\"hi\\""' in text
    assert "tolerance 1e20" in text
    assert program_of(text) == program


@pytest.mark.parametrize("value, expected", [
    ("team-a", "team-a"), ("64Gi", "64Gi"), ("0.95", "0.95"), ("a b", '"a b"'), ("", '""'),
    ("é", '"é"'), ("x/y", '"x/y"'), ("tab\t", '"tab\\t"'),
])
def test_words_are_quoted_only_when_needed(value: str, expected: str) -> None:
    assert word(value) == expected


def test_lone_surrogates_are_escaped() -> None:
    assert quote("\ud800") == '"\\ud800"'


_text = st.text(st.characters(codec="utf-8"), max_size=12)
_ints = st.integers(-10**6, 10**6)
_opt = st.none().__or__


def _refs(min_size: int = 0) -> st.SearchStrategy[tuple[Ref, ...]]:
    return st.lists(_text.map(Ref), min_size=min_size, max_size=3).map(tuple)


_triggers = st.one_of(
    st.builds(Trigger, st.sampled_from(["push", "manual", "after", "schedule", "on", "tenant"]) | _text),
    st.builds(Trigger, st.just("after"), after=_refs(1)),
    st.builds(Trigger, st.just("schedule"), schedule=_text),
)
_batches = st.one_of(st.builds(Batch, st.just(True), max=_opt(_ints)),
                     st.builds(Batch, st.just(False), size=_ints))
_settings = st.builds(ModelSettings, batch=_opt(_batches), seq_len=_opt(_ints), kv_cache=_opt(_text),
                      precision=_opt(_text))
_actions = st.builds(Action, _text, _text, command=st.lists(_text, max_size=3).map(tuple), model=_opt(_text),
                     settings=_opt(_settings), replicas=_opt(_ints), port=_opt(_ints))
_gpus = st.builds(GpuRequest, _ints, product=_opt(_text), memory=_opt(_text), within=_opt(_text),
                  prefer=_opt(_text))
_floats = st.floats(allow_nan=False, allow_infinity=False)
_constraints = st.builds(Constraints, cpu=_opt(_text), memory=_opt(_text), gpus=_opt(_gpus), sla=_opt(_text),
                         tolerance=_opt(_floats), duration=_opt(_text))
_intents = st.builds(Intent, _text, _triggers, _actions,
                     st.builds(Context, _text.map(Ref), tags=st.lists(_text, max_size=3).map(tuple),
                               drift=_opt(_text)),
                     _constraints, _refs(), _refs())
_tenants = st.builds(Tenant, _text, tier=_opt(_text), weight=_opt(_ints), quota_gpus=_opt(_ints),
                     quota_cpu=_opt(_text), quota_memory=_opt(_text), group=_opt(_text), drift=_opt(_text))
_programs = st.builds(Program, st.lists(_tenants, max_size=2).map(tuple),
                      st.lists(st.builds(Dataset, _text, uri=_opt(_text)), max_size=2).map(tuple),
                      st.lists(_intents, max_size=2).map(tuple))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs)
def test_any_program_prints_to_text_that_parses_back_to_it(program: Program) -> None:
    text = format_program(program)
    result = parse_full(SourceFile("t.intent", text))
    assert [d for d in result.diagnostics if d.code != "E0004"] == []
    assert result.program == program
    assert format_program(result.program) == text


# --------------------------------------------------------------------------
# intentc fmt
# --------------------------------------------------------------------------

UGLY = "tenant team-a{tier:gold}\n"
PRETTY = "tenant team-a {\n  tier: gold\n}\n"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["fmt", *args])
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def test_fmt_rewrites_in_place_then_is_a_no_op(tmp_path: Path) -> None:
    f = tmp_path / "a.intent"
    f.write_text(UGLY)
    (tmp_path / "other.yaml").write_text("not: touched\n")
    code, out = run(str(tmp_path))
    assert code == 0 and "reformatted" in out
    assert f.read_text() == PRETTY
    assert (tmp_path / "other.yaml").read_text() == "not: touched\n"
    assert run(str(tmp_path)) == (0, "")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_fmt_check_reports_and_writes_nothing(tmp_path: Path) -> None:
    f = tmp_path / "a.intent"
    f.write_text(UGLY)
    code, out = run("--check", str(f))
    assert code == 1 and f"would reformat {f.as_posix()}" in out
    assert f.read_text() == UGLY
    f.write_text(PRETTY)
    assert run("--check", str(f))[0] == 0


def test_fmt_diff_shows_the_change_without_writing(tmp_path: Path) -> None:
    f = tmp_path / "a.intent"
    f.write_text(UGLY)
    code, out = run("--diff", str(f))
    assert code == 0 and "-tenant team-a{tier:gold}" in out and "+  tier: gold" in out
    assert f.read_text() == UGLY


def test_fmt_never_touches_a_file_with_errors(tmp_path: Path) -> None:
    f = tmp_path / "a.intent"
    f.write_bytes(b"tenant t { tier gold }\r\n")
    code, out = run(str(f), "-o", "json")
    assert code == 1 and '"E0101"' in out
    assert f.read_bytes() == b"tenant t { tier gold }\r\n"


def test_fmt_normalises_line_endings(tmp_path: Path) -> None:
    f = tmp_path / "a.intent"
    f.write_bytes(PRETTY.replace("\n", "\r\n").encode())
    assert run("--check", str(f))[0] == 1
    assert run(str(f))[0] == 0 and f.read_bytes() == PRETTY.encode()


def test_fmt_unreadable_path_is_a_usage_error(tmp_path: Path) -> None:
    assert run(str(tmp_path / "missing.intent"))[0] == 2
