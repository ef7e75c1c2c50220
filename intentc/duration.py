"""Durations as written in intents (`90s`, `45m`, `2h`, `1d`, `1h30m`).

One parser shared by the domain pass (is it valid?) and the graph
(estimated run time for the critical path), so they never disagree.
"""

from __future__ import annotations

import re

MAX_LENGTH = 64
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^(?:[0-9]+[smhd])+$")
_PART = re.compile(r"([0-9]+)([smhd])")


def parse_duration(text: str) -> int | None:
    """Seconds, or None when `text` is not a duration (a bare number is not:
    `2` could mean minutes or hours, so the unit is required)."""
    text = text.strip()
    if len(text) > MAX_LENGTH or not _DURATION.match(text):   # int() of 5,000 digits raises
        return None
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))


def format_duration(seconds: int) -> str:
    """Seconds as `1d2h30m`, the notation `parse_duration` reads (`0s` for zero)."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts) or "0s"
