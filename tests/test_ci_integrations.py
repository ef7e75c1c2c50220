"""The CI integrations users copy (pre-commit hooks, the composite action, the
example workflow) run commands and options that exist, and install intentc
from source rather than from a package index that does not publish it."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from intentc.cli import app

ROOT = Path(__file__).parents[1]
CLI = typer.main.get_command(app)
WORKFLOWS = [ROOT / "action.yml", ROOT / "examples" / "github" / "intentc-pr.yml",
             *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]


def _command(words: list[str]) -> tuple[Any, list[str]]:
    """The click command `intentc WORDS...` runs, and the words after its name."""
    cmd: Any = CLI
    rest = list(words)
    while rest and hasattr(cmd, "commands") and rest[0] in cmd.commands:
        cmd = cmd.commands[rest.pop(0)]
    return cmd, rest


def _options(cmd: Any) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"-h", "--help"}


def _invocations(script: str) -> Iterator[list[str]]:
    """Every `intentc ...` command line of a shell script (up to a pipe or redirect)."""
    for line in script.replace("\\\n", " ").splitlines():
        for m in re.finditer(r"(?:^|[\s;(&|])intentc\s+([^|;&>]*)", line):
            yield shlex.split(m.group(1), comments=True)


def _runs(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("run", "entry") and isinstance(value, str):
                yield value
            else:
                yield from _runs(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from _runs(item)


def _check_invocation(words: list[str], where: str) -> str:
    cmd, rest = _command(words)
    assert cmd is not CLI, f"{where}: `intentc {' '.join(words)}` names no command"
    name = cmd.name
    res = CliRunner().invoke(app, [*words[:len(words) - len(rest)], "--help"])
    assert res.exit_code == 0, f"{where}: intentc {name} --help: {res.output}"
    known = _options(cmd)
    for word in rest:
        if word.startswith("-") and not word.startswith("${"):
            option = word.split("=", 1)[0]
            assert option in known, f"{where}: intentc {name} has no option {option}"
    return str(name)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_workflow_commands_exist(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    used = {_check_invocation(words, path.name) for script in _runs(doc) for words in _invocations(script)}
    assert used, f"{path.name} runs no intentc command"
    if path.name in ("action.yml", "intentc-pr.yml"):
        assert {"check", "diff", "schema-diff", "compile"} <= used, used


@pytest.mark.parametrize("path", WORKFLOWS[:2], ids=lambda p: p.name)
def test_installs_from_source_not_from_an_index(path: Path) -> None:
    installs = [s for s in _runs(yaml.safe_load(path.read_text())) if "pip install" in s]
    assert installs, path
    for script in installs:
        target = shlex.split(script.split("pip install", 1)[1])[-1]
        assert target in ('$GITHUB_ACTION_PATH', "./.intentc-src"), (path.name, target)   # a checkout, not a name


def test_action_inputs_and_steps() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"paths", "topology", "base-ref"} <= set(action["inputs"])
    assert all(step.get("shell") == "bash" for step in action["runs"]["steps"] if "run" in step)
    # inputs reach scripts through env, never pasted into the script text (no injection)
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]


@pytest.mark.parametrize("path", WORKFLOWS[:2], ids=lambda p: p.name)
def test_the_pr_comment_uses_the_chosen_render_target(path: Path) -> None:
    """diff (the PR comment: what the target creates per intent) and compile render for the
    same, configurable target."""
    runs = [words for script in _runs(yaml.safe_load(path.read_text())) for words in _invocations(script)]
    for words in runs:
        if words[0] in ("diff", "compile"):
            assert "--render-target" in words, words
    if path.name == "action.yml":
        assert yaml.safe_load(path.read_text())["inputs"]["render-target"]["default"] == "device-plugin"


def test_example_workflow_checks_out_intentc_and_compiles() -> None:
    wf = yaml.safe_load((ROOT / "examples" / "github" / "intentc-pr.yml").read_text())
    steps = wf["jobs"]["review"]["steps"]
    source = next(s for s in steps if s.get("with", {}).get("path") == ".intentc-src")
    assert source["uses"].startswith("actions/checkout@") and "repository" in source["with"]
    assert any("intentc compile" in s.get("run", "") for s in steps)


def test_pre_commit_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"intentc-check", "intentc-fmt"}
    for hook in hooks.values():
        assert hook["language"] == "python"             # pre-commit pip-installs this repository
        assert re.compile(hook["files"])
        words = shlex.split(hook["entry"])
        assert words[0] == "intentc"
        _check_invocation(words[1:] + hook.get("args", []), hook["id"])
    assert hooks["intentc-check"]["pass_filenames"] is False     # names resolve across files: check the tree
    assert re.search(hooks["intentc-fmt"]["files"], "a/b.intent") and not re.search(hooks["intentc-fmt"]["files"],
                                                                                    "a/b.yaml")


def test_license() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"             # the SPDX string (PEP 639)
    assert project["project"]["license-files"] == ["LICENSE"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in project["build-system"]["requires"])
