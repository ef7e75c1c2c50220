"""Issue #36: a file intentc writes never replaces something that is not a regular file.

Each test runs the command as a user types it (typer's runner, or the `intentc`
program itself where the process's own descriptors matter) and then looks at
what is on disk: a device stays a device, a link stays a link, a FIFO's reader
gets the bytes, `--out -` is standard output.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intentc.atomic import write_atomic
from intentc.cli import app

ROOT = Path(__file__).parents[1]
INTENTS = str(ROOT / "intents")
TOPOLOGY = str(ROOT / "examples" / "topologies" / "cluster.yaml")
PLAN = ["plan", INTENTS, "-t", TOPOLOGY, "-o", "json"]
DSL = """tenant team-a {
  quota: gpus 8
}
"""


@pytest.fixture(scope="module")
def plan_json() -> str:
    """What `intentc plan ... -o json` prints: every write below must carry exactly this."""
    res = CliRunner().invoke(app, PLAN)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("{")
    return res.stdout


def test_out_dash_is_standard_output(plan_json: str) -> None:
    res = CliRunner().invoke(app, [*PLAN, "--out", "-"])
    assert res.exit_code == 0, res.output
    assert res.stdout == plan_json
    assert not Path("-").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can replace /dev/null, which is the bug")
def test_a_character_device_is_written_through_not_replaced() -> None:
    before = os.stat("/dev/null")
    res = CliRunner().invoke(app, [*PLAN, "--out", "/dev/null"])
    assert res.exit_code == 0, res.output
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert res.stdout == ""


def test_a_character_device_as_any_user() -> None:
    """The same path for everyone: /dev/null is opened and written, never a temporary file beside it."""
    write_atomic("/dev/null", "text")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path, plan_json: str) -> None:
    target = tmp_path / "real" / "plan.json"
    target.parent.mkdir()
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o600)
    link = tmp_path / "plan.json"
    link.symlink_to(Path("real") / "plan.json")
    res = CliRunner().invoke(app, [*PLAN, "--out", str(link)])
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "plan.json")
    assert target.read_text(encoding="utf-8") == plan_json
    assert stat.S_IMODE(target.stat().st_mode) == 0o600              # the file's own mode is kept
    assert sorted(p.name for p in target.parent.iterdir()) == ["plan.json"]   # no temporary left


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "out.yaml"
    link.symlink_to("made.yaml")
    source = tmp_path / "t.intent"
    source.write_text(DSL, encoding="utf-8")
    res = CliRunner().invoke(app, ["convert", str(source), "--to", "yaml", "--out", str(link)])
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and "kind: Tenant" in (tmp_path / "made.yaml").read_text(encoding="utf-8")


def test_a_fifo_gets_the_bytes_and_stays_a_fifo(tmp_path: Path, plan_json: str) -> None:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    res = CliRunner().invoke(app, [*PLAN, "--out", str(fifo)])
    reader.join(timeout=60)
    assert res.exit_code == 0, res.output
    assert got == [plan_json.encode("utf-8")]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_stdout_is_the_process_stdout(plan_json: str) -> None:
    """`--out /dev/stdout` as typed in a shell pipeline: the pipe gets the plan."""
    proc = subprocess.run([sys.executable, "-m", "intentc", *PLAN, "--out", "/dev/stdout"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == plan_json


def test_dev_stdout_appended_to_a_file_keeps_the_file(tmp_path: Path, plan_json: str) -> None:
    """`intentc plan --out /dev/stdout >> log`: the shell's file is written at its end,
    neither replaced by a new file nor truncated."""
    log = tmp_path / "log.txt"
    log.write_text("earlier\n", encoding="utf-8")
    inode = log.stat().st_ino
    with open(log, "ab") as fh:
        proc = subprocess.run([sys.executable, "-m", "intentc", *PLAN, "--out", "/dev/stdout"],
                              stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert log.stat().st_ino == inode
    assert log.read_text(encoding="utf-8") == "earlier\n" + plan_json


def test_a_regular_file_is_replaced_atomically(tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    out.write_text("old\n", encoding="utf-8")
    old_inode = out.stat().st_ino
    source = tmp_path / "t.intent"
    source.write_text(DSL, encoding="utf-8")
    res = CliRunner().invoke(app, ["convert", str(source), "--to", "yaml", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.stat().st_ino != old_inode                # a new file renamed into place
    assert "kind: Tenant" in out.read_text(encoding="utf-8")


def test_convert_out_dash(tmp_path: Path) -> None:
    source = tmp_path / "t.intent"
    source.write_text(DSL, encoding="utf-8")
    res = CliRunner().invoke(app, ["convert", str(source), "--to", "yaml", "--out", "-"])
    assert res.exit_code == 0, res.output
    assert "kind: Tenant" in res.stdout


def test_topology_import_out_dash_and_through_a_link(tmp_path: Path) -> None:
    nodes = str(ROOT / "tests" / "fixtures" / "nodes.json")
    printed = CliRunner().invoke(app, ["topology", "import", "-f", nodes, "--name", "prod"])
    assert printed.exit_code == 0, printed.output
    dashed = CliRunner().invoke(app, ["topology", "import", "-f", nodes, "--name", "prod", "--out", "-"])
    assert dashed.exit_code == 0 and dashed.stdout == printed.stdout
    (tmp_path / "real.yaml").write_text("old\n", encoding="utf-8")
    link = tmp_path / "prod.yaml"
    link.symlink_to("real.yaml")
    res = CliRunner().invoke(app, ["topology", "import", "-f", nodes, "--name", "prod", "--out", str(link)])
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and (tmp_path / "real.yaml").read_text(encoding="utf-8") == printed.stdout


def test_unwritable_out_is_exit_2_without_a_traceback(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*PLAN, "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert f"intentc: error: cannot write {tmp_path}: Is a directory" in res.stderr
    assert "Traceback" not in res.output


def test_compile_writes_into_a_linked_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "build"
    link.symlink_to("real")
    res = CliRunner().invoke(app, ["compile", INTENTS, "-t", TOPOLOGY, "-d", str(link), "--commit", "a" * 40])
    assert res.exit_code == 0, res.output
    assert link.is_symlink()
    assert (real / "plan.json").is_file() and any((real / "manifests").iterdir())


@pytest.mark.parametrize("kind", ["file", "device"])
def test_compile_out_dir_that_is_not_a_directory_is_exit_2(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        out = tmp_path / "build"
        out.write_text("keep me\n", encoding="utf-8")
    else:
        out = Path("/dev/null")
    res = CliRunner().invoke(app, ["compile", INTENTS, "-t", TOPOLOGY, "-d", str(out), "--commit", "a" * 40])
    assert res.exit_code == 2
    assert f"intentc: error: {out.as_posix()}: exists and is not a directory" in res.stderr
    assert "Traceback" not in res.output
    if kind == "file":
        assert out.read_text(encoding="utf-8") == "keep me\n"
    else:
        assert stat.S_ISCHR(os.stat(out).st_mode)
