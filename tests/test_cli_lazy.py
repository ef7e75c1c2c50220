"""Commands imported when they run (intentc/cli/lazy.py): what the command
line prints is the same as when every command is loaded up front, and
`intentc check` loads nothing it does not use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from intentc.cli import app
from intentc.cli.lazy import LISTED, LazyGroup, load_all
from tests.golden_support import assert_golden

ROOT = Path(__file__).parents[1]
# What click prints depends on the typer release: one set of expectations per
# release these were reviewed with (the newest, and the lowest pyproject allows).
TYPER = ".".join(typer.__version__.split(".")[:2])
GOLDEN = ROOT / "tests" / "golden" / "cli" / f"typer-{TYPER}"
REVIEWED = GOLDEN.is_dir() or os.environ.get("INTENTC_UPDATE_GOLDEN") == "1"
ENV = {"COLUMNS": "80", "LINES": "40", "NO_COLOR": "", "FORCE_COLOR": ""}


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name in cmd.list_commands(None) if hasattr(cmd, "list_commands") else ():
        yield from _walk(cmd.get_command(None, name), path + (name,))


def _python(script: str, cwd: Path = ROOT) -> str:
    """Run `script` in a fresh interpreter (nothing imported yet) and return its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(COLUMNS="80", LINES="40", INTENTC_CACHE_DIR="")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_table_lists_every_registered_command_in_help_order() -> None:
    load_all()
    registered = [c.name or typer.main.get_command_name(c.callback.__name__)  # type: ignore[union-attr]
                  for c in app.registered_commands] + [g.name for g in app.registered_groups]
    assert sorted(registered) == sorted(LISTED)
    root = typer.main.get_command(app)
    assert isinstance(root, LazyGroup)
    assert root.list_commands(None) == list(LISTED)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(LISTED))
def test_each_summary_shortens_as_the_command_help_does(name: str) -> None:
    """The list in `intentc --help` and completion show a command's help shortened to
    the first sentence or the width; the table's summary must shorten the same way."""
    root = typer.main.get_command(app)
    real = root.get_command(None, name)  # type: ignore[arg-type]
    assert real is not None
    with root.lazy.summaries():  # type: ignore[attr-defined]
        stub = LazyGroup(commands={}).lazy[name]
    for limit in range(10, 200):
        assert stub.get_short_help_str(limit) == real.get_short_help_str(limit), (name, limit)


def test_help_and_completion_are_the_same_lazily_and_with_every_command_loaded() -> None:
    """In a fresh interpreter: the root's --help and command-name completion before any
    command module is imported, then again with all of them imported and built by typer
    the way `intentc.cli` used to (the module of a command asked for is loaded alone)."""
    out = _python("""
        import json, os, sys
        from typer.testing import CliRunner
        from intentc.cli import app
        from intentc.cli.lazy import load_all

        def command_modules():
            return sorted(m for m in sys.modules if m.startswith("intentc.cli.") and m not in (
                "intentc.cli.app", "intentc.cli.lazy", "intentc.cli.coercion", "intentc.cli.spellings"))

        def shown():
            runner = CliRunner()
            env = {"COLUMNS": "80", "_INTENTC_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "intentc "}
            return [runner.invoke(app, ["--help"], prog_name="intentc").output,
                    runner.invoke(app, [], prog_name="intentc", env={"COLUMNS": "80"}).output,
                    runner.invoke(app, [], prog_name="intentc", env=env).output]

        lazily = shown()
        untouched = command_modules()
        only_fmt = CliRunner().invoke(app, ["fmt", "--help"], prog_name="intentc").output
        with_fmt = command_modules()
        load_all()
        print(json.dumps({"lazily": lazily, "loaded": shown(), "untouched": untouched, "with_fmt": with_fmt,
                          "fmt_help": only_fmt}))
    """)
    seen = json.loads(out)
    assert seen["untouched"] == []
    assert seen["with_fmt"] == ["intentc.cli.common", "intentc.cli.fmt"]
    assert seen["fmt_help"].startswith("Usage: intentc fmt [OPTIONS]")
    assert seen["lazily"] == seen["loaded"]
    assert "  watch        Recompile incrementally whenever an intent file changes." in seen["lazily"][0]
    assert '"check":"Parse and validate intents; exit 1 when..."' in seen["lazily"][2]


