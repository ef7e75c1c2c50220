"""Diagnostics as a user meets them in `intentc check FILE` (issue 36, item 4):
every syntax error of a DSL file in one run, did-you-mean for misspelt
keywords (DSL and YAML) and for tags, unknown topology levels."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.frontend import dsl
from intentc.frontend.sources import SourceFile

# path:line:col: severity[CODE]: message
_HEAD = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning)\[(?P<code>[EW]\d{4})\]: "
                   r"(?P<msg>.*)$")


def check(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["check", *args])
    return res.exit_code, res.output


def findings(out: str) -> list[tuple[str, int, int, str]]:
    """(code, line, column, message) of every diagnostic printed in text form."""
    return [(m["code"], int(m["line"]), int(m["col"]), m["msg"])
            for m in map(_HEAD.match, out.splitlines()) if m is not None]


def block(out: str, code: str, line: int) -> list[str]:
    """The lines printed for one diagnostic: its head, the source line, the caret, notes and hint."""
    lines = out.splitlines()
    start = next(i for i, text in enumerate(lines)
                 if (m := _HEAD.match(text)) and m["code"] == code and int(m["line"]) == line)
    end = next((i for i in range(start + 1, len(lines)) if _HEAD.match(lines[i])), len(lines))
    return lines[start:end]


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- every syntax error of a file, one run ---------------------------------------

THREE_CLAUSES = """\
tenant t { tier: gold }

intent embed {
  triger: after tokenize
  action batch image "ghcr.io/acme/embed:1"
  context: tenant t
  constraints: cpu 4 memory 8Gi
}

intent fine {
  trigger: manual
  action: batch image "ghcr.io/acme/fine:1"
  context: tenant t
}
"""


def test_errors_in_three_clauses_of_one_intent_are_three_diagnostics(tmp_path: Path) -> None:
    path = write(tmp_path, "embed.intent", THREE_CLAUSES)
    code, out = check(path)
    assert code == 1
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [
        ("E0101", 4, 3), ("E0101", 5, 10), ("E0101", 7, 22)]
    assert block(out, "E0101", 5) == [
        f"{path}:5:10: error[E0101]: expected ':' after 'action', found 'batch'",
        '   5 |   action batch image "ghcr.io/acme/embed:1"',
        "     |          ^^^^^",
        "  = hint: clauses are written `name: value`, with a colon"]
    assert block(out, "E0101", 7)[2] == "     |                      ^^^^^^"
    assert block(out, "E0101", 7)[3].startswith("  = hint: is a ',' missing before 'memory'?")
    assert out.rstrip().endswith("3 error(s), 0 warning(s)")


def test_a_broken_block_yields_no_ir_and_no_missing_clause_errors() -> None:
    """The recovered block is dropped whole: no IR, and no E0106 for the clause that was broken."""
    result = dsl.parse_full(SourceFile("embed.intent", THREE_CLAUSES))
    assert [i.name for i in result.program.intents] == ["fine"]
    assert [t.name for t in result.program.tenants] == ["t"]
    assert {d.code for d in result.diagnostics} == {"E0101"}


def test_errors_in_three_declarations(tmp_path: Path) -> None:
    path = write(tmp_path, "three.intent", """\
tenant a {
  tier gold
}
dataset raw { uri: s3://bucket/raw }
intent j {
  trigger: on push
  action: batch image "b:1" { seq_len: 4096; }
  context: tenant a
}
""")
    code, out = check(path)
    assert code == 1
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [
        ("E0101", 2, 8), ("E0101", 4, 20), ("E0102", 7, 44)]


def test_recovery_after_a_stray_brace_resumes_in_the_enclosing_block(tmp_path: Path) -> None:
    """`serve{` opened a settings block by mistake: the next clause is the intent's, not
    a setting, so it is not reported again ("expected a setting, found 'context'"), nor
    is the intent's closing brace taken for a missing one."""
    path = write(tmp_path, "stray.intent", """\
tenant t { tier: gold }
intent web {
  trigger: manual
  action: serve{x port 80
  context: tenant t
  consumes: a b
}
intent next {
  trigger: manual
  action: batch image "n:1"
  context: tenant t
}
""")
    code, out = check(path)
    assert code == 1
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [("E0101", 4, 17), ("E0101", 6, 15)]


def test_an_unterminated_string_does_not_cascade(tmp_path: Path) -> None:
    path = write(tmp_path, "str.intent", """\
tenant t { tier: gold }
intent j {
  trigger: manual
  action: batch image "b:1 {
    seq_len: 4096
  }
  context: tenant t
  produces: x y
}
""")
    code, out = check(path)
    assert code == 1
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [("E0104", 4, 23), ("E0101", 8, 15)]


def test_a_missing_closing_brace_is_reported_once_and_the_next_block_is_read(tmp_path: Path) -> None:
    text = 'tenant t { tier: gold }\nintent a {\n  trigger on push\n  context: tenant t\n\n' \
           'intent b {\n  trigger: manual\n  action: batch image "b"\n  context: tenant t\n}\n'
    result = dsl.parse_full(SourceFile("a.intent", text))
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("E0101", 3, 11), ("E0101", 6, 1)]
    assert "is a '}' missing? intent 'a' is still open" in (result.diagnostics[1].hint or "")
    assert [i.name for i in result.program.intents] == ["b"]


