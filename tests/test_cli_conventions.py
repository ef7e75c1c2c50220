"""Conventions every command keeps (docs/cli-conventions.md): `-h`, placeholders
that are words, one meaning per short option (kubectl's: `-o` output format,
`-f` a file to read; `-d` a directory to write), the older spellings still
taken with a warning, global options after the command, durations, `--dry-run`
modes, and shell completion."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from intentc.cli import app

runner = CliRunner()


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _walk(sub, path + (name,))


COMMANDS = dict(_walk(typer.main.get_command(app)))
IDS = [" ".join(p) or "intentc" for p in COMMANDS]


def _help(path: tuple[str, ...], flag: str = "--help") -> str:
    result = runner.invoke(app, [*path, flag], prog_name="intentc")
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed() -> None:
    assert {p for p in COMMANDS if len(p) == 1} >= {
        ("check",), ("convert",), ("graph",), ("plan",), ("schema-diff",), ("diff",), ("compile",), ("apply",),
        ("fmt",), ("drift",), ("rollback",), ("daemon",), ("watch",), ("topology",)}
    assert ("topology", "import") in COMMANDS and ("topology", "inspect") in COMMANDS


@pytest.mark.parametrize("path", list(COMMANDS), ids=IDS)
def test_h_is_help(path: tuple[str, ...]) -> None:
    text = _help(path, "-h")
    assert text == _help(path, "--help")
    assert text.startswith("Usage: intentc") and "-h, --help" in text


# An option row of --help: "  -o, --format <text|json>   Output format." (the
# placeholder may end the line when it is long).
_ROW = re.compile(r"^  (?:(-\w), )?(--[\w-]+)(?:/--[\w-]+)?(?: (\S+))?(?:\s{2,}|$)")
_WORD = re.compile(r"[A-Z][A-Z0-9]*(?:[.:|][A-Z][A-Z0-9]*)*")          # FILE, MAJOR.MINOR, HOST:PORT, URL|DIR
_CHOICES = re.compile(r"<[\w-]+(?:\|[\w-]+)+>|\[[\w-]+(?:\|[\w-]+)+\]")  # <text|json> (newer typer), [text|json]
# click's own type names; PATH is one too, but also the word for "a file or directory"
_TYPE_NAMES = {"TEXT", "INTEGER", "FLOAT", "BOOLEAN", "PATHLIST", "FILENAME", "DIRECTORY", "INT", "STR"}


def _rows(text: str) -> dict[str, tuple[str | None, str | None]]:
    """--long -> (short, placeholder) for every option row of a help text."""
    lines = text.splitlines()
    start = lines.index("Options:") + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    rows = {}
    for line in lines[start:end]:              # the epilog's examples also hold "--out x" lines
        m = _ROW.match(line)
        if m:
            rows[m.group(2)] = (m.group(1), m.group(3))
    return rows


@pytest.mark.parametrize("path", list(COMMANDS), ids=IDS)
def test_placeholders_read_as_words(path: tuple[str, ...]) -> None:
    text = _help(path)
    usage = text.splitlines()[0]
    for token in re.findall(r"[{\[]?([A-Za-z][\w.:|-]*)[}\]]?\.\.\.", usage):   # arguments: PATH..., FILE
        assert _WORD.fullmatch(token), usage
    rows = _rows(text)
    assert "--help" in rows
    for option, (_, placeholder) in rows.items():
        if placeholder is None:
            continue
        assert _WORD.fullmatch(placeholder) or _CHOICES.fullmatch(placeholder), (option, placeholder)
        assert placeholder not in _TYPE_NAMES, (option, placeholder)
        assert not re.search(r"int|str|float|list\[|range", placeholder), (option, placeholder)


@pytest.mark.parametrize("path", list(COMMANDS), ids=IDS)
def test_short_options_mean_one_thing(path: tuple[str, ...]) -> None:
    """-o/--output is the output format (as in kubectl) in every command, compile
    included; -d/--out-dir a directory to write; -f a file to read; -t the topology
    file; -j parallel jobs; -h help.  The old long spellings are gone from --help."""
    meaning = {"-o": "--output", "-d": "--out-dir", "-t": "--topology", "-j": "--jobs", "-h": "--help"}
    rows = _rows(_help(path))
    assert "--format" not in rows, path            # taken for one release, with a warning (below)
    for option, (short, placeholder) in rows.items():
        if option == "--output":
            assert short == "-o" and placeholder and _CHOICES.fullmatch(placeholder), (path, placeholder)
        if option == "--out-dir":
            assert short == "-d", path
        if option == "--out":
            assert short is None and placeholder == "FILE", (path, short, placeholder)   # one file, never a tree
        if short is None:
            continue
        if short == "-f":
            assert placeholder == "FILE", (path, option)
        else:
            assert meaning[short] == option, (path, short, option)
        if short == "-d":
            assert placeholder == "DIR", path
    for option, (short, placeholder) in rows.items():
        if placeholder == "SECONDS":
            raise AssertionError(f"{path}: {option} takes a DURATION (90s, 5m, 1h30m), not SECONDS")


# What a reader of each --help sees, for the options whose short form moved or
# whose placeholder used to be a Python type.
TABLE = [
    ("check", "--output", "-o", "<text|json|github|sarif|junit>"),
    ("check", "--jobs", "-j", "N"),
    ("compile", "--out-dir", "-d", "DIR"),
    ("compile", "--output", "-o", "<text|json|github|sarif|junit>"),
    ("compile", "--topology", "-t", "FILE"),
    ("compile", "--kube-version", None, "MAJOR.MINOR"),
    ("compile", "--commit", None, "SHA"),
    ("watch", "--out-dir", "-d", "DIR"),
    ("watch", "--output", "-o", "<text|json>"),
    ("plan", "--out", None, "FILE"),
    ("plan", "--output", "-o", "<text|json|html>"),
    ("graph", "--output", "-o", "<dot|mermaid|json>"),
    ("convert", "--out", None, "FILE"),
    ("convert", "--to", None, "<yaml|dsl>"),
    ("diff", "--output", "-o", "<text|json|markdown|github>"),
    ("diff", "--base", None, "REV"),
    ("schema-diff", "--output", "-o", "<text|json|markdown|github|sarif>"),
    ("drift", "--output", "-o", "<text|json|github>"),
    ("drift", "--kubeconfig", None, "FILE"),
    ("apply", "--timeout", None, "DURATION"),
    ("apply", "--lock-timeout", None, "DURATION"),
    ("apply", "--dry-run", None, "<none|client|server>"),
    ("apply", "--output", "-o", "<text|json>"),
    ("rollback", "--timeout", None, "DURATION"),
    ("rollback", "--dry-run", None, "<none|client|server>"),
    ("daemon", "--interval", None, "DURATION"),
    ("daemon", "--resync", None, "DURATION"),
    ("daemon", "--leader-elect-lease-duration", None, "DURATION"),
    ("daemon", "--listen", None, "HOST:PORT"),
    ("daemon", "--log-format", None, "<text|json>"),
    ("daemon", "--log-level", None, "<debug|info|warning|error>"),
    ("topology import", "--nodes", "-f", "FILE"),
    ("topology import", "--out", None, "FILE"),
    ("topology inspect", "--nvidia-smi", "-f", "FILE"),
    ("topology inspect", "--output", "-o", "<text|json>"),
    ("version", "--output", "-o", "<text|json>"),
    ("status", "--output", "-o", "<table|json|yaml>"),
    ("status", "--interval", None, "DURATION"),
    ("status", "--kubeconfig", None, "FILE"),
    ("status", "--topology", "-t", "FILE"),
]


@pytest.mark.parametrize("command,option,short,placeholder", TABLE)
def test_help_table(command: str, option: str, short: str | None, placeholder: str) -> None:
    rows = _rows(_help(tuple(command.split())))
    got_short, got = rows[option]
    assert got_short == short
    # older typer releases print choices as [a|b], newer ones as <a|b>
    assert got == placeholder or (placeholder.startswith("<") and got == f"[{placeholder[1:-1]}]")


def test_format_is_o_and_f_is_not(tmp_path: Path) -> None:
    """-f is a file to read, never a format."""
    res = runner.invoke(app, ["check", str(tmp_path), "-f", "json"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["check", str(tmp_path / "missing.intent"), "-o", "json"])
    assert res.exit_code == 2 and res.stdout.startswith("[")      # JSON diagnostics: E0001, unreadable


ROOT = Path(__file__).parents[1]
INTENTS = str(ROOT / "intents")
CLUSTER = str(ROOT / "examples" / "topologies" / "cluster.yaml")
WARNING = "intentc: warning: --format is deprecated, use -o/--output\n"


@pytest.mark.parametrize("args", [["check", INTENTS], ["graph", INTENTS], ["plan", INTENTS, "-t", CLUSTER],
                                  ["version"]])
def test_format_still_works_with_a_warning(args: list[str]) -> None:
    new = runner.invoke(app, [*args, "-o", "json"])
    old = runner.invoke(app, [*args, "--format", "json"])
    assert old.exit_code == new.exit_code and old.stdout == new.stdout
    assert old.stderr == WARNING + new.stderr
    assert runner.invoke(app, [*args, "--format=json"]).stdout == new.stdout


def test_compile_o_is_the_format_and_old_directory_spellings_still_work(tmp_path: Path) -> None:
    base = ["compile", INTENTS, "-t", CLUSTER, "--commit", "0" * 40]
    res = runner.invoke(app, [*base, "-d", str(tmp_path / "new"), "-o", "json"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("[") and (tmp_path / "new" / "plan.json").is_file()
    assert "warning: " not in res.stderr.replace("warning[", "")
    res = runner.invoke(app, [*base, "-o", "json"])            # a format, not a folder named json
    assert res.exit_code == 2 and "Missing option '--out-dir' / '-d'" in res.stderr
    assert not Path("json").exists()
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "old-o")])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("intentc: warning: -o DIR is deprecated for the output directory, use -d/--out-dir")
    assert (tmp_path / "old-o" / "plan.json").is_file()
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "old-out"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("intentc: warning: --out is deprecated, use -d/--out-dir\n" + WARNING)
    assert res.stdout.startswith("[") and (tmp_path / "old-out" / "plan.json").is_file()
    assert (tmp_path / "old-out" / "plan.json").read_bytes() == (tmp_path / "new" / "plan.json").read_bytes()


def test_a_single_file_output_stays_out(tmp_path: Path) -> None:
    res = runner.invoke(app, ["plan", INTENTS, "-t", CLUSTER, "-o", "json", "--out", str(tmp_path / "plan.json")])
    assert res.exit_code == 0 and "deprecated" not in res.stderr, res.output
    assert (tmp_path / "plan.json").read_text().startswith("{")


@pytest.mark.parametrize("args", [["check", INTENTS], ["topology", "inspect", "-f",
                                                          str(ROOT / "examples" / "topologies" / "topo" / "hgx-h100.txt")]])
def test_global_options_after_the_command(args: list[str]) -> None:
    before = runner.invoke(app, ["--color", "always", *args])
    after = runner.invoke(app, [*args, "--color", "always"])
    assert before.exit_code == after.exit_code and before.output == after.output
    assert runner.invoke(app, [*args, "--color=never"]).output == runner.invoke(app, ["--color", "never", *args]).output


def test_global_option_after_the_command_colours(tmp_path: Path) -> None:
    bad = tmp_path / "bad.intent"
    bad.write_text("intent x {\n")
    res = runner.invoke(app, ["check", str(bad), "--color", "always"])
    assert res.exit_code == 1 and "\x1b[" in res.stdout
    res = runner.invoke(app, ["check", str(bad), "--color", "never"], env={"FORCE_COLOR": "1"})
    assert res.exit_code == 1 and "\x1b[" not in res.stdout
    res = runner.invoke(app, ["check", str(bad), "--color", "sometimes"])
    assert res.exit_code == 2 and "'sometimes' is not one of" in res.stderr


def test_rewriting_follows_option_values() -> None:
    """A value that looks like an option is a value; `--` ends the options."""
    from intentc.cli.spellings import rewrite
    from intentc.cli.lazy import load_all

    load_all()
    root = typer.main.get_command(app)
    warnings: list[str] = []

    def run(*args: str) -> list[str]:
        return rewrite(root, None, list(args), warnings.append)

    assert run("rollback", "--to", "x", "-t", "c.yaml", "--reason", "--color", "--dry-run") == \
        ["rollback", "--to", "x", "-t", "c.yaml", "--reason", "--color", "--dry-run=client"]
    assert run("apply", "--dry-run", "intents/", "-t", "c.yaml") == ["apply", "--dry-run=client", "intents/", "-t", "c.yaml"]
    assert run("apply", "--dry-run", "server", "intents/") == ["apply", "--dry-run=server", "intents/"]
    assert run("apply", "--dry-run=none", "intents/") == ["apply", "--dry-run=none", "intents/"]
    assert run("check", "x", "--", "--format") == ["check", "x", "--", "--format"]
    assert run("check", "x", "--color", "never", "-o", "json") == ["--color", "never", "check", "x", "-o", "json"]
    assert run("--color", "auto", "topology", "inspect", "-f", "-", "--color=never") == \
        ["--color", "auto", "--color=never", "topology", "inspect", "-f", "-"]
    assert run("plan", "x", "--out", "p.json") == ["plan", "x", "--out", "p.json"]       # one file: stays --out
    assert run("compile", "x", "-ojson", "-dbuild") == ["compile", "x", "-ojson", "-dbuild"]
    assert run("compile", "x", "-o") == ["compile", "x", "-o"]      # click says the value is missing
    assert run("compile", "x", "-obuild") == ["compile", "x", "--out-dir", "build"]
    assert warnings == ["-o DIR is deprecated for the output directory, use -d/--out-dir "
                        "(-o is the output format: text, json, github, sarif, junit)"]
    assert run("watch", "x", "-t", "c.yaml", "--out", "b", "--format=json") == \
        ["watch", "x", "-t", "c.yaml", "--out-dir", "b", "--output=json"]
    assert warnings[1:] == ["--out is deprecated, use -d/--out-dir", "--format is deprecated, use -o/--output"]


@pytest.mark.parametrize("path", [p for p, c in COMMANDS.items()
                                  if any("-f" in getattr(o, "opts", ()) for o in getattr(c, "params", ()))],
                         ids=lambda p: " ".join(p))
def test_every_f_reads_standard_input_too(path: tuple[str, ...]) -> None:
    for p in COMMANDS[path].params:
        if "-f" in getattr(p, "opts", ()):
            assert "(-: standard input)" in (p.help or ""), (path, p.opts)


@pytest.mark.parametrize("command,fixture", [
    (["topology", "inspect"], ROOT / "examples" / "topologies" / "topo" / "hgx-h100.txt"),
    (["topology", "import", "--name", "lab"], ROOT / "tests" / "fixtures" / "nodes.json"),
])
def test_f_dash_is_standard_input(command: list[str], fixture: Path) -> None:
    from_file = runner.invoke(app, [*command, "-f", str(fixture)])
    from_stdin = runner.invoke(app, [*command, "-f", "-"], input=fixture.read_bytes())
    assert from_file.exit_code == from_stdin.exit_code == 0, from_stdin.output
    shown = from_file.stdout.replace(str(fixture), "<stdin>").replace(str(fixture.relative_to(ROOT)), "<stdin>")
    assert from_stdin.stdout == shown


# -- durations, --dry-run, -j ------------------------------------------------

MISSING_KUBECONFIG = ["--kubeconfig", "/nonexistent/kubeconfig"]


@pytest.mark.parametrize("option", ["--timeout", "--lock-timeout"])
@pytest.mark.parametrize("value", ["5m", "90s", "1h30m", "90", "0.5"])
def test_apply_takes_durations(option: str, value: str) -> None:
    """A duration or plain seconds parse: the command goes on to the kubeconfig."""
    res = runner.invoke(app, ["apply", INTENTS, "-t", CLUSTER, option, value, *MISSING_KUBECONFIG])
    assert res.exit_code == 2 and "kubeconfig not found" in res.stderr, res.output


@pytest.mark.parametrize("args,message", [
    (["apply", INTENTS, "--timeout", "5x"], "'5x' is not a duration (e.g. 90s, 5m, 1h30m, or seconds: 90)"),
    (["apply", INTENTS, "--timeout", "-1"], "'-1' is not a duration"),
    (["apply", INTENTS, "--lock-timeout", "30m1h"], "'30m1h' is not a duration"),
    (["daemon", "--repo", ".", "--interval", "0s"], "0s is shorter than 0.1s"),
    (["daemon", "--repo", ".", "--leader-elect-lease-duration", "1.5"], "1.5 is not a whole number of seconds"),
    (["rollback", "--to", "x", "-t", "c.yaml", "--timeout", "soon"], "'soon' is not a duration"),
])
def test_a_bad_duration_is_a_usage_error(args: list[str], message: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and message in res.stderr, res.output
    assert "Traceback" not in res.output


def test_seconds_parser_reads_the_duration_notation() -> None:
    from intentc.cli.common import seconds_parser

    parse = seconds_parser("--timeout")
    assert [parse(t) for t in ("5m", "90s", "1h30m", "90", "0.5", "1d")] == [300, 90, 5400, 90, 0.5, 86400]
    assert seconds_parser("--lease", minimum=1, whole=True)("15s") == 15


@pytest.mark.parametrize("args", [["apply", "--dry-run", INTENTS, "-t", CLUSTER],
                                  ["apply", INTENTS, "-t", CLUSTER, "--dry-run=server"],
                                  ["apply", INTENTS, "-t", CLUSTER, "--dry-run", "none"],
                                  ["rollback", "--to", "x", "-t", "c.yaml", "--dry-run"]])
def test_dry_run_modes_parse(args: list[str]) -> None:
    res = runner.invoke(app, [*args, *MISSING_KUBECONFIG])
    assert res.exit_code == 2 and "kubeconfig not found" in res.stderr, res.output


def test_an_unknown_dry_run_mode_is_a_usage_error() -> None:
    res = runner.invoke(app, ["apply", INTENTS, "-t", CLUSTER, "--dry-run=both"])
    assert res.exit_code == 2 and "'both' is not one of 'none', 'client', 'server'" in res.stderr, res.output


@pytest.mark.parametrize("value", ["-1", "-5", "abc", "1.5", "99999", ""])
@pytest.mark.parametrize("command", ["check", "graph", "compile", "plan", "diff"])
def test_bad_jobs_are_refused(command: str, value: str) -> None:
    res = runner.invoke(app, [command, INTENTS, "-j", value])
    assert res.exit_code == 2, res.output
    assert "Invalid value for '--jobs' / '-j'" in res.stderr, res.stderr
    assert "Traceback" not in res.output


def test_good_jobs_are_taken() -> None:
    for value in ("0", "1", "4"):
        assert runner.invoke(app, ["check", INTENTS, "-j", value]).exit_code == 0


# -- no intents --------------------------------------------------------------

@pytest.mark.parametrize("args", [["check"], ["check", "-o", "json"], ["graph"], ["plan", "-t", CLUSTER],
                                  ["compile", "-t", CLUSTER, "--commit", "0" * 40, "-d", "OUT"]])
@pytest.mark.parametrize("contents", ["empty", "no intents"])
def test_no_intents_found_is_a_finding(tmp_path: Path, args: list[str], contents: str) -> None:
    where = tmp_path / "tree"
    where.mkdir()
    if contents == "no intents":
        (where / "cluster.yaml").write_text(Path(CLUSTER).read_text())
        (where / "README.md").write_text("# not an intent\n")
    argv = [args[0], str(where), *[str(tmp_path / "out") if a == "OUT" else a for a in args[1:]]]
    res = runner.invoke(app, argv)
    assert res.exit_code == 1, res.output
    assert f"intentc: warning: no intents found under {where}" in res.stderr
    assert "ok: 0 intents" not in res.output and not (tmp_path / "out").exists()


# -- kubeconfig errors in intentc's words -------------------------------------

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: secret-token}}
contexts:
- {name: alpha, context: {cluster: a, user: u}}
- {name: beta, context: {cluster: a, user: u}}
current-context: alpha
"""