# Packages `intentc check` of a DSL repository has no use for: the cluster, git,
# the other commands, and what typer would convert parameters with.
NOT_FOR_CHECK = ("kubernetes", "git", "networkx", "pydantic", "yaml", "jsonschema", "rich", "deepdiff",
                 "watchfiles", "prometheus_client", "hypothesis", "intentc.kube", "intentc.vcs",
                 "intentc.render", "intentc.reconcile", "intentc.daemon", "intentc.plan", "intentc.graph.digraph",
                 "intentc.topology", "intentc.diff", "intentc.drift", "intentc.pipeline.stages", "intentc.cli.apply",
                 "intentc.cli.daemon", "intentc.cli.diff", "intentc.cli.topology")


def test_check_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / "one.intent").write_text((ROOT / "intents" / "tenants" / "tenants.intent").read_text())
    out = _python("""
        import json, sys
        import typer     # what typer loads itself (typer 0.16 loads rich) is not check's doing
        before = set(sys.modules)
        from intentc.cli import app
        try:
            app(["check", "."], prog_name="intentc")
        except SystemExit as e:
            code = e.code
        print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
    """, cwd=tmp_path)
    seen = json.loads(out.splitlines()[-1])
    assert out.startswith("ok: 0 intents, 2 tenants") and seen["code"] == 0
    unwanted = [m for m in seen["modules"] if any(m == n or m.startswith(n + ".") for n in NOT_FOR_CHECK)]
    assert unwanted == []
    assert "intentc.cli.check" in seen["modules"] and "intentc.frontend.dsl" in seen["modules"]


def test_a_cycle_is_still_described_by_check(tmp_path: Path) -> None:
    (tmp_path / "loop.intent").write_text(textwrap.dedent("""\
        tenant t { tier: gold }
        intent a { trigger: after b  action: batch image "i:1"  context: tenant t }
        intent b { trigger: after a  action: batch image "i:1"  context: tenant t }
        """).replace("  action", "\n  action").replace("  context", "\n  context"))
    res = CliRunner().invoke(app, ["check", str(tmp_path)])
    assert res.exit_code == 1
    assert "error[E0501]: dependency cycle: a → b → a" in res.output


def _help_paths() -> list[tuple[str, ...]]:
    load_all()
    return list(_walk(typer.main.get_command(app)))


@pytest.mark.skipif(not REVIEWED, reason=f"no expectations recorded for typer {TYPER}")
@pytest.mark.parametrize("path", _help_paths(), ids=lambda p: " ".join(p) or "intentc")
def test_help_golden(path: tuple[str, ...]) -> None:
    """Every command's --help, as 80 columns show it (tests/golden/cli/help/)."""
    res = CliRunner().invoke(app, [*path, "--help"], prog_name="intentc", env=ENV)
    assert res.exit_code == 0, res.output
    assert_golden(GOLDEN / "help" / ("-".join(path or ("intentc",)) + ".txt"), res.output)


# Usage errors: an unknown command or option, a missing argument, a bad value.
USAGE_ERRORS = {
    "unknown-command": ["chek", "."],
    "unknown-subcommand": ["topology", "imprt"],
    "unknown-option": ["check", ".", "--outptu", "json"],
    "unknown-root-option": ["--no-such"],
    "missing-argument": ["check"],
    "bad-choice": ["check", ".", "-o", "xml"],
    "bad-root-choice": ["--color", "sometimes", "check", "."],
    "bad-int": ["check", ".", "--jobs", "abc"],
    "int-below-min": ["plan", ".", "--seed", "-1"],
    "float-below-min": ["apply", ".", "-t", "x.yaml", "--timeout", "-1"],
    "option-needs-value": ["check", ".", "--jobs"],
}


@pytest.mark.skipif(not REVIEWED, reason=f"no expectations recorded for typer {TYPER}")
@pytest.mark.parametrize("name", list(USAGE_ERRORS))
def test_usage_error_golden(name: str) -> None:
    res = CliRunner().invoke(app, USAGE_ERRORS[name], prog_name="intentc", env=ENV)
    assert res.exit_code == 2
    assert_golden(GOLDEN / "usage" / f"{name}.txt", res.stderr)
