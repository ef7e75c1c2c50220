"""Did-you-mean suggestions, shared by every stage that reports an unknown word."""

from __future__ import annotations

import difflib
from typing import Iterable


def closest(word: str, choices: Iterable[object]) -> str | None:
    """The allowed word the user most likely meant: a case mistake first, then
    the nearest spelling (difflib ratio >= 0.7, so unrelated words stay silent)."""
    pool = sorted({c for c in choices if isinstance(c, str)})
    for c in pool:
        if c.lower() == word.lower():
            return c
    match = difflib.get_close_matches(word, pool, n=1, cutoff=0.7)
    return match[0] if match else None


def did_you_mean(word: object, choices: Iterable[object]) -> str:
    """` (did you mean "x"?)` or the empty string; meant to be appended to a message."""
    best = closest(word, choices) if isinstance(word, str) else None
    return f' (did you mean "{best}"?)' if best else ""


def one_of(values: Iterable[str]) -> str:
    vals = [f'"{v}"' for v in values]
    return ", ".join(vals[:-1]) + f" or {vals[-1]}" if len(vals) > 1 else "".join(vals)
