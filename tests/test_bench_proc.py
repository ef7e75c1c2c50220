"""benchmarks/proc.py's `measure`: the exit codes it accepts, its timeout, what it captures.
No timings are asserted, only what a benchmark relies on to record a run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from benchmarks.proc import measure


def test_a_run_past_its_timeout_is_killed_and_recorded() -> None:
    got = measure([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert got["timed_out"] is True and got["exit"] == -9     # killed, not left to sleep its 30 s out
    assert got["wall_s"] >= 0.5                               # the wall time recorded covers the run


def _alive(pid: int) -> bool:
    """Running (a zombie awaiting its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_process_group_is_killed_with_it(tmp_path: Path) -> None:
    # a child that outlived its parent would keep its core busy through the next runs
    pidfile = tmp_path / "grandchild"
    code = ("import subprocess, sys, time, pathlib; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            f"pathlib.Path({str(pidfile)!r}).write_text(str(p.pid)); time.sleep(60)")
    got = measure([sys.executable, "-c", code], timeout=2.0)
    assert got["timed_out"] is True
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_an_exit_code_outside_ok_stops_the_benchmark_and_one_inside_is_recorded() -> None:
    with pytest.raises(SystemExit, match="exited 3"):
        measure([sys.executable, "-c", "import sys; sys.exit(3)"])
    got = measure([sys.executable, "-c", "import sys; sys.exit(3)"], ok=(0, 3))
    assert got["exit"] == 3 and "timed_out" not in got


def test_stdout_is_captured_only_when_asked() -> None:
    cmd = [sys.executable, "-c", "print('hello')"]
    assert measure(cmd, stdout=True)["stdout"] == b"hello\n"
    assert "stdout" not in measure(cmd)


def test_long_file_lists_are_cut_into_command_lines_in_order() -> None:
    from benchmarks.bench_frontend import batches
    names = [f"job-{i:06d}.yaml" for i in range(1000)]
    cut = batches(names, budget=1600)
    assert [n for part in cut for n in part] == names
    assert all(sum(len(n) + 1 for n in part) <= 1600 for part in cut) and len(cut) == 10
    assert batches(["x" * 5000]) == [["x" * 5000]]        # a name over the budget still runs, alone


def test_a_small_command_is_not_charged_the_benchmarks_own_memory() -> None:
    held = bytearray(200 * 1024 * 1024)
    held[::4096] = b"x" * len(held[::4096])       # touched: resident in this process
    got = measure([sys.executable, "-S", "-c", "pass"])
    assert got["peak_rss_mb"] < 100, got          # straight from this process it was over 200 MB
    del held
