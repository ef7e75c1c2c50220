"""schema-diff counts DSL intents: they lower to the same documents as YAML.

The repository's own schemas and intents are committed to a temporary git
repository; the head lowers `seq_len`'s maximum, which the `.intent` files
exceed (8192, 16384).  The DSL documents must be counted, positioned at the
DSL line that sets the value, and break exactly like their YAML spelling.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest
from git_support import commit
from typer.testing import CliRunner

from intentc.cli import app
from intentc.diff.schema_format import render
from intentc.diff.schema_report import SchemaReport, schema_diff
from intentc.diff.schema_rules import Level
from intentc.frontend.convert import Surface, convert
from intentc.frontend.sources import SourceFile
from intentc.vcs import gitrepo

ROOT = Path(__file__).resolve().parents[1]


def _tree(folder: str) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for p in sorted((ROOT / folder).rglob("*")) if p.is_file()}


def _lower_seq_len(text: str, maximum: int) -> str:
    schema = json.loads(text)
    schema["$defs"]["settings"]["properties"]["seq_len"]["maximum"] = maximum
    return json.dumps(schema, indent=2)


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    r = git.Repo.init(tmp_path / "repo")
    commit(r, {**_tree("schemas"), **_tree("intents")}, "base")
    intent_schema = _tree("schemas")["schemas/intent.schema.json"]
    commit(r, {"schemas/intent.schema.json": _lower_seq_len(intent_schema, 4096)}, "head")
    return r


def _report(r: git.Repo) -> SchemaReport:
    root = gitrepo.repo_root(r.working_tree_dir or ".")
    return schema_diff(gitrepo.read_tree(root, "HEAD~1", ("schemas",), (".json",)),
                       gitrepo.read_tree(root, "HEAD", ("schemas",), (".json",)),
                       gitrepo.read_tree(root, "HEAD~1", ("intents",), (".yaml", ".yml", ".intent")))


def test_dsl_intents_are_counted_at_their_lines(repo: git.Repo) -> None:
    report = _report(repo)
    (entry,) = [e for e in report.entries if e.finding.rule.name == "maximum-tightened"]
    assert entry.level is Level.ERR
    dsl = [a for a in entry.affected if a.file.endswith(".intent")]
    assert dsl, "no DSL intent counted"
    texts = _tree("intents")
    for a in dsl:
        line = texts[a.file].splitlines()[a.line - 1]
        assert "seq_len" in line and int(line.split("seq_len:")[1].split()[0].rstrip(",")) > 4096
        assert a.at.endswith("settings.seq_len") and a.breaks
    expected = sum(int(v.split()[0].rstrip(",")) > 4096 for f, t in texts.items() if f.endswith(".intent")
                   for v in t.split("seq_len:")[1:])
    assert len(dsl) == expected
    assert report.documents_checked > sum(t.count("\nkind:") + t.startswith("kind:") for f, t in texts.items()
                                          if f.endswith(".yaml"))


def test_dsl_and_yaml_spellings_break_alike(tmp_path: Path) -> None:
    """The same intents as DSL and converted to YAML: the same findings, the same instance locations."""
    dsl_path = "intents/nlp/inference.intent"
    dsl_text = _tree("intents")[dsl_path]
    yaml_text, diags = convert(SourceFile(dsl_path, dsl_text), Surface.YAML)
    assert yaml_text is not None, diags
    schemas = {p: t.encode() for p, t in _tree("schemas").items()}
    head = dict(schemas)
    head["schemas/intent.schema.json"] = _lower_seq_len(_tree("schemas")["schemas/intent.schema.json"], 4096).encode()
    as_dsl = schema_diff(schemas, head, {dsl_path: dsl_text.encode()})
    as_yaml = schema_diff(schemas, head, {"intents/nlp/inference.yaml": yaml_text.encode()})
    assert as_dsl.documents_checked == as_yaml.documents_checked > 0

    def summary(r: SchemaReport) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(e.finding.fingerprint, e.level.value, tuple(sorted(a.at for a in e.affected))) for e in r.entries]
    assert summary(as_dsl) == summary(as_yaml)
    assert any(e.affected for e in as_dsl.entries)


def test_sarif_output(repo: git.Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.working_tree_dir or ".")
    res = CliRunner().invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD", "-o", "sarif"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    (result,) = [r for r in run["results"] if r["ruleId"] == "SD403"]
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "schemas/intent.schema.json"
    related = [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in result["relatedLocations"]]
    assert any(u.endswith(".intent") for u in related)
    rules = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert "SD403" in rules
    assert render(_report(repo), "sarif", Level.ERR).startswith("{")


def test_output_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Sampling is derandomized: two fresh processes with different hash seeds print the same bytes."""
    import os
    import subprocess
    import sys

    r = git.Repo.init(tmp_path / "repo")
    common = _tree("schemas")["schemas/common.schema.json"]
    commit(r, {**_tree("schemas"), **_tree("intents")}, "base")
    schema = json.loads(common)
    schema["$defs"]["ref"]["pattern"] = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    commit(r, {"schemas/common.schema.json": json.dumps(schema, indent=2)}, "head")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-m", "intentc", "schema-diff", "--base", "HEAD~1", "--head", "HEAD"],
                             cwd=r.working_tree_dir, env=env, capture_output=True, check=False)
        assert res.returncode == 1, res.stderr
        outputs.append(res.stdout)
    assert outputs[0] == outputs[1]
    assert b"counter-example:" in outputs[0]
    # the same in this (pytest) process, whatever modules it has loaded, and no .hypothesis/ left behind
    import contextlib
    with contextlib.chdir(r.working_tree_dir or "."):
        res2 = CliRunner().invoke(app, ["schema-diff", "--base", "HEAD~1", "--head", "HEAD"])
    assert res2.output.encode() == outputs[0]
    assert not (Path(r.working_tree_dir or ".") / ".hypothesis").exists()
