"""Progress reports from long library calls, for whoever shows them.

A function that can run for minutes (`Driver.check` over thousands of
files, `Reconciler.apply` waiting for waves to become healthy) takes an
optional `progress` callable and calls it with (what, done, total) as work
completes.  It never prints or reads a clock for this: the compiler side
stays pure, and the command line alone decides whether, where (stderr,
never stdout) and how often to show it (`intentc.cli.progress`).
"""

from __future__ import annotations

from typing import Callable

Progress = Callable[[str, int, int], None]


def silent(_what: str, _done: int, _total: int) -> None:
    """The default: nobody is watching."""