def test_clause_errors_stop_at_the_limit() -> None:
    text = "".join(f'intent a{i} {{\n  triger: on push\n  action batch\n  constraints: cpu 4 memory 8\n}}\n'
                   for i in range(200))
    diags = dsl.parse_full(SourceFile("many.intent", text)).diagnostics
    assert len(diags) == dsl.MAX_SYNTAX_ERRORS + 1 and diags[-1].code == "E0008"


def _calls_to_skip(lines: int) -> int:
    """Parse a block broken at its first clause and followed by `lines` lines of ten junk
    words: how many functions (Python and built-in) the parse called, counted by a profile
    hook; checks that the error is reported once and the junk skipped."""
    text = 'intent a {\n  trigger on push\n' + "  x y z w v u t s r q\n" * lines + "}\n"
    calls = 0

    def count(_frame: object, event: str, _arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1
    before = sys.getprofile()
    sys.setprofile(count)
    try:
        diags = dsl.parse_full(SourceFile("big.intent", text)).diagnostics
    finally:
        sys.setprofile(before)
    assert [(d.code, d.span.line) for d in diags] == [("E0101", 2)]
    return calls


def test_skipping_a_large_broken_region_costs_less_than_a_call_per_token() -> None:
    """Finding where to resume is one regex search, not a Python loop per token: the
    work a parse does grows with the broken region by fewer function calls than the
    region has tokens (a loop over its tokens would make at least one call each)."""
    _calls_to_skip(10)                                   # warm: grammar tables, caches
    small, large = _calls_to_skip(10_000), _calls_to_skip(20_000)
    assert large - small < 10_000 * 10, (small, large)


def test_check_as_a_subprocess(tmp_path: Path) -> None:
    path = write(tmp_path, "embed.intent", THREE_CLAUSES)
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", path], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert [(c, line, col) for c, line, col, _ in findings(proc.stdout)] == [
        ("E0101", 4, 3), ("E0101", 5, 10), ("E0101", 7, 22)]


# -- did you mean: keywords ---------------------------------------------------------

@pytest.mark.parametrize("text, line, col, word, meant", [
    ("intent j {\n  triger: after x\n}\n", 2, 3, "triger", "trigger"),
    ("tenant t {\n  weigth: 4\n}\n", 2, 3, "weigth", "weight"),
    ('intent j {\n  trigger: manual\n  action: batch image "b" { seqlen: 4096 }\n}\n', 3, 29, "seqlen", "seq_len"),
    ("intnet j {\n}\n", 1, 1, "intnet", "intent"),
    ("tenant t {\n  Tier: gold\n}\n", 2, 3, "Tier", "tier"),
])
def test_misspelt_keyword_suggests_the_keyword(tmp_path: Path, text: str, line: int, col: int, word: str,
                                               meant: str) -> None:
    path = write(tmp_path, "typo.intent", text)
    code, out = check(path)
    assert code == 1
    (found,) = findings(out)
    assert found[:3] == ("E0101", line, col)
    assert found[3].endswith(f"found '{word}' (did you mean \"{meant}\"?)")


def test_a_value_is_not_taken_for_a_misspelt_keyword(tmp_path: Path) -> None:
    path = write(tmp_path, "comma.intent", "tenant t { tier: gold }\nintent j {\n  trigger: manual\n"
                                           '  action: batch image "b"\n  context: tenant t\n  consumes: a b\n}\n')
    _, out = check(path)
    (found,) = findings(out)
    assert "did you mean" not in found[3]


def test_yaml_unknown_property_suggests_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "j.yaml", """\
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata: {name: j}
spec:
  triger: {kind: manual}
  action: {kind: batch, image: "b:1"}
  context: {tenant: t}
""")
    code, out = check(path)
    assert code == 1
    hits = [f for f in findings(out) if f[0] == "E0212"]
    assert hits and hits[0][1:3] == (5, 3)
    assert hits[0][3].endswith('unknown property "triger" in spec (did you mean "trigger"?)')


