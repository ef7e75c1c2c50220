"""`intentc check` as CI runs it: exit codes and the four output formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    code, out = run("check", str(BAD), "-o", "json")
    assert code == 1
    items = json.loads(out)
    keys = {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint"}
    assert all(keys <= set(d) for d in items)
    assert [(d["code"], d["line"], d["column"]) for d in items][:2] == [("E0301", 7, 19), ("E0302", 8, 13)]


def test_github_format() -> None:
    _, out = run("check", str(BAD), "-o", "github")
    first = out.splitlines()[0]
    assert first.startswith("::error file=") and ",line=7,col=19,endLine=7,endColumn=25,title=E0301::" in first


def test_sarif_format() -> None:
    _, out = run("check", str(BAD), "-o", "sarif")
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


# -- JUnit --------------------------------------------------------------------

def test_junit_format_one_testcase_per_error_and_per_clean_file(tmp_path: Path) -> None:
    import shutil
    import xml.etree.ElementTree as ET

    shutil.copy(BAD / "repo.intent", tmp_path / "bad.intent")
    (tmp_path / "warn.intent").write_text((WARN_ONLY / "repo.intent").read_text().replace("team-a", "team-w"))
    shutil.copy(WARN_ONLY / "cluster.yaml", tmp_path / "cluster.yaml")     # the GPU products warned about
    (tmp_path / "fine.intent").write_text('dataset extra { uri: "s3://acme/extra" }\n')
    res = CliRunner().invoke(app, ["check", str(tmp_path), "-o", "junit"])
    assert res.exit_code == 1
    root = ET.fromstring(res.stdout)
    suite = root.find("testsuite")
    assert suite is not None
    cases = {Path(c.get("name", "")).name: c for c in suite.findall("testcase")}
    errors = ["bad.intent:7:19 E0301", "bad.intent:8:13 E0302", "bad.intent:13:18 E0303", "bad.intent:16:29 E0302"]
    assert set(cases) == {*errors, "warn.intent", "fine.intent", "cluster.yaml"}
    # one failure per error finding; the same counts on both elements, matching the elements
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == ("7", "4", "0")
    failures = [f for e in errors for f in cases[e].findall("failure")]
    assert len(failures) == 4 and len(suite.findall("testcase/failure")) == 4
    assert all(cases[e].get("file", "").endswith("bad.intent") for e in errors)
    assert [cases[e].get("line") for e in errors] == ["7", "8", "13", "16"]
    first = failures[0]
    assert first.get("type") == "E0301" and first.get("message", "").startswith('7:19: E0301: unknown tenant "team-b"')
    assert 'bad.intent:7:19: error[E0301]: unknown tenant "team-b"' in (first.text or "")
    assert "(hint: declare it with a `tenant` block" in (first.text or "")
    assert cases["fine.intent"].find("failure") is None
    warn = cases["warn.intent"]
    assert warn.find("failure") is None and "warning[" in (warn.findtext("system-out") or "")
    again = CliRunner().invoke(app, ["check", str(tmp_path), "-o", "junit"])
    assert again.stdout == res.stdout                                     # no timestamps: byte-identical


# -- colour ---------------------------------------------------------------------

def test_color_flag_and_environment() -> None:
    from intentc.cli.app import ColorMode, wants_color

    assert wants_color(ColorMode.AUTO, {}, True) and not wants_color(ColorMode.AUTO, {}, False)
    assert not wants_color(ColorMode.AUTO, {"NO_COLOR": "1"}, True)
    assert wants_color(ColorMode.AUTO, {"FORCE_COLOR": "1"}, False)
    assert not wants_color(ColorMode.AUTO, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True)   # NO_COLOR wins
    assert wants_color(ColorMode.AUTO, {"NO_COLOR": ""}, True)                           # empty means unset
    assert wants_color(ColorMode.ALWAYS, {"NO_COLOR": "1"}, False)
    assert not wants_color(ColorMode.NEVER, {"FORCE_COLOR": "1"}, True)


def test_color_in_text_diagnostics_only() -> None:
    import re

    runner = CliRunner()
    plain = runner.invoke(app, ["check", str(BAD)], env={"NO_COLOR": "", "FORCE_COLOR": ""}).stdout
    assert "\x1b[" not in plain                                          # not a terminal
    colored = runner.invoke(app, ["--color", "always", "check", str(BAD)]).stdout
    assert "\x1b[31m" in colored                                         # red: error
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain              # the same characters, only escapes added
    assert runner.invoke(app, ["check", str(BAD)], env={"FORCE_COLOR": "1"}).stdout == colored
    assert runner.invoke(app, ["--color", "never", "check", str(BAD)], env={"FORCE_COLOR": "1"}).stdout == plain
    as_json = runner.invoke(app, ["--color", "always", "check", str(BAD), "-o", "json"]).stdout
    assert "\x1b[" not in as_json and json.loads(as_json)


# -- progress -------------------------------------------------------------------

def test_progress_lines_only_after_a_while_and_only_on_stderr() -> None:
    import io

    from intentc.cli.progress import INTERVAL, StderrProgress

    now = [0.0]
    stream = io.StringIO()
    progress = StderrProgress(stream, is_terminal=False, clock=lambda: now[0])
    progress("parsing", 10, 100)
    now[0] = INTERVAL / 2
    progress("parsing", 50, 100)
    assert stream.getvalue() == ""                       # a quick run prints nothing
    now[0] = INTERVAL
    progress("parsing", 60, 100)
    now[0] = INTERVAL * 1.5
    progress("parsing", 70, 100)                         # too soon after the last line
    now[0] = INTERVAL * 2
    progress("parsing", 90, 100)
    assert stream.getvalue().splitlines() == [f"intentc: parsing: 60/100 ({INTERVAL:.0f}s)",
                                              f"intentc: parsing: 90/100 ({INTERVAL * 2:.0f}s)"]


def test_check_reports_parsing_progress(monkeypatch: Any) -> None:
    from intentc.cli import progress as cli_progress
    from intentc.pipeline import check

    heard: list[tuple[str, int, int]] = []
    result = check([str(ROOT / "intents")], jobs=1, use_cache=False,
                   progress=lambda what, done, total: heard.append((what, done, total)))
    files = len(result.files)
    assert heard[-1] == ("parsing", files, files) and [d for _, d, _ in heard] == sorted(d for _, d, _ in heard)

    monkeypatch.setattr(cli_progress, "INTERVAL", 0.0)      # every report becomes a line
    try:
        runner = CliRunner(mix_stderr=False)                  # type: ignore[call-arg]  # click < 8.2
    except TypeError:
        runner = CliRunner()                                  # click >= 8.2 keeps them apart anyway
    res = runner.invoke(app, ["check", str(ROOT / "intents"), "-o", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []            # stdout: the JSON alone
    assert f"intentc: parsing: {files}/{files}" in res.stderr


def test_progress_on_a_terminal_is_a_transient_live_line() -> None:
    import io

    from intentc.cli.progress import LIVE_DELAY, StderrProgress

    now = [0.0]
    stream = io.StringIO()
    with StderrProgress(stream, is_terminal=True, clock=lambda: now[0]) as progress:
        progress("parsing", 1, 4)
        assert stream.getvalue() == ""                   # no flicker from a quick run
        now[0] = LIVE_DELAY
        progress("parsing", 2, 4)
    assert "parsing" in stream.getvalue() and "2/4" in stream.getvalue()


def test_the_console_entry_point_ends_without_freeing_and_loses_no_output(tmp_path: Path) -> None:
    """`intentc check` leaves the program it built to the end of the process
    (`collector.hold`, `exit_held`): the exit code and every byte of a report
    larger than a pipe's buffer still come out."""
    for i in range(400):
        (tmp_path / f"bad-{i:03}.intent").write_text(f"intent broken-{i} {{\n  trigger on push\n}}\n")
    (tmp_path / "ok.intent").write_text('dataset fine { uri: "s3://x/fine" }\n')
    env = dict(os.environ, INTENTC_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):                               # parsed, then told from the memo
        run = subprocess.run([sys.executable, "-m", "intentc", "check", str(tmp_path), "-o", "json"],
                             capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 1, run.stderr
        assert len(run.stdout) > 65536
        assert len(json.loads(run.stdout)) >= 400
    clean = subprocess.run([sys.executable, "-m", "intentc", "check", str(tmp_path / "ok.intent")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert clean.returncode == 0 and clean.stdout.startswith("ok: 0 intents")
    from intentc import collector
    assert collector._held is None                   # in-process callers (this test run) hold nothing


def test_junit_counts_every_error_of_a_file() -> None:
    """Nine errors in one file are nine failures (they were one: a test case per file)."""
    import xml.etree.ElementTree as ET

    from intentc.diagnostics import Span, error, warning
    from intentc.diagnostics import format_junit

    diags = [error("E0301", f"unknown tenant t{i}", Span.point("a.intent", i + 1, 3)) for i in range(9)]
    diags.append(warning("W0401", "a warning", Span.point("a.intent", 20, 1)))
    root = ET.fromstring(format_junit(diags, ["a.intent", "b.intent"]))
    suite = root.find("testsuite")
    assert suite is not None
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures")) == ("10", "9")
    cases = suite.findall("testcase")
    assert len(cases) == 10 and len(suite.findall("testcase/failure")) == 9
    assert cases[0].get("name") == "a.intent:1:3 E0301" and cases[-1].get("name") == "b.intent"
    assert "warning[W0401]" in (cases[0].findtext("system-out") or "")
