"""Running one benchmarked command: wall time, CPU time and peak memory from the kernel.

`os.wait4` gives the resource usage of exactly that child and the workers it
waited for (peak RSS is the largest process of that tree), so several
measurements can be taken from one benchmark process without one run's
peak hiding the next (`RUSAGE_CHILDREN` keeps the maximum over all of them).
The machine is shared: the 1-minute load average is recorded before and
after each run, so a figure can be read against the load it was taken under.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def measure(cmd: list[str], env: dict[str, str] | None = None, *, ok: tuple[int, ...] = (0,),
            timeout: float | None = None, stdout: bool = False, cwd: str | None = None) -> dict[str, Any]:
    """One run: wall seconds, CPU seconds and peak RSS (MB) of the process tree, and its
    exit code.  An exit code not in `ok` stops the benchmark.  Past `timeout` seconds
    the process group is killed and the run comes back with ``timed_out`` (a baseline
    that would take hours is a result, not a reason to lose the others).  With
    `stdout`, what it printed comes back under ``stdout``; otherwise it is dropped."""
    before = loadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out if stdout else subprocess.DEVNULL, stderr=err,
                                start_new_session=timeout is not None, cwd=cwd)
        timer = threading.Timer(timeout, _kill_group, (proc.pid,)) if timeout is not None else None
        if timer is not None:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        timed_out = timeout is not None and wall >= timeout and proc.returncode < 0
        if proc.returncode not in ok and not timed_out:
            err.seek(0)
            raise SystemExit(f"{cmd[:4]} ... exited {proc.returncode}:\n{err.read().decode()[-2000:]}")
        out.seek(0)
        printed = out.read() if stdout else b""
    got: dict[str, Any] = {"wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                           "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": proc.returncode,
                           "load_before": before, "load_after": loadavg()}
    if timed_out:
        got["timed_out"] = True
    if stdout:
        got["stdout"] = printed
    return got


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def run_json(cmd: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    """Run a child that prints one JSON document; that document with the child's peak RSS
    and CPU time (from the kernel) and the load around it.  A failure stops the benchmark."""
    before = loadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{what}: child failed:\n{err.read().decode()[-2000:]}")
        out.seek(0)
        got: dict[str, Any] = json.loads(out.read().decode())
    return {**got, "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "load_before": before, "load_after": loadavg()}


def best(cmd: list[str], env: dict[str, str], repeat: int, before_each: Callable[[], None] | None = None
         ) -> dict[str, Any]:
    """The fastest of `repeat` runs (each in a fresh process), with every run's wall time and peak RSS."""
    return alternating({"run": (cmd, env, before_each)}, repeat)["run"]


Run = tuple[list[str], dict[str, str], Callable[[], None] | None]   # command, environment, what to do before each run


def alternating(runs: dict[str, Run], repeat: int) -> dict[str, dict[str, Any]]:
    """`best` of each command, their runs taken in turn (a, b, a, b, ...): a ratio between
    two of them is then measured under the same load, which on a shared machine moves
    by a third within minutes."""
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, (cmd, env, before_each) in runs.items():
            if before_each is not None:
                before_each()
            seen[name].append(measure(cmd, env))
    out: dict[str, dict[str, Any]] = {}
    for name, measured in seen.items():
        top = min(measured, key=lambda r: r["wall_s"])
        out[name] = {**top, "wall_s_all": [r["wall_s"] for r in measured],
                     "peak_rss_mb_all": [r["peak_rss_mb"] for r in measured]}
    return out
