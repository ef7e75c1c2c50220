"""Hostile inputs and cluster faults, one module per class of attack (README.md here, SECURITY.md).

`run_intentc` is the one shared piece: the real CLI in a child process (so a
hang is caught by a timeout and memory is the child's own peak), returning
exit code, output and peak RSS.  Everything else belongs to each module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

# A generous hang guard, not a timing assertion: the contract is "no hang".
HANG_GUARD_S = 120

# The child's own peak: VmHWM belongs to the memory of the program exec'd, while
# getrusage's ru_maxrss survives exec and so counted the pytest process that forked
# the child (its RSS at that moment), making every memory bound grow with the suite.
_WRAPPER = """
import re, resource, sys
from intentc.cli import main

def peak_kib():
    try:
        with open("/proc/self/status") as fh:
            return int(re.search(r"VmHWM:\\s+(\\d+)", fh.read()).group(1))
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

try:
    main()
finally:
    sys.stderr.write("\\n@maxrss_kib=%d\\n" % peak_kib())
"""


@dataclass(frozen=True)
class Run:
    exit_code: int
    stdout: str
    stderr: str
    peak_rss_mib: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_intentc(args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None,
                stdin: str | None = None) -> Run:
    """`intentc ARGS` in `cwd`, in a child process; the parse cache is off."""
    full_env = {**os.environ, "INTENTC_CACHE_DIR": "", "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S,
                          input=stdin if stdin is not None else "")
    stderr, _, tail = proc.stderr.rpartition("\n@maxrss_kib=")
    peak = int(tail.strip()) / 1024 if tail.strip().isdigit() else float("nan")
    return Run(proc.returncode, proc.stdout, stderr if tail else proc.stderr, peak)
