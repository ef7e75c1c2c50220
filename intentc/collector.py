"""Python's cyclic garbage collector, held off around bulk work.

intentc builds large, acyclic structures in one go: the IR of 100,000 files,
a plan's requests, seats and holds, two whole programs for a diff, a reload's
render map.  Reference counting frees all of it as usual; the cyclic
collector only walks it again and again as it piles up, so its cost grows
faster than the work (a large share of a big plan, of a diff, of loading the
diff cache).  So each such step runs inside `paused()`.

The switch is process-wide: it is restored on the way out (also on error),
and left off if the caller had it off.  What is built may then be taken out
of the collector's sight, by what happens to it next:

* `After.NOTHING` — the daemon, which runs for days and replaces what it built;
* `After.FREEZE` — a short-lived process keeping what it built to the end
  (`gc.freeze`: never scanned again, not even at exit);
* `After.AGE` — freeze then unfreeze: what was allocated is filed straight
  into the oldest generation, instead of one young-generation scan of all of
  it at the next allocation.

And what a command built need not be freed at all when the process is about
to end (`hold`, `exit_held`); work that need not delay the command's output
may finish after it is printed (`before_exit`: the parse cache's writer).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Callable, NoReturn


class After(Enum):
    NOTHING = "nothing"
    FREEZE = "freeze"
    AGE = "age"


@contextmanager
def paused(after: After = After.NOTHING) -> Iterator[None]:
    """Run the block with the cyclic collector off; see the module docstring for `after`."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if after is not After.NOTHING:
            gc.freeze()
            if after is After.AGE:
                gc.unfreeze()
        if enabled:
            gc.enable()


def _libc_trim() -> object:
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


_MALLOC_TRIM = _libc_trim()


def trim() -> None:
    """Give the C heap's free pages back to the system (glibc's `malloc_trim`; nothing
    where there is none).  After a bulk step's garbage is freed, its large blocks (the
    tables of dictionaries and lists of 100,000 entries) stay in the heap, counted in
    the resident size, where the small objects allocated next cannot reuse them
    (the Reloader trims after the full planner, docs/reload.md)."""
    if callable(_MALLOC_TRIM):
        _MALLOC_TRIM(0)


# What `hold` keeps to the end of the process; None until the console entry point
# says the process ends through `exit_held` (`hold_until_exit`).
_held: list[object] | None = None
_before_exit: list[Callable[[], None]] = []


def hold_until_exit() -> None:
    """From now on `hold` keeps what it is given: this process ends through `exit_held`."""
    global _held
    if _held is None:
        _held = []


def holding() -> bool:
    """Whether this process ends through `exit_held` (the console entry point)."""
    return _held is not None


def before_exit(wait: Callable[[], None]) -> None:
    """Have `exit_held` call `wait` once the output is flushed, before the process ends."""
    if wait not in _before_exit:
        _before_exit.append(wait)


def hold(*objs: object) -> None:
    """Keep `objs` alive until `exit_held` ends the process, instead of freeing them now.

    Freeing the IR of every file object by object is serial work between the
    last global pass and `check`'s report; at the end of a process nothing
    needs that memory back.  Only the console entry point ends a process
    that way (`hold_until_exit`): in a test, the daemon or any other caller,
    nothing is held and the objects are freed as usual."""
    if _held is not None:
        _held.append(objs)


def exit_held(code: int) -> NoReturn:
    """End the process with `code`: output flushed, then what `before_exit` asked
    waited for; when something is held, without freeing it (as mypy's `hard_exit`):
    log handlers closed, nothing else run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1        # output lost (a closed pipe): not a success
    while _before_exit:
        _before_exit.pop(0)()
    if not _held:
        sys.exit(code)
    logging.shutdown()
    os._exit(code)
