"""`intentc check` as CI runs it: exit codes and the four output formats."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from intentc.cli import app

ROOT = Path(__file__).parents[1]
BAD = ROOT / "tests" / "golden" / "passes" / "resolve_names--unknown-refs"
WARN_ONLY = ROOT / "tests" / "golden" / "passes" / "check_gpu_products--unknown-product"


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.output


def test_example_repository_checks_clean() -> None:
    code, out = run("check", str(ROOT / "intents"))
    assert code == 0, out
    assert out.startswith("ok: 17 intents, 3 tenants, 5 datasets")


def test_exit_codes() -> None:
    assert run("check", str(BAD))[0] == 1
    assert run("check", str(ROOT / "no-such-dir"))[0] == 2
    assert run("check")[0] == 2                                   # usage error
    assert run("check", str(WARN_ONLY))[0] == 0                  # warnings never fail...
    assert run("check", str(WARN_ONLY), "--strict")[0] == 1      # ...unless --strict


def test_text_format_has_position_source_line_and_caret() -> None:
    _, out = run("check", str(BAD))
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if "error[E0301]" in line)
    assert lines[first].endswith('repo.intent:7:19: error[E0301]: unknown tenant "team-b" (did you mean "team-a"?)')
    assert lines[first + 1] == "   7 |   context: tenant team-b"
    assert lines[first + 2] == "     |                   ^^^^^^"


def test_json_format() -> None:
    code, out = run("check", str(BAD), "--format", "json")
    assert code == 1
    items = json.loads(out)
    keys = {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint"}
    assert all(keys <= set(d) for d in items)
    assert [(d["code"], d["line"], d["column"]) for d in items][:2] == [("E0301", 7, 19), ("E0302", 8, 13)]


def test_github_format() -> None:
    _, out = run("check", str(BAD), "--format", "github")
    first = out.splitlines()[0]
    assert first.startswith("::error file=") and ",line=7,col=19,endLine=7,endColumn=25,title=E0301::" in first


def test_sarif_format() -> None:
    _, out = run("check", str(BAD), "--format", "sarif")
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    run_ = doc["runs"][0]
    rules = {r["id"]: r["shortDescription"]["text"] for r in run_["tool"]["driver"]["rules"]}
    assert rules["E0301"] == "unknown tenant"
    result = run_["results"][0]
    assert rules[result["ruleId"]] and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (7, 19)


def test_every_command_has_help_with_examples() -> None:
    import typer.main

    group = typer.main.get_command(app)
    names = sorted(group.commands)  # type: ignore[attr-defined]
    assert {"check", "plan", "compile", "apply", "diff", "schema-diff", "fmt", "convert", "graph"} <= set(names)
    for name in names:
        code, out = run(name, "--help")
        assert code == 0, name
        assert "Examples" in out or name == "topology", name