# -- did you mean: tags -----------------------------------------------------------------

TAGGED = """\
tenant payments { tier: gold }
intent fraud {
  trigger: manual
  action: batch image "ghcr.io/acme/fraud:1"
  context: tenant payments, tags [pci-dss-complaint, nightly, hipa]
}
"""


def test_a_tag_one_typo_from_a_rule_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()                     # the repository root: no policies/ above it
    path = write(tmp_path, "fraud.intent", TAGGED)
    code, out = check(path)
    assert code == 0                                 # a warning...
    assert check(path, "--strict")[0] == 1           # ...that --strict makes fail
    assert findings(out) == [("W1021", 5, 35, 'tag "pci-dss-complaint" is not the tag of any rule '
                                              '(did you mean "pci-dss-compliant"?)')]
    assert block(out, "W1021", 5)[1:3] == [
        "   5 |   context: tenant payments, tags [pci-dss-complaint, nightly, hipa]",
        "     |                                   ^^^^^^^^^^^^^^^^^"]
    assert block(out, "W1021", 5)[3].startswith("  = hint: a rule's tag is written exactly")


def test_repository_rules_count_as_tags(tmp_path: Path) -> None:
    """A repository rule's tag is a rule's tag (no warning for it), and with the program at
    hand (`check --topology`) a tag close to a repository rule's tag warns too."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "rules.yaml").write_text("""\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: pci-variant}
spec: {tag: pci-dss-complaint, requires: [default-deny-network]}
---
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: hipaa}
spec: {tag: hipaa, requires: [exclusive-domain]}
""")
    path = write(tmp_path, "fraud.intent", TAGGED)
    topology = write(tmp_path, "cluster.yaml", TOPOLOGY.replace("rak:", "rack:").replace("nvlnk:", "nvlink:"))
    code, out = check(path)
    assert (code, findings(out)) == (0, [])
    code, out = check(path, "--topology", topology)
    assert code == 0, out
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [("W1021", 5, 63)]
    assert 'tag "hipa" is not the tag of any rule (did you mean "hipaa"?)' in out


# -- unknown topology levels ------------------------------------------------------------------

TOPOLOGY = """\
apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: prod}
spec:
  nodes:
    - name: hgx-001
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      domains:
        zone: z1
        rak: r01
        nvlink: hgx-001
    - name: hgx-002
      gpu: {product: H100-80GB, count: 8, memory: 80Gi}
      domains: {zone: z1, rack: r01, nvlnk: hgx-002, node: hgx-002}
"""


def test_unknown_topology_level_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster.yaml", TOPOLOGY)
    code, out = check(path)
    assert code == 1
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [("E0711", 10, 9), ("E0711", 14, 38)]
    assert block(out, "E0711", 10) == [
        f'{path}:10:9: error[E0711]: unknown topology level "rak" in the domains of node "hgx-001" '
        '(did you mean "rack"?)',
        "  10 |         rak: r01",
        "     |         ^^^",
        "  = hint: the levels of this topology are zone, rack, nvlink, node; a new level goes into spec.levels first"]
    assert findings(out)[1][3].endswith('"nvlnk" in the domains of node "hgx-002" (did you mean "nvlink"?)')


def test_unknown_topology_level_fails_check_with_topology(tmp_path: Path) -> None:
    intents = write(tmp_path, "a.intent", "tenant t { tier: gold }\n")
    topology = write(tmp_path, "cluster.yaml", TOPOLOGY)
    code, out = check(intents, "--topology", topology)
    assert code == 1
    assert [c for c, *_ in findings(out)] == ["E0711", "E0711"]


def test_levels_of_the_file_itself_are_the_allowed_keys(tmp_path: Path) -> None:
    text = TOPOLOGY.replace("spec:\n", "spec:\n  levels: [zone, rak, nvlink]\n").replace("nvlnk:", "nvlink:")
    path = write(tmp_path, "cluster.yaml", text)
    code, out = check(path)
    assert code == 1
    # `rak` is a level now, `node` always is one; hgx-002's `rack` is the unknown one
    assert [(c, line, col) for c, line, col, _ in findings(out)] == [("E0711", 15, 27)]
    assert 'unknown topology level "rack" in the domains of node "hgx-002" (did you mean "rak"?)' in out
    fine = write(tmp_path, "fine.yaml", TOPOLOGY.replace("rak:", "rack:").replace("nvlnk:", "nvlink:"))
    code, out = check(write(tmp_path, "a.intent", "tenant t { tier: gold }\n"), "--topology", fine)
    assert (code, findings(out)) == (0, [])
