"""Progress of long commands (`check`, `apply`) on stderr.

On a terminal: a live line (rich) once the run takes LIVE_DELAY, erased
when the command ends.  Elsewhere
(CI logs, pipes): nothing for the first INTERVAL seconds, so a quick run
stays quiet, then one plain line every INTERVAL seconds, so a run that
takes minutes is never silent.  Never on stdout, where results stay
machine-readable in every format (json, sarif, junit).
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, Callable, TextIO

INTERVAL = 10.0       # seconds of silence before, and between, plain progress lines
LIVE_DELAY = 0.5      # a terminal sees no flicker from runs shorter than this


class StderrProgress:
    """A `intentc.progress.Progress` callable that shows what it hears; use as a
    context manager so the live line is gone before the results are printed."""

    def __init__(self, stream: TextIO | None = None, is_terminal: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.is_terminal = self.stream.isatty() if is_terminal is None else is_terminal
        self.clock = clock
        self.started = clock()
        self.last = self.started
        self._live: Any = None
        self._task: Any = None

    def __call__(self, what: str, done: int, total: int) -> None:
        if self.is_terminal:
            self._show_live(what, done, total)
            return
        now = self.clock()
        if now - self.started >= INTERVAL and now - self.last >= INTERVAL:
            self.last = now
            self.stream.write(f"intentc: {what}: {done}/{total} ({now - self.started:.0f}s)\n")
            self.stream.flush()

    def _show_live(self, what: str, done: int, total: int) -> None:
        if self._live is None:
            if self.clock() - self.started < LIVE_DELAY:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(file=self.stream, force_terminal=True),
                                  transient=True)
            self._live.start()
            self._task = self._live.add_task(what, total=total)
        self._live.update(self._task, description=what, completed=done, total=total)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> StderrProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
