"""Running one benchmarked command: wall time, CPU time and peak memory from the kernel.

`os.wait4` gives the resource usage of exactly that child and the workers it
waited for (peak RSS is the largest process of that tree), so several
measurements can be taken from one benchmark process without one run's
peak hiding the next (`RUSAGE_CHILDREN` keeps the maximum over all of them).
The command is started by `launch.py`, a small process of its own: a child's
peak RSS would otherwise count the benchmark process that forked it.
The machine is shared: the 1-minute load average is recorded before and
after each run, so a figure can be read against the load it was taken under.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


LAUNCH = Path(__file__).with_name("launch.py")


def _launch(cmd: list[str], env: dict[str, str] | None, out: Any, err: Any, timeout: float | None = None,
            cwd: str | None = None) -> dict[str, Any]:
    """`cmd` run by `launch.py`, a small process between this one and it: a child's peak
    RSS counts what the process that forked it held (see launch.py), and a benchmark
    that has built 100,000 intents in memory is not small."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "usage.json"
        launcher = [sys.executable, "-S", str(LAUNCH), str(report), "" if timeout is None else str(timeout),
                    "--", *cmd]
        subprocess.run(launcher, env=env, stdout=out, stderr=err, cwd=cwd, check=True)
        return dict(json.loads(report.read_text(encoding="utf-8")))


def measure(cmd: list[str], env: dict[str, str] | None = None, *, ok: tuple[int, ...] = (0,),
            timeout: float | None = None, stdout: bool = False, cwd: str | None = None) -> dict[str, Any]:
    """One run: wall seconds, CPU seconds and peak RSS (MB) of the process tree, and its
    exit code.  An exit code not in `ok` stops the benchmark.  Past `timeout` seconds
    the process group is killed and the run comes back with ``timed_out`` (a baseline
    that would take hours is a result, not a reason to lose the others).  With
    `stdout`, what it printed comes back under ``stdout``; otherwise it is dropped."""
    before = loadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        used = _launch(cmd, env, out if stdout else subprocess.DEVNULL, err, timeout, cwd)
        timed_out = bool(used["timed_out"])
        if used["exit"] not in ok and not timed_out:
            err.seek(0)
            raise SystemExit(f"{cmd[:4]} ... exited {used['exit']}:\n{err.read().decode()[-2000:]}")
        out.seek(0)
        printed = out.read() if stdout else b""
    got: dict[str, Any] = {"wall_s": round(used["wall_s"], 3), "cpu_s": round(used["user_s"] + used["system_s"], 3),
                           "peak_rss_mb": round(used["maxrss_kb"] / 1024, 1), "exit": used["exit"],
                           "load_before": before, "load_after": loadavg()}
    if timed_out:
        got["timed_out"] = True
    if stdout:
        got["stdout"] = printed
    return got


def run_json(cmd: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    """Run a child that prints one JSON document; that document with the child's peak RSS
    and CPU time (from the kernel) and the load around it.  A failure stops the benchmark."""
    before = loadavg()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        used = _launch(cmd, env, out, err)
        if used["exit"] != 0:
            err.seek(0)
            raise SystemExit(f"{what}: child failed:\n{err.read().decode()[-2000:]}")
        out.seek(0)
        got: dict[str, Any] = json.loads(out.read().decode())
    return {**got, "peak_rss_mb": round(used["maxrss_kb"] / 1024, 1), "cpu_s": round(used["user_s"] + used["system_s"], 1),
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
