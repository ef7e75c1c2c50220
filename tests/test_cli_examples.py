"""Every `intentc ...` example in every command's --help epilog and in the README
runs as a user types it.

Each example is parsed by the command line itself (the root's rewriting of
older spellings included: an example may use none of them), and the ones
that need no cluster and no other revision are run against the bundled
`intents/` and `examples/topologies/cluster.yaml`: an example must not exit
2 (a usage or environment error), as `compile --kube-version 1.29` did once
1.33 became the oldest supported release.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from intentc.cli import app
from intentc.cli.lazy import load_all

ROOT = Path(__file__).parents[1]
CLUSTER = ROOT / "examples" / "topologies" / "cluster.yaml"
# the placeholders examples use, and what stands in for them here
FILES = {
    "clusters/prod.yaml": CLUSTER, "clusters/dev.yaml": CLUSTER, "examples/topologies/cluster.yaml": CLUSTER,
    "hgx-h100.txt": ROOT / "examples" / "topologies" / "topo" / "hgx-h100.txt",
    "topo/hgx-h100.txt": ROOT / "examples" / "topologies" / "topo" / "hgx-h100.txt",
}
SHELL_ENV = {"$GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567", "$PROFILE": "profile.ps1"}
# options whose value is written: pointed into the test's own folder
WRITES = {"--out", "--out-dir", "-d"}
NEEDS_MORE = ("--context", "--kubeconfig", "--base", "--repo", "--clusters", "--cluster", "--nodes", "-f")
RUNS = {"check", "graph", "plan", "compile", "convert", "version", "completion", "fmt", "topology"}


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name in sorted(getattr(cmd, "commands", {})):
        yield from _walk(cmd.commands[name], path + (name,))


def _examples() -> list[tuple[str, str]]:
    """(command, example line) for every `intentc ...` line of every epilog, with
    backslash continuations joined, comments and pipes / redirections cut off."""
    load_all()
    found = []
    for path, cmd in _walk(typer.main.get_command(app)):
        lines = (cmd.epilog or "").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            i += 1
            if line.startswith("intentc "):
                found.append((" ".join(path) or "intentc", line))
    return found


def _readme_examples() -> list[tuple[str, str]]:
    """(command, line) for every `intentc ...` line in the README's shell code blocks
    (a `$ ` prompt dropped, backslash continuations joined)."""
    load_all()
    commands = typer.main.get_command(app).commands      # type: ignore[attr-defined]
    found = []
    fenced = False
    pending = ""
    for raw in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            continue
        line = pending + raw.strip().removeprefix("$ ")
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        for part in line.split("&&"):
            part = part.strip()
            if part.startswith("intentc "):
                words = shlex.split(part, comments=True)
                name = next((w for w in words[1:] if not w.startswith("-")), "")
                found.append((name if name in commands else "intentc", part))
    return found


EXAMPLES = _examples()
README_EXAMPLES = _readme_examples()


def test_the_readme_has_examples() -> None:
    assert len(README_EXAMPLES) >= 5, README_EXAMPLES


@pytest.mark.parametrize("command,line", README_EXAMPLES, ids=[line for _, line in README_EXAMPLES])
def test_readme_example_parses_with_the_current_spellings(command: str, line: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _parse(_argv(line, tmp_path))
    assert "deprecated" not in capsys.readouterr().err, line


def _argv(line: str, tmp: Path) -> list[str]:
    words = shlex.split(line, comments=True)
    for stop in ("|", ">", ">>"):
        if stop in words:
            words = words[:words.index(stop)]
    out: list[str] = []
    for i, w in enumerate(words[1:]):
        w = SHELL_ENV.get(w, w)
        if out and out[-1] in WRITES:
            w = str(tmp / Path(w).name)
        elif w in FILES:
            w = str(FILES[w])
        elif w.startswith("intents/") or w == "intents":
            w = str(ROOT / w)
        out.append(w)
    return out


def test_every_command_with_an_epilog_has_examples() -> None:
    commands = {c for c, _ in EXAMPLES}
    assert {"check", "compile", "apply", "plan", "graph", "diff", "schema-diff", "drift", "rollback", "daemon",
            "watch", "fmt", "convert", "topology import", "topology inspect", "completion", "version"} <= commands


def _parse(argv: list[str]) -> None:
    """Parse `argv` as `intentc` would, down to the command's own options (raises click's
    usage errors), without running the command."""
    root = typer.main.get_command(app)
    ctx = root.make_context("intentc", list(argv))
    cmd: Any = root
    args = _rest(ctx)
    while hasattr(cmd, "resolve_command") and args:
        name, cmd, args = cmd.resolve_command(ctx, args)
        ctx = cmd.make_context(name, args, parent=ctx)
        args = _rest(ctx)


def _rest(ctx: Any) -> list[str]:
    """What a group leaves to its command (click 8.2 renamed protected_args)."""
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:
        protected = getattr(ctx, "protected_args", [])
    return list(protected) + list(ctx.args)


@pytest.mark.parametrize("command,line", EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_example_parses_with_the_current_spellings(command: str, line: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _parse(_argv(line, tmp_path))
    assert "deprecated" not in capsys.readouterr().err, line


def _runs_here(command: str, line: str) -> bool:
    """Whether an example runs on the bundled repository alone: not one that needs a
    cluster, another revision, a fleet or input files of its own (those are parsed above)."""
    argv = _argv(line, Path("/nonexistent"))
    first = command.split()[0]
    return (first in RUNS and not any(w in NEEDS_MORE for w in argv)
            and (first != "fmt" or bool({"--check", "--diff"} & set(argv))))


RUNNABLE = [(c, line) for c, line in EXAMPLES + README_EXAMPLES if _runs_here(c, line)]


def test_some_examples_run_here() -> None:
    assert len(RUNNABLE) >= 10, RUNNABLE


@pytest.mark.parametrize("command,line", RUNNABLE, ids=[line for _, line in RUNNABLE])
def test_example_runs(command: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _argv(line, tmp_path)
    monkeypatch.chdir(tmp_path)         # anything written lands here
    res = CliRunner().invoke(app, argv, prog_name="intentc")
    assert res.exit_code in (0, 1), f"{line}\n{res.output}"
    assert "Traceback" not in res.output and "intentc: error" not in res.output, res.output
