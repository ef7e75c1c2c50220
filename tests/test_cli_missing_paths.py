"""Issue #36: a path that does not exist is exit 2 with `check`'s diagnostic, in every command.

Before, `intentc diff --base HEAD nonexistent-dir` said "no semantic change" and
`intentc schema-diff --schemas nonexistent` reported 0 findings, both exit 0;
`graph` and `plan` printed an empty result; `compile` blamed git.  Each command
runs as a user types it, in a small git repository as the current directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from intentc.cli import app
from tests.git_support import ACTOR

ROOT = Path(__file__).parents[1]
TOPOLOGY = "clusters/cluster.yaml"
MISSING = "nonexistent-dir"
SOLO = "tenant solo {\n  quota: gpus 8\n}\n"         # compiles on its own


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> git.Repo:
    work = tmp_path / "work"
    shutil.copytree(ROOT / "intents", work / "intents")
    shutil.copytree(ROOT / "examples" / "topologies", work / "clusters")
    shutil.copytree(ROOT / "schemas", work / "schemas")
    (work / "solo").mkdir()
    (work / "solo" / "t.intent").write_text(SOLO, encoding="utf-8")
    r = git.Repo.init(work)
    r.index.add(["intents", "clusters", "schemas", "solo"])
    r.index.commit("intents", author=ACTOR, committer=ACTOR)
    monkeypatch.chdir(work)
    return r


COMMANDS = {
    "check": ["check", MISSING],
    "check, one of two": ["check", "intents", MISSING],
    "graph": ["graph", MISSING],
    "plan": ["plan", MISSING, "-t", TOPOLOGY],
    "plan --topology": ["plan", "intents", "-t", MISSING],
    "compile": ["compile", MISSING, "-t", TOPOLOGY, "-d", "build"],
    "compile --topology": ["compile", "intents", "-t", MISSING, "-d", "build"],
    "compile --clusters": ["compile", "intents", "--clusters", MISSING, "-d", "build"],
    "apply": ["apply", MISSING, "-t", TOPOLOGY],
    "drift": ["drift", MISSING, "-t", TOPOLOGY],
    "drift --clusters": ["drift", "intents", "--clusters", MISSING],
    "watch": ["watch", MISSING, "-t", TOPOLOGY],
    "rollback --repo": ["rollback", "--to", "last-good", "-t", TOPOLOGY, "--repo", MISSING],
    "fmt": ["fmt", MISSING],
    "convert": ["convert", MISSING, "--to", "yaml"],
    "diff": ["diff", "--base", "HEAD", MISSING],
    "diff --head": ["diff", "--base", "HEAD", "--head", "HEAD", MISSING],
    "schema-diff --schemas": ["schema-diff", "--base", "HEAD", "--schemas", MISSING],
    "schema-diff": ["schema-diff", "--base", "HEAD", MISSING],
    "topology import": ["topology", "import", "-f", MISSING, "--name", "prod"],
    "topology inspect": ["topology", "inspect", "--nvidia-smi", MISSING],
}


@pytest.mark.parametrize("argv", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_missing_path_is_exit_2_with_a_diagnostic(repo: git.Repo, argv: list[str]) -> None:
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert f"{MISSING}:1:1: error[E0001]: " in res.output
    assert "no such file or directory" in res.output.lower()
    assert not Path("build").exists()
    # no result on stdout for a path that is not there: an empty graph or plan would look like one
    assert "digraph" not in res.stdout and "Placements" not in res.stdout and "ERR" not in res.stdout


def test_diff_names_both_revisions(repo: git.Repo) -> None:
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD", MISSING])
    sha = repo.head.commit.hexsha[:12]
    assert (f"error[E0001]: no such file or directory: {MISSING} (in neither HEAD ({sha}) nor the working tree)"
            in res.stderr)


def test_a_path_deleted_or_added_by_the_change_is_a_diff(repo: git.Repo) -> None:
    """In one revision only: legitimate, the diff shows the intents removed (or added)."""
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD", "--head", "HEAD", "solo"])
    assert res.exit_code == 0, res.output                     # there at both: no change
    shutil.rmtree("solo")
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD", "solo"])
    assert res.exit_code == 1, res.output                     # deleted by the change: a change, not an error
    assert "E0001" not in res.output
    Path("added").mkdir()
    Path("added/t.intent").write_text(SOLO, encoding="utf-8")
    res = CliRunner().invoke(app, ["diff", "--base", "HEAD", "added"])
    assert res.exit_code == 1, res.output                     # added by the change
    assert "E0001" not in res.output
