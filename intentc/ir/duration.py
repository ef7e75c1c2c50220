"""Durations as written in intents (`90s`, `45m`, `2h`, `1d`, `1h30m`).

The one parser of the notation: the domain pass (is it valid?), the graph
and the planner (estimated run time), apply's timeouts and the fallback
chain all read a duration through `parse_duration`, so a spelling that one
of them accepts is never "no duration" for another.

Units come in descending order (d, h, m, s), each at most once: `30m1h` is
refused at `check` time rather than silently summed, as a typo of `1h30m`
and `1h1h` of `1h` are more likely than a wish to add them up.
"""

from __future__ import annotations

import functools
import re

MAX_LENGTH = 64
_DURATION = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
_UNIT_SECONDS = (86400, 3600, 60, 1)
_PLAIN_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")      # the command line's plain seconds: 90, 0.5


@functools.lru_cache(maxsize=4096)
def parse_duration(text: str) -> int | None:
    """Seconds, or None when `text` is not a duration (a bare number is not:
    `2` could mean minutes or hours, so the unit is required).

    Cached: a program spells its durations a few hundred ways, while the graph,
    the planner and the forecast each read every intent's again."""
    text = text.strip()
    if len(text) > MAX_LENGTH:          # int() of 5,000 digits raises
        return None
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.groups()):
        return None
    return sum(int(g) * unit for g, unit in zip(m.groups(), _UNIT_SECONDS) if g)


def parse_seconds(text: str) -> float | None:
    """Seconds as a command-line option takes them: a duration (`90s`, `5m`,
    `1h30m`) or a plain number of seconds (`90`, `0.5`: what time options took
    before they took durations); None when `text` is neither."""
    text = text.strip()
    if len(text) > MAX_LENGTH:
        return None
    if _PLAIN_SECONDS.fullmatch(text):
        return float(text)
    seconds = parse_duration(text)
    return None if seconds is None else float(seconds)


def format_duration(seconds: int) -> str:
    """Seconds as `1d2h30m`, the notation `parse_duration` reads (`0s` for zero)."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts) or "0s"