@pytest.mark.parametrize("text,flags,message", [
    (KUBECONFIG, ["--context", "gamma"], "context gamma not found in {f} (available: alpha, beta)"),
    (KUBECONFIG, ["--context", "alpah"], 'context alpah not found in {f} (did you mean "alpha"?) (available: alpha, beta)'),
    (KUBECONFIG.replace("current-context: alpha", "current-context: gone"), [],
     "current-context gone not found in {f} (available: alpha, beta)"),
    ("clusters: [\n", [], "kubeconfig {f} is not valid YAML (line 2, column 1)"),
    ("- a\n- b\n", [], "kubeconfig {f} is not a kubeconfig: it holds a YAML list, not a mapping"),
    (None, [], "kubeconfig not found: {f} (pass --kubeconfig or set KUBECONFIG)"),
])
@pytest.mark.parametrize("command", ["drift", "apply"])
def test_kubeconfig_errors_in_intentc_words(tmp_path: Path, command: str, text: str | None, flags: list[str],
                                            message: str) -> None:
    config = tmp_path / "kubeconfig"
    if text is not None:
        config.write_text(text)
    res = runner.invoke(app, [command, INTENTS, "-t", CLUSTER, "--kubeconfig", str(config), *flags])
    assert res.exit_code == 2, res.output
    assert res.stderr == f"intentc: error: {message.format(f=config)}\n"
    assert "secret-token" not in res.output


