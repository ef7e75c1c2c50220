"""Start one benchmarked command from a small process, and report what it used.

    python -S benchmarks/launch.py REPORT TIMEOUT -- COMMAND...

The peak RSS the kernel gives `wait4` for a child is at least what the process
that forked it held: exec keeps the larger of the old and the new address
space's high-water mark.  Measured straight from a benchmark that had grown to
300 MB, `sleep 0` "peaked" at 314 MB, and at 100,000 intents a cached `check`
and check-jsonschema both reported the benchmark's own 141.9 MB.  So
`proc.measure` runs this script (a few MB, no site packages), which forks and
execs COMMAND, waits for it and writes to REPORT, as JSON: wall seconds from
fork to exit, user and system CPU seconds and peak RSS (kB) of COMMAND and the
children it waited for, its exit code (negative: the signal), and whether
TIMEOUT seconds (empty: none) ran out, in which case its process group was
killed.  Standard streams, environment and working directory are inherited.
"""

import json
import os
import signal
import sys
import threading
import time


def main() -> None:
    report, timeout, separator, *cmd = sys.argv[1:]
    if separator != "--" or not cmd:
        raise SystemExit(__doc__)
    limit = float(timeout) if timeout else None
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        if limit is not None:
            os.setsid()           # its own process group, killed whole on timeout
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    timer = threading.Timer(limit, _kill_group, (pid,)) if limit is not None else None
    if timer is not None:
        timer.start()
    try:
        _, status, usage = os.wait4(pid, 0)
    finally:
        if timer is not None:
            timer.cancel()
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    with open(report, "w", encoding="utf-8") as f:
        json.dump({"wall_s": wall, "user_s": usage.ru_utime, "system_s": usage.ru_stime,
                   "maxrss_kb": usage.ru_maxrss, "exit": code,
                   "timed_out": limit is not None and wall >= limit and code < 0}, f)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    main()
