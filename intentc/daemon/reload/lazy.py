"""Texts a snapshot offers but makes only when first read.

plan.json and graph.json of 100,000 intents are tens of megabytes of JSON
and seconds of work (at 10,000 intents: 1.0 s and 0.7 s); the daemon applies
objects and never reads them, only `watch --out` writes them.  Making them on
every reload would put seconds into a swap that must take milliseconds.
"""

from __future__ import annotations

import threading
from typing import Callable


class LazyText:
    """`get()` makes the text once (under a lock: HTTP readers and the reactor share
    snapshots) and keeps it; `LazyText.of(text)` wraps a text made already."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make: Callable[[], str] | None = make
        self._text: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, text: str) -> LazyText:
        out = cls(lambda: text)
        out._text, out._make = text, None
        return out

    def get(self) -> str:
        if self._text is None:
            with self._lock:
                if self._text is None:
                    assert self._make is not None
                    self._text, self._make = self._make(), None      # the maker (and what it holds) goes
        return self._text
