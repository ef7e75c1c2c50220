"""`intentc schema-diff`: one real git repository per rule of the catalogue.

Each row of RULE_CASES is (rule name, base `spec` schema, head `spec` schema,
a base document's `spec`, how many documents the change must affect).  The
schemas are committed to a temporary repository made with GitPython (base
commit, then head commit) and read back through `intentc.vcs.gitrepo`, so the
rows exercise the real revision reading as well as the classifier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
from git_support import commit
from typer.testing import CliRunner

from intentc.cli import app
from intentc.diff.schema_format import render
from intentc.diff.schema_report import SchemaReport, parse_acknowledgements, schema_diff
from intentc.diff.schema_rules import BY_NAME, RULES, Level, catalogue_markdown
from intentc.vcs import gitrepo
from tests.test_cel_rules import NO_LATEST

ABSENT = object()          # the schema file does not exist on that side

RULE_CASES: list[tuple[str, Any, Any, Any, int]] = [
    ("schema-removed", {"type": "object"}, ABSENT, {"a": 1}, 1),
    ("schema-added", ABSENT, {"type": "object"}, {"a": 1}, 0),
    ("property-removed", {"properties": {"a": {"type": "string"}, "b": {}}}, {"properties": {"b": {}}},
     {"a": "x"}, 1),
    ("deprecated-property-removed", {"properties": {"a": {"type": "string", "deprecated": True}, "b": {}}},
     {"properties": {"b": {}}}, {"a": "x"}, 1),
    ("property-added", {"properties": {"a": {}}}, {"properties": {"a": {}, "c": {"type": "integer"}}}, {"a": 1}, 0),
    ("required-property-added", {"properties": {"a": {}}},
     {"properties": {"a": {}, "c": {"type": "integer"}}, "required": ["c"]}, {"a": 1}, 1),
    ("property-became-required", {"properties": {"a": {}, "b": {}}},
     {"properties": {"a": {}, "b": {}}, "required": ["b"]}, {"a": 1}, 1),
    ("property-became-optional", {"properties": {"a": {}}, "required": ["a"]}, {"properties": {"a": {}}},
     {"a": 1}, 1),
    ("property-deprecated", {"properties": {"a": {}}}, {"properties": {"a": {"deprecated": True}}}, {"a": 1}, 1),
    ("additional-properties-closed", {"properties": {"a": {}}},
     {"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "zzz": 2}, 1),
    ("additional-properties-opened", {"properties": {"a": {}}, "additionalProperties": False},
     {"properties": {"a": {}}}, {"a": 1}, 0),
    ("type-narrowed", {"properties": {"a": {"type": ["string", "integer"]}}},
     {"properties": {"a": {"type": "string"}}}, {"a": 3}, 1),
    ("type-widened", {"properties": {"a": {"type": "integer"}}}, {"properties": {"a": {"type": "number"}}},
     {"a": 3}, 0),
    ("type-changed", {"properties": {"a": {"type": "string"}}}, {"properties": {"a": {"type": "integer"}}},
     {"a": "x"}, 1),
    ("enum-value-removed", {"properties": {"a": {"enum": ["x", "y"]}}}, {"properties": {"a": {"enum": ["x"]}}},
     {"a": "y"}, 1),
    ("enum-value-added", {"properties": {"a": {"enum": ["x"]}}}, {"properties": {"a": {"enum": ["x", "y"]}}},
     {"a": "x"}, 0),
    ("enum-added", {"properties": {"a": {"type": "string"}}},
     {"properties": {"a": {"type": "string", "enum": ["x"]}}}, {"a": "q"}, 1),
    ("enum-removed", {"properties": {"a": {"type": "string", "enum": ["x"]}}},
     {"properties": {"a": {"type": "string"}}}, {"a": "x"}, 0),
    ("const-changed", {"properties": {"a": {"const": 1}}}, {"properties": {"a": {"const": 2}}}, {"a": 1}, 1),
    ("const-removed", {"properties": {"a": {"const": 1}}}, {"properties": {"a": {}}}, {"a": 1}, 0),
    ("default-added", {"properties": {"a": {"type": "integer"}}},
     {"properties": {"a": {"type": "integer", "default": 3}}}, {"b": 1}, 1),
    ("default-changed", {"properties": {"a": {"type": "integer", "default": 3}}},
     {"properties": {"a": {"type": "integer", "default": 4}}}, {"a": 9}, 0),
    ("default-removed", {"properties": {"a": {"type": "integer", "default": 3}}},
     {"properties": {"a": {"type": "integer"}}}, {}, 1),
    ("pattern-added", {"properties": {"a": {"type": "string"}}},
     {"properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}, {"a": "X1"}, 1),
    ("pattern-changed", {"properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}},
     {"properties": {"a": {"type": "string", "pattern": "^[a-c]+$"}}}, {"a": "xyz"}, 1),
    ("pattern-removed", {"properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}},
     {"properties": {"a": {"type": "string"}}}, {"a": "xyz"}, 0),
    ("ref-changed", {"properties": {"a": {"$ref": "#/$defs/small"}}}, {"properties": {"a": {"$ref": "#/$defs/tiny"}}},
     {"a": 5}, 1),
    ("composition-changed", {"properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
     {"properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer", "maximum": 3}, {"type": "null"}]}}},
     {"a": 7}, 1),
    ("keyword-changed", {"properties": {"a": {"type": "array", "contains": {"type": "integer"}}}},
     {"properties": {"a": {"type": "array", "contains": {"type": "integer", "minimum": 5}}}}, {"a": [1]}, 1),
    ("dependency-added", {"properties": {"a": {}, "b": {}}},
     {"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}}, {"a": 1}, 1),
    ("dependency-removed", {"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
     {"properties": {"a": {}, "b": {}}}, {"a": 1, "b": 2}, 0),
    ("property-names-changed", {"type": "object"}, {"type": "object", "propertyNames": {"maxLength": 3}},
     {"abcd": 1}, 1),
    ("not-changed", {"properties": {"a": {"type": "integer"}}},
     {"properties": {"a": {"type": "integer", "not": {"const": 3}}}}, {"a": 3}, 1),
    ("conditional-changed", {"properties": {"a": {}, "b": {}}},
     {"properties": {"a": {}, "b": {}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"a": 1}, 1),
]

# (rule, keyword, base value, head value, document value, affected)
BOUND_CASES: list[tuple[str, str, Any, Any, Any, int]] = [
    ("minimum-tightened", "minimum", 1, 5, 3, 1),
    ("minimum-loosened", "minimum", 5, 1, 6, 0),
    ("maximum-tightened", "maximum", 10, 5, 7, 1),
    ("maximum-loosened", "maximum", 5, None, 4, 0),
    ("exclusive-minimum-tightened", "exclusiveMinimum", None, 0, 0, 1),
    ("exclusive-minimum-loosened", "exclusiveMinimum", 0, -1, 1, 0),
    ("exclusive-maximum-tightened", "exclusiveMaximum", 10, 5, 5, 1),
    ("exclusive-maximum-loosened", "exclusiveMaximum", 5, 10, 1, 0),
    ("min-length-tightened", "minLength", 1, 3, "ab", 1),
    ("min-length-loosened", "minLength", 3, 1, "abc", 0),
    ("max-length-tightened", "maxLength", 5, 2, "abc", 1),
    ("max-length-loosened", "maxLength", 2, 5, "ab", 0),
    ("min-items-tightened", "minItems", None, 2, ["x"], 1),
    ("min-items-loosened", "minItems", 2, 1, ["x", "y"], 0),
    ("max-items-tightened", "maxItems", 3, 1, ["x", "y"], 1),
    ("max-items-loosened", "maxItems", 1, 3, ["x"], 0),
    ("multiple-of-tightened", "multipleOf", 2, 4, 6, 1),
    ("multiple-of-loosened", "multipleOf", 4, 2, 8, 0),
    ("unique-items-added", "uniqueItems", None, True, ["x", "x"], 1),
    ("unique-items-removed", "uniqueItems", True, None, ["x"], 0),
    ("min-properties-tightened", "minProperties", None, 2, {"x": 1}, 1),
    ("min-properties-loosened", "minProperties", 2, 1, {"x": 1, "y": 2}, 0),
    ("max-properties-tightened", "maxProperties", 3, 1, {"x": 1, "y": 2}, 1),
    ("max-properties-loosened", "maxProperties", 1, 3, {"x": 1}, 0),
]

# A changed $ref is flagged, and the difference between the two targets is classified as well.
ALSO = {"ref-changed": ("maximum-tightened",)}

DEFS = {"small": {"type": "integer", "maximum": 10}, "tiny": {"type": "integer", "maximum": 3}}


def _bound_spec(kw: str, value: Any) -> dict[str, Any]:
    return {"properties": {"a": {} if value is None else {kw: value}}}


ALL_CASES = RULE_CASES + [(name, _bound_spec(kw, b), _bound_spec(kw, h), {"a": doc}, n)
                          for name, kw, b, h, doc, n in BOUND_CASES]


def document_schema(spec: Any) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.test/thing.schema.json",
        "type": "object",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"const": "Thing"},
                       "metadata": {"type": "object"}, "spec": spec},
        "$defs": DEFS,
    }


def document(spec: Any) -> str:
    return ("apiVersion: intentc.dev/v1alpha1\nkind: Thing\nmetadata:\n  name: doc-one\nspec: "
            + json.dumps(spec) + "\n")


def schema_text(spec: Any) -> str | None:
    return None if spec is ABSENT else json.dumps(document_schema(spec), indent=2)


def make_repo(tmp_path: Path, base: Any, head: Any, doc: Any) -> git.Repo:
    repo = git.Repo.init(tmp_path / "repo")
    commit(repo, {"schemas/thing.schema.json": schema_text(base), "intents/doc.yaml": document(doc),
                  "intents/notes.intent": "not yaml, ignored\n"}, "base")
    commit(repo, {"schemas/thing.schema.json": schema_text(head)}, "head")
    return repo


def report_between(repo: git.Repo, base: str = "HEAD~1", head: str | None = "HEAD",
                   acks: frozenset[str] = frozenset()) -> SchemaReport:
    root = gitrepo.repo_root(repo.working_tree_dir or ".")
    return schema_diff(gitrepo.read_tree(root, base, ("schemas",), (".json",)),
                       gitrepo.read_tree(root, head, ("schemas",), (".json",)),
                       gitrepo.read_tree(root, base, ("intents",), (".yaml", ".yml")), base, head or "worktree", acks)


def test_every_rule_has_a_case() -> None:
    assert sorted(c[0] for c in ALL_CASES) == sorted(BY_NAME)


def test_rule_ids_are_unique_and_stable_shaped() -> None:
    assert len(RULES) == len(BY_NAME)
    assert all(r.id.startswith("SD") and len(r.id) == 5 for r in RULES.values())
    assert all(BY_NAME[n].level is Level.ERR for n in ("default-added", "default-changed", "default-removed"))


@pytest.mark.parametrize("name,base,head,doc,affected", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_rule(tmp_path: Path, name: str, base: Any, head: Any, doc: Any, affected: int) -> None:
    repo = make_repo(tmp_path, base, head, doc)
    report = report_between(repo)
    expected = BY_NAME[name]
    got = sorted((e.finding.rule.id, e.finding.rule.level.value) for e in report.entries)
    also = sorted((BY_NAME[n].id, BY_NAME[n].level.value) for n in ALSO.get(name, ()))
    assert got == sorted([(expected.id, expected.level.value)] + also), [e.finding.message for e in report.entries]
    (entry,) = [e for e in report.entries if e.finding.rule is expected]
    assert entry.documents == affected
    for a in entry.affected:
        assert (a.file, a.kind, a.name) == ("intents/doc.yaml", "Thing", "doc-one")
        assert a.line >= 1 and a.column >= 1
    assert entry.line >= 1


def test_positions_point_at_the_value(tmp_path: Path) -> None:
    base = {"properties": {"a": {"maximum": 10}}}
    head = {"properties": {"a": {"maximum": 5}}}
    repo = make_repo(tmp_path, base, head, {"a": 7})
    (entry,) = report_between(repo).entries
    (a,) = entry.affected
    assert (a.line, a.column, a.at) == (5, 8, "spec.a")           # `spec: {"a": 7}` -> the 7
    text = (Path(repo.working_tree_dir or ".") / "schemas/thing.schema.json").read_text().splitlines()
    assert '"maximum": 5' in text[entry.line - 1]


def test_no_change_no_findings(tmp_path: Path) -> None:
    spec = {"properties": {"a": {"type": "string", "description": "x"}}}
    repo = make_repo(tmp_path, spec, {"properties": {"a": {"type": "string", "description": "changed"}}}, {"a": "x"})
    assert report_between(repo).entries == ()


def test_refs_across_files_and_shared_definitions(tmp_path: Path) -> None:
    """A change in a shared definition is reported once, at its own file and pointer,
    and counts every document that uses it, wherever it is referenced from."""
    common = {"$id": "https://example.test/common.schema.json",
              "$defs": {"name": {"type": "string", "maxLength": 20}}}
    head_common = {"$id": "https://example.test/common.schema.json",
                   "$defs": {"name": {"type": "string", "maxLength": 4}}}
    spec = {"properties": {"owner": {"$ref": "common.schema.json#/$defs/name"},
                           "peers": {"type": "array", "items": {"$ref": "common.schema.json#/$defs/name"}}}}
    repo = git.Repo.init(tmp_path / "repo")
    commit(repo, {"schemas/common.schema.json": json.dumps(common), "schemas/thing.schema.json": schema_text(spec),
                  "intents/doc.yaml": document({"owner": "alice", "peers": ["bob", "carol", "dave"]})}, "base")
    commit(repo, {"schemas/common.schema.json": json.dumps(head_common)}, "head")
    (entry,) = report_between(repo).entries
    assert entry.finding.rule.name == "max-length-tightened"
    assert (entry.finding.schema, entry.finding.pointer) == ("schemas/common.schema.json", "/$defs/name/maxLength")
    assert sorted(a.at for a in entry.affected) == ["spec.owner", "spec.peers.1"]
    assert entry.documents == 1


def test_oneof_branch_guard(tmp_path: Path) -> None:
    """A bound tightened inside one oneOf branch only counts documents that took that branch."""
    base = {"properties": {"a": {"oneOf": [{"type": "integer", "maximum": 100}, {"type": "string"}]}}}
    head = {"properties": {"a": {"oneOf": [{"type": "integer", "maximum": 10}, {"type": "string"}]}}}
    repo = make_repo(tmp_path, base, head, {"a": 50})
    (entry,) = report_between(repo).entries
    assert entry.finding.rule.name == "maximum-tightened" and entry.documents == 1
    repo2 = make_repo(tmp_path / "two", base, head, {"a": "fifty"})
    (entry2,) = report_between(repo2).entries
    assert entry2.documents == 0


def test_fingerprint_ignores_line_numbers(tmp_path: Path) -> None:
    base = {"properties": {"a": {"type": "integer", "default": 1}}}
    head = {"properties": {"a": {"type": "integer", "default": 2}}}
    repo = make_repo(tmp_path, base, head, {})
    first_entry = report_between(repo).entries[0]
    first = first_entry.finding.fingerprint
    reformatted = json.dumps(document_schema(head), indent=8, sort_keys=True)
    commit(repo, {"schemas/thing.schema.json": "\n\n" + reformatted}, "reformat")
    again = report_between(repo, "HEAD~2", "HEAD").entries
    assert [e.finding.fingerprint for e in again] == [first]
    assert again[0].line != first_entry.line
    assert report_between(repo).entries == ()          # the reformat alone changes nothing


def test_acknowledgement_carries_across_commits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"properties": {"a": {"default": 1}}}, {"properties": {"a": {"default": 2}}}, {})
    fp = report_between(repo).entries[0].finding.fingerprint
    acks = parse_acknowledgements(f"# reviewed by ops\n{fp}  # default bump is intended\n")
    commit(repo, {"README.md": "unrelated\n"}, "later")
    report = report_between(repo, "HEAD~2", "HEAD", acks)
    assert report.entries[0].acknowledged and not report.failing(Level.ERR)


def test_formats(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"properties": {"a": {"enum": ["x", "y"]}}},
                     {"properties": {"a": {"enum": ["x"]}}}, {"a": "y"})
    report = report_between(repo)
    text = render(report, "text", Level.ERR)
    assert "ERR SD211 enum-value-removed" in text and "intents/doc.yaml:5:" in text
    data = json.loads(render(report, "json", Level.ERR))
    assert data["findings"][0]["rule"] == "SD211" and data["findings"][0]["documents"] == 1
    md = render(report, "markdown", Level.ERR)
    assert "<details>" in md and "| ERR | `SD211`" in md
    gh = render(report, "github", Level.ERR)
    assert gh.startswith("::error file=schemas/thing.schema.json,line=")


def test_catalogue_doc_is_current() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "schema-diff-rules.md").read_text(encoding="utf-8")
    assert catalogue_markdown() in doc


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------

runner = CliRunner()


def test_cli_exit_codes_and_fail_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same language, spelt differently: no counter-example, so "maybe" (WARN)
    repo = make_repo(tmp_path, {"properties": {"a": {"pattern": "^a"}}},
                     {"properties": {"a": {"pattern": "^(a|a)"}}}, {"a": "abc"})
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD"])
    assert res.exit_code == 0, res.output          # a WARN does not fail by default
    assert "WARN SD502 pattern-changed" in res.output
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD", "--fail-on", "WARN"])
    assert res.exit_code == 1
    fp = json.loads(runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "-o", "json"]).output)[
        "findings"][0]["fingerprint"]
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "--fail-on", "WARN", "--ack", fp])
    assert res.exit_code == 0


def test_cli_default_change_always_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path, {"properties": {"a": {"default": "x"}}}, {"properties": {"a": {"default": "y"}}}, {})
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1"])
    assert res.exit_code == 1 and "SD302 default-changed" in res.output


def test_cli_working_tree_is_the_default_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed = {"properties": {"a": {}}, "additionalProperties": False}
    repo = make_repo(tmp_path, closed, closed, {"a": 1})
    root = Path(repo.working_tree_dir or ".")
    (root / "schemas/thing.schema.json").write_text(
        schema_text({"properties": {}, "additionalProperties": False}) or "")
    monkeypatch.chdir(root)
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD"])
    assert res.exit_code == 1 and "SD101 property-removed" in res.output and "working tree" in res.output


def test_cli_invalid_schema_json_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path, {"properties": {}}, {"properties": {}}, {})
    root = Path(repo.working_tree_dir or ".")
    (root / "schemas/thing.schema.json").write_text("{\n  \"type\": \n")
    monkeypatch.chdir(root)
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD"])
    assert res.exit_code == 2 and "E0801" in res.output


def test_cli_shallow_clone_says_fetch_more_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path, {"properties": {}}, {"properties": {"a": {}}}, {})
    clone = git.Repo.clone_from(f"file://{repo.working_tree_dir}", tmp_path / "shallow", depth=1)
    monkeypatch.chdir(clone.working_tree_dir or ".")
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1"])
    assert res.exit_code == 2
    assert "not available in this shallow clone" in res.output
    assert "git fetch --unshallow" in res.output and "fetch-depth: 0" in res.output


def test_golden_outputs(tmp_path: Path) -> None:
    from golden_support import assert_golden
    base = {"properties": {"a": {"type": "integer", "maximum": 10, "default": 1}, "b": {"deprecated": True},
                           "c": {"enum": ["x", "y"]}}}
    head = {"properties": {"a": {"type": "integer", "maximum": 5, "default": 2}, "c": {"enum": ["x", "z"]}},
            "required": ["a"]}
    repo = make_repo(tmp_path, base, head, {"a": 7, "b": True, "c": "y"})
    report = report_between(repo)
    golden = Path(__file__).parent / "golden" / "diff"
    for fmt, suffix in (("text", "txt"), ("markdown", "md"), ("json", "json"), ("github", "github")):
        assert_golden(golden / f"schema_diff.{suffix}", render(report, fmt, Level.ERR))


def test_sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path, {"properties": {"a": {"enum": ["x", "y"]}, "b": {"default": 1}}},
                     {"properties": {"a": {"enum": ["x"]}, "b": {"default": 2}}}, {"a": "y"})
    plain = report_between(repo)
    acked = next(e.finding.fingerprint for e in plain.entries if e.finding.rule.id == "SD302")
    report = report_between(repo, acks=frozenset({acked}))
    doc = json.loads(render(report, "sarif", Level.ERR))
    assert doc["version"] == "2.1.0"
    run_ = doc["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({e.finding.rule.id for e in report.entries})
    by_rule = {r["ruleId"]: r for r in run_["results"]}
    enum = by_rule["SD211"]
    assert enum["level"] == "error" and rules[enum["ruleIndex"]]["name"] == "enum-value-removed"
    assert "breaks 1 document of the base revision" in enum["message"]["text"]
    location = enum["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "schemas/thing.schema.json"
    assert location["physicalLocation"]["region"]["startLine"] > 1
    assert location["logicalLocations"][0]["fullyQualifiedName"].endswith("/properties/a/enum")
    assert enum["partialFingerprints"]["intentcSchemaFinding/v1"] != acked
    assert "suppressions" not in enum and enum["properties"]["failing"]
    default = by_rule["SD302"]
    assert default["suppressions"][0]["kind"] == "external" and not default["properties"]["failing"]
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "sarif"])
    assert res.exit_code == 1 and json.loads(res.stdout)["runs"][0]["results"]


def test_a_maybe_that_breaks_a_real_document_is_err(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No boundary value or sample finds the one string the head now excludes, so the
    change alone is "maybe" (WARN); a base document uses that string, so it is ERR and
    fails CI, with the document's line."""
    base = {"properties": {"a": {"type": "string", "pattern": "^[a-z]{8}$"}}}
    head = {"properties": {"a": {"type": "string", "pattern": "^(?!zqxjkvbw)[a-z]{8}$"}}}
    repo = make_repo(tmp_path, base, head, {"a": "abcdefgh"})
    (entry,) = report_between(repo).entries
    assert entry.finding.severity is Level.WARN and entry.level is Level.WARN   # nothing breaks: maybe
    repo2 = make_repo(tmp_path / "two", base, head, {"a": "zqxjkvbw"})
    (entry2,) = report_between(repo2).entries
    assert entry2.finding.severity is Level.WARN and entry2.level is Level.ERR
    assert [(a.file, a.line, a.breaks) for a in entry2.affected] == [("intents/doc.yaml", 5, True)]
    monkeypatch.chdir(repo2.working_tree_dir or ".")
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD"])
    assert res.exit_code == 1
    assert "ERR SD502 pattern-changed" in res.output and "intents/doc.yaml:5:" in res.output
    assert "now invalid" in res.output and "makes documents of the base invalid" in res.output