# -- version -----------------------------------------------------------------

def test_version_command() -> None:
    from intentc import __version__
    from intentc.compact import SPEEDUPS, compiled_module

    res = runner.invoke(app, ["version", "-o", "json"])
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["version"] == __version__
    assert doc["kubernetes"] == {"minimum": "1.33", "default": "1.33", "tested": "1.37"}
    assert doc["speedups"] == {n: compiled_module(m, off) is not None for n, m, off in SPEEDUPS}
    assert set(doc["speedups"]) == {"yaml", "dsl"}
    text = runner.invoke(app, ["version"]).stdout
    assert text.startswith(f"intentc {__version__}\nKubernetes: 1.33 and later")
    assert runner.invoke(app, ["--version"]).stdout == f"intentc {__version__}\n"


def test_version_reports_a_speedup_turned_off() -> None:
    env = dict(os.environ, INTENTC_PURE_DSL="1")
    res = subprocess.run(_intentc() + ["version", "-o", "json"], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["speedups"]["dsl"] is False
    assert "dsl off" in subprocess.run(_intentc() + ["version"], capture_output=True, text=True, env=env).stdout


def test_tested_kubernetes_is_the_test_bed_s() -> None:
    from intentc.render.capabilities import TESTED_KUBE_VERSION

    go_mod = (ROOT / "hack" / "testenv" / "kubernetes" / "go.mod").read_text()
    m = re.search(r"k8s\.io/kubernetes v(\d+)\.(\d+)\.", go_mod)
    assert m and (int(m[1]), int(m[2])) == (TESTED_KUBE_VERSION.major, TESTED_KUBE_VERSION.minor)


# -- shell completion -------------------------------------------------------

def _intentc() -> list[str]:
    exe = Path(sys.executable).with_name("intentc")
    found = str(exe) if exe.exists() else shutil.which("intentc")
    if found is None:
        pytest.fail("the intentc console script is not installed (pip install -e .)")
    return [found]


# what only that shell's script says
SCRIPT_MARKS = {"bash": "complete -o default -F _intentc_completion intentc", "zsh": "#compdef intentc",
                "fish": "complete --command intentc", "powershell": "Register-ArgumentCompleter -Native -CommandName intentc"}


@pytest.mark.parametrize("shell", list(SCRIPT_MARKS))
def test_completion_prints_that_shell_s_script(shell: str) -> None:
    res = subprocess.run(_intentc() + ["completion", shell], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert SCRIPT_MARKS[shell] in res.stdout and "_INTENTC_COMPLETE" in res.stdout and f"complete_{shell}" in res.stdout
    assert all(mark not in res.stdout for other, mark in SCRIPT_MARKS.items() if other != shell)
    # --show-completion SHELL: that shell's script too, whatever shell the test runs under
    shown = subprocess.run(_intentc() + ["--show-completion", shell], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout == res.stdout, shown.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_show_completion_prints_a_script(shell: str) -> None:
    # typer's own path, with shell detection off (it then takes the shell's name as a value)
    env = dict(os.environ, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    res = subprocess.run(_intentc() + ["--show-completion", shell], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert SCRIPT_MARKS[shell] in res.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    res = runner.invoke(app, ["completion", "tcsh"])
    assert res.exit_code == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish', 'powershell'" in res.stderr


def test_typer_still_has_the_completion_scripts_intentc_prints() -> None:
    """intentc/cli/completion.py calls typer's internal get_completion_script (typer has no
    public way to print a named shell's script).  When a typer release moves or changes it,
    this fails: adapt that one module."""
    from intentc.cli.completion import Shell, completion_script

    scripts = {shell.value: completion_script(shell) for shell in Shell}
    assert len(set(scripts.values())) == 4
    for shell, script in scripts.items():
        assert SCRIPT_MARKS[shell] in script, shell


@pytest.mark.parametrize("shell,env", [
    ("zsh", {"_TYPER_COMPLETE_ARGS": "intentc check --ou"}),
    ("fish", {"_TYPER_COMPLETE_ARGS": "intentc check --ou", "_TYPER_COMPLETE_FISH_ACTION": "get-args"}),
    ("powershell", {"_TYPER_COMPLETE_ARGS": "intentc check --ou", "_TYPER_COMPLETE_WORD_TO_COMPLETE": "--ou"}),
])
def test_each_shell_s_protocol_answers(shell: str, env: dict[str, str]) -> None:
    """The variable each script sets is answered: the script and the program agree."""
    full = dict(os.environ, _INTENTC_COMPLETE=f"complete_{shell}", **env)
    res = subprocess.run(_intentc(), env=full, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "--output" in res.stdout


def test_completion_completes_commands_and_options() -> None:
    def complete(words: str) -> list[str]:
        env = dict(os.environ, _INTENTC_COMPLETE="complete_bash", COMP_WORDS=words,
                   COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
        res = subprocess.run(_intentc(), env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert "check" in complete("intentc ch")
    assert "schema-diff" in complete("intentc sch")
    assert "--output" in complete("intentc check --ou")
    assert {"text", "json", "github", "sarif", "junit"} <= set(complete("intentc check --output "))
    assert {"bash", "zsh", "fish", "powershell"} <= set(complete("intentc completion "))


def test_install_completion_writes_the_script_and_sources_it(tmp_path: Path) -> None:
    # the shell named, not detected: shellingham finds no shell among the parents of some
    # runs (a suite started in the background), and typer then says "Shell None is not supported"
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"),
               _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    res = subprocess.run(_intentc() + ["--install-completion", "bash"], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    script = tmp_path / ".bash_completions" / "intentc.sh"
    assert "_INTENTC_COMPLETE" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


def _documented_options() -> dict[str, tuple[str, set[str]]]:
    """docs/cli-conventions.md's option table: short option -> (long names, the commands
    its last column lists), for the rows that name their commands one by one."""
    doc = (Path(__file__).parents[1] / "docs" / "cli-conventions.md").read_text(encoding="utf-8")
    table = doc[doc.index("## Options"):]
    rows: dict[str, tuple[str, set[str]]] = {}
    for line in table.splitlines()[4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        short, where = cells[0].strip("`"), cells[-1]
        if short and short != "-h" and not where.startswith("every"):
            rows[short] = (cells[1], set(re.findall(r"`([a-z -]+)`", where)))
    return rows


DOCUMENTED = _documented_options()


def test_the_documented_table_names_the_short_options() -> None:
    assert {"-d", "-f", "-j"} <= set(DOCUMENTED), DOCUMENTED


@pytest.mark.parametrize("short", sorted(DOCUMENTED))
def test_the_option_table_matches_every_commands_help(short: str) -> None:
    """The table's "everywhere it appears" is exactly the commands whose --help has the option."""
    longs, listed = DOCUMENTED[short]
    having = {" ".join(path) for path, cmd in COMMANDS.items() if path
              and any(short in p.opts for p in getattr(cmd, "params", ()))}
    assert having == listed, f"{short} ({longs}): --help has it in {sorted(having)}, the table says {sorted(listed)}"
