"""Parallel parsing in which the parent process parses too.

A pool of one worker per core, with a parent that only unpickled what they
sent, ran three busy processes on a 2-core machine: the parent's unpickling
took the workers' cores, and the cold check spent more CPU than a single
process did.  Here the
parent is one of the parsers: a pool of `participants - 1` workers takes
chunks from the back of the list, the parent takes them from the front and,
between two of its own chunks, unpickles whatever the workers finished; so
the chunks the parent parses never cross a process boundary.

Chunks are handed out as they are done, never more than two ahead per
worker, so nobody runs out of work while another has a queue: everyone
finishes within about one chunk of the others.  A chunk still waiting for a
worker when the parent runs out is taken back (`Future.cancel`) and parsed
by the parent.

The pool's processes are forked once, before the parent starts parsing, so
they inherit the parser modules the caller imported (`warm`): no worker
imports lark or PyYAML again.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TypeVar

C = TypeVar("C")
R = TypeVar("R")
P = TypeVar("P")

AHEAD = 2       # chunks queued per worker beyond the one it is parsing
# How long the parent's parsing may hold the GIL while the pool's thread waits for
# it, to take a result off the pipe and hand a worker its next chunk.  At Python's
# default switch interval a worker sat idle for a good part of a run, blocked on a
# full pipe while the parsing thread kept the interpreter; a tenth of it keeps the pipe moving.
SWITCH_INTERVAL = 0.0005


def warm() -> None:
    """Import what parsing and the local passes need, so that forked workers start with it."""
    from intentc.frontend import dsl, yaml  # noqa: F401
    from intentc.passes import LOCAL_PASSES  # noqa: F401


def shared_map(local: Callable[[C], R], remote: Callable[[C], P], decode: Callable[[P], R],
               chunks: Sequence[C], participants: int) -> Iterator[tuple[int, R]]:
    """(position, result) of every chunk, in the order they finish: `local(chunk)`
    in this process, or `decode(remote(chunk))` for the chunks a worker took.
    `remote` must be a module-level function (it is pickled to the worker), and
    what it returns picklable."""
    if participants <= 1 or len(chunks) <= 1:
        for i, chunk in enumerate(chunks):
            yield i, local(chunk)
        return
    warm()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
    try:
        yield from _shared(local, remote, decode, chunks, participants - 1)
    finally:
        sys.setswitchinterval(switch)


def _shared(local: Callable[[C], R], remote: Callable[[C], P], decode: Callable[[P], R],
            chunks: Sequence[C], workers: int) -> Iterator[tuple[int, R]]:
    # fork where there is one: the workers start with the parser modules imported (`warm`)
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    front, back = 0, len(chunks)
    sent: dict[Future[P], int] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:

        def top_up() -> None:
            nonlocal back
            while len(sent) < workers * (1 + AHEAD) and front < back:
                back -= 1
                sent[pool.submit(remote, chunks[back])] = back

        def finished(block: bool) -> Iterator[tuple[int, R]]:
            if not sent:
                return
            done, _ = wait(list(sent), timeout=None if block else 0, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=sent.__getitem__):
                yield sent.pop(future), decode(future.result())

        top_up()
        while front < back:
            i = front
            front += 1
            yield i, local(chunks[i])
            yield from finished(block=False)
            top_up()
        # Out of chunks: take back what no worker has started, wait for the rest.
        for future in sorted(sent, key=sent.__getitem__, reverse=True):
            if future.cancel():
                i = sent.pop(future)
                yield i, local(chunks[i])
        while sent:
            yield from finished(block=True)