# --------------------------------------------------------------------------
# Organisation rules (policies/ `rules:`, docs/rules.md)
# --------------------------------------------------------------------------

RULE_INTENTS = """\
tenant team-x { tier: gold }

intent train {
  trigger: on push
  action: training image "ghcr.io/acme/train:1.0"
  context: tenant team-x
  constraints: gpus 2, duration 12h
}

intent tool {
  trigger: on push
  action: batch image "ghcr.io/acme/tool:1.0"
  context: tenant team-x
}
"""

ORG_BASE = NO_LATEST        # the base: one rule, no `latest` images (tests/test_cel_rules.py)

# the head: one rule changed (it fails nobody new), one added that fails `tool`
ORG_HEAD = ORG_BASE.replace("endsWith(\":latest\")'", "endsWith(\":latest\") && intent.image != \"\"'") + """\
    - name: no-batch
      expression: intent.kind != "batch"
      message: batch work runs elsewhere
"""


def rules_repo(tmp_path: Path) -> Path:
    repo = git.Repo.init(tmp_path / "repo")
    schema = schema_text({"properties": {"a": {}}})
    commit(repo, {"schemas/thing.schema.json": schema, "intents/all.intent": RULE_INTENTS,
                  "policies/org.yaml": ORG_BASE}, "base")
    commit(repo, {"policies/org.yaml": ORG_HEAD}, "head")
    return Path(repo.working_tree_dir or ".")


