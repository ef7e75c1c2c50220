"""Did-you-mean suggestions, shared by every pass that reports an unknown word."""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean "x"?)` or the empty string; meant to be appended to a message."""
    pool = sorted(set(candidates))
    match = difflib.get_close_matches(word, pool, n=1, cutoff=0.7)
    if not match:
        lowered = {c.lower(): c for c in pool}
        if word.lower() in lowered:
            match = [lowered[word.lower()]]
    return f' (did you mean "{match[0]}"?)' if match else ""


def one_of(values: Iterable[str]) -> str:
    vals = [f'"{v}"' for v in values]
    return ", ".join(vals[:-1]) + f" or {vals[-1]}" if len(vals) > 1 else "".join(vals)
