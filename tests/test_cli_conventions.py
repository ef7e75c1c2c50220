"""Conventions every command keeps: `-h`, placeholders that are words, one
meaning per short option (kubectl's: `-o` output format, `-f` a file to
read), and shell completion."""

from __future__ import annotations

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
    """-o is the output format (as in kubectl), -d an output directory, -f a
    file to read, -t the topology file, -j parallel jobs, -h help."""
    meaning = {"-o": "--format", "-d": "--out", "-t": "--topology", "-j": "--jobs", "-h": "--help"}
    if path == ("compile",):     # writes a tree: -o is where (as `kubectl kustomize -o`), --format has no short form
        meaning["-o"] = "--out"
    for option, (short, placeholder) in _rows(_help(path)).items():
        if option == "--format" and path != ("compile",):
            assert short == "-o", path
        if option == "--out":
            assert short in (None, "-d", "-o"), (path, short)
        if short is None:
            continue
        if short == "-f":
            assert placeholder == "FILE", (path, option)
        else:
            assert meaning[short] == option, (path, short, option)
        if short == "-d":
            assert placeholder == "DIR", path


# What a reader of each --help sees, for the options whose short form moved or
# whose placeholder used to be a Python type.
TABLE = [
    ("check", "--format", "-o", "<text|json|github|sarif|junit>"),
    ("check", "--jobs", "-j", "N"),
    ("compile", "--out", "-o", "DIR"),
    ("compile", "--format", None, "<text|json|github|sarif|junit>"),
    ("compile", "--topology", "-t", "FILE"),
    ("compile", "--kube-version", None, "MAJOR.MINOR"),
    ("compile", "--commit", None, "SHA"),
    ("watch", "--out", "-d", "DIR"),
    ("plan", "--out", None, "FILE"),
    ("plan", "--format", "-o", "<text|json|html>"),
    ("convert", "--out", None, "FILE"),
    ("convert", "--to", None, "<yaml|dsl>"),
    ("diff", "--format", "-o", "<text|json|markdown|github>"),
    ("diff", "--base", None, "REV"),
    ("schema-diff", "--format", "-o", "<text|json|markdown|github|sarif>"),
    ("drift", "--format", "-o", "<text|json|github>"),
    ("drift", "--kubeconfig", None, "FILE"),
    ("apply", "--timeout", None, "SECONDS"),
    ("apply", "--format", "-o", "<text|json>"),
    ("daemon", "--listen", None, "HOST:PORT"),
    ("daemon", "--log-format", None, "<text|json>"),
    ("daemon", "--log-level", None, "<debug|info|warning|error>"),
    ("topology import", "--nodes", "-f", "FILE"),
    ("topology import", "--out", None, "FILE"),
    ("topology inspect", "--nvidia-smi", "-f", "FILE"),
    ("topology inspect", "--format", "-o", "<text|json>"),
]


@pytest.mark.parametrize("command,option,short,placeholder", TABLE)
def test_help_table(command: str, option: str, short: str | None, placeholder: str) -> None:
    rows = _rows(_help(tuple(command.split())))
    got_short, got = rows[option]
    assert got_short == short
    # older typer releases print choices as [a|b], newer ones as <a|b>
    assert got == placeholder or (placeholder.startswith("<") and got == f"[{placeholder[1:-1]}]")


def test_format_is_o_and_out_is_not(tmp_path: Path) -> None:
    """The old spellings are usage errors now, not silently something else."""
    res = runner.invoke(app, ["check", str(tmp_path), "-f", "json"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["check", str(tmp_path / "missing.intent"), "-o", "json"])
    assert res.exit_code == 2 and res.stdout.startswith("[")      # JSON diagnostics: E0001, unreadable


# -- shell completion -------------------------------------------------------

def _intentc() -> list[str]:
    exe = Path(sys.executable).with_name("intentc")
    found = str(exe) if exe.exists() else shutil.which("intentc")
    if found is None:
        pytest.fail("the intentc console script is not installed (pip install -e .)")
    return [found]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_show_completion_prints_a_script(shell: str) -> None:
    # typer detects the calling shell (shellingham) when it can and then takes no shell name;
    # a test run need not have a shell among its parents, so take the name as given
    env = dict(os.environ, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    res = subprocess.run(_intentc() + ["--show-completion", shell], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "_INTENTC_COMPLETE" in res.stdout and "complete" in res.stdout


def test_completion_completes_commands_and_options() -> None:
    def complete(words: str) -> list[str]:
        env = dict(os.environ, _INTENTC_COMPLETE="complete_bash", COMP_WORDS=words,
                   COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
        res = subprocess.run(_intentc(), env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert "check" in complete("intentc ch")
    assert "schema-diff" in complete("intentc sch")
    assert "--format" in complete("intentc check --fo")
    assert {"text", "json", "github", "sarif", "junit"} <= set(complete("intentc check --format "))


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