def test_cli_rule_changes_and_the_intents_they_newly_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No schema changes, yet the head adds a rule that the base's `tool` fails: ERR, and
    `--fail-on ERR` fails until it is acknowledged; the reworded rule is INFO."""
    monkeypatch.chdir(rules_repo(tmp_path))
    args = ["schema-diff", "--base", "HEAD~1", "--head", "HEAD"]
    res = runner.invoke(app, args)
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    added = next(n for n, line in enumerate(lines) if "SR001" in line)
    assert lines[added].startswith("policies/org.yaml:9:") and \
        "ERR SR001 organisation-rule-added: rule no-batch added" in lines[added]
    assert "newly fails 1 intent of the base revision" in lines[added + 1]
    assert lines[added + 2].strip().startswith("intents/all.intent:") and "intent tool (E1030)" in lines[added + 2]
    changed = next(line for line in lines if "SR002" in line)
    assert "INFO SR002 organisation-rule-changed: rule no-latest-images:" in changed
    assert lines[-1].startswith("1 ERR, 0 WARN, 1 INFO;")

    data = json.loads(runner.invoke(app, [*args, "-o", "json"]).stdout)
    assert data["findings"] == [] and data["counts"] == {"ERR": 1, "WARN": 0, "INFO": 1} and data["failing"] == 1
    by_name = {r["name"]: r for r in data["rules"]}
    assert (by_name["no-batch"]["status"], by_name["no-batch"]["severity"]) == ("added", "ERR")
    assert [(f["intent"], f["code"], f["file"]) for f in by_name["no-batch"]["newly_fails"]] == \
        [("tool", "E1030", "intents/all.intent")]
    assert (by_name["no-latest-images"]["status"], by_name["no-latest-images"]["severity"],
            by_name["no-latest-images"]["newly_fails"]) == ("changed", "INFO", [])

    assert runner.invoke(app, [*args, "--fail-on", "INFO", "--ack", by_name["no-batch"]["fingerprint"]]).exit_code == 1
    fps = [r["fingerprint"] for r in data["rules"]]
    assert runner.invoke(app, [*args, "--ack", fps[0]]).exit_code == 0
    acked = runner.invoke(app, [*args, "--fail-on", "INFO", *(a for fp in fps for a in ("--ack", fp))])
    assert acked.exit_code == 0 and "(acknowledged)" in acked.stdout

    md = runner.invoke(app, [*args, "-o", "markdown"]).stdout
    assert "#### Organisation rules" in md and "| ERR | `SR001` organisation-rule-added |" in md
    gh = runner.invoke(app, [*args, "-o", "github"]).stdout
    assert gh.startswith("::error file=policies/org.yaml,line=9")
    sarif = json.loads(runner.invoke(app, [*args, "-o", "sarif"]).stdout)["runs"][0]
    result = next(r for r in sarif["results"] if r["ruleId"] == "SR001")
    assert result["level"] == "error" and result["relatedLocations"][0]["physicalLocation"][
        "artifactLocation"]["uri"] == "intents/all.intent"


def test_rule_fingerprint_survives_moving_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule moved to another line (or file) keeps its fingerprint, so an acknowledgement carries."""
    root = rules_repo(tmp_path)
    monkeypatch.chdir(root)
    args = ["schema-diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "json"]
    before = json.loads(runner.invoke(app, args).stdout)["rules"]
    commit(git.Repo(root), {"policies/org.yaml": "# reviewed\n" + ORG_HEAD}, "moved")
    after = json.loads(runner.invoke(app, ["schema-diff", "--base", "HEAD~2", "--head", "HEAD", "-o", "json"]
                                      ).stdout)["rules"]
    assert [r["fingerprint"] for r in before] == [r["fingerprint"] for r in after]
    assert [r["line"] for r in before] != [r["line"] for r in after]


def test_cli_head_rule_that_does_not_load_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Left out, the broken rule would read as removed (INFO) and pass: a usage error instead."""
    root = rules_repo(tmp_path)
    commit(git.Repo(root), {"policies/org.yaml": ORG_HEAD.replace('intent.kind != "batch"', "intnet.kind != 1")},
           "broken")
    monkeypatch.chdir(root)
    res = runner.invoke(app, ["schema-diff", "--base", "HEAD~2", "--head", "HEAD"])
    assert res.exit_code == 2 and "E1031" in res.output
