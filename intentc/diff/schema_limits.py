"""What `intentc schema-diff` refuses to compare: schemas built to make it hang.

The schemas come from a pull request, so they may be hostile.  The
comparison walks both sides recursively, emits one finding per enum value
added or removed (each carrying the whole enum into the documents' check and
the counter-example search), and evaluates `pattern`s with Python's
backtracking `re` - inside jsonschema's validator and inside
hypothesis-jsonschema's generator, so no one call site can put a linear-time
engine in front of them.  Each limit below is far above what a real schema
needs and far below what makes the comparison run away:

* nesting deeper than `MAX_DEPTH` objects and arrays (intentc's own schemas
  nest about ten deep; a schema 5,000 deep exhausted the interpreter's
  recursion);
* an `enum` of more than `MAX_ENUM` values: each value added or removed is
  a finding checked against the whole enum, so the time grows with the
  square of its length (500 values all replaced: 1.8 s; 1,000: 6 s, 22 s on
  a busy machine; 100,000 ran past a minute at 370 MB before any output);
* a `pattern` (or a `patternProperties` key) that backtracks exponentially:
  an unbounded repeat around something that itself repeats without bound
  (`(a+)+`, `(a*)*`, `(\\w+\\s?)*`) or around alternatives that can start
  with the same character (`(a|a)*`).  `^(a+)+$` against 40 `a`s and a `!`
  did not finish within a minute; these are the textbook catastrophic
  shapes, and a schema never needs them (`a+` says the same as `(a+)+`).
  The screen is not a proof: polynomial backtracking (`\\s*\\s*$`) and
  rarer exponential shapes are not refused; the input limits bound the
  strings they run on.

A schema beyond a limit is refused with `E0802` at the offending place and
nothing is compared: a finding left out silently would read as "compatible".
"""

from __future__ import annotations

import re
from typing import Any, Iterator

# `re`'s own parser: the screen judges the pattern as the engine that runs it reads it
# (`re` folds `(\w|\d)` into one class, for instance, so that one is no danger)
from re import _constants as sre_constants   # type: ignore[attr-defined]
from re import _parser as sre_parse   # type: ignore[attr-defined]

MAX_DEPTH = 64
MAX_ENUM = 500

_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT}
_UNBOUNDED = sre_constants.MAXREPEAT


def hostile(doc: Any) -> tuple[str, str] | None:
    """(JSON Pointer, why) of the first place in `doc` beyond a limit, else None."""
    for pointer, message in _walk(doc, "", 0):
        return pointer, message
    return None


def _walk(node: Any, pointer: str, depth: int) -> Iterator[tuple[str, str]]:
    # an explicit stack, not recursion: the depth being checked is the attacker's
    stack = [(node, pointer, depth)]
    while stack:
        value, at, level = stack.pop()
        if level > MAX_DEPTH:
            yield at, f"schema nested more than {MAX_DEPTH} levels deep"
            return
        if isinstance(value, dict):
            enum = value.get("enum")
            if isinstance(enum, list) and len(enum) > MAX_ENUM:
                yield at + "/enum", f"enum of {len(enum):,} values: more than the {MAX_ENUM:,} schema-diff compares"
                return
            for key, why in _patterns(value):
                where = at + "/pattern" if key is None else at + "/patternProperties/" + _escape(key)
                yield where, why
                return
            for key in sorted(value, reverse=True):
                stack.append((value[key], f"{at}/{_escape(str(key))}", level + 1))
        elif isinstance(value, list):
            for i in range(len(value) - 1, -1, -1):
                stack.append((value[i], f"{at}/{i}", level + 1))


def _patterns(node: dict[str, Any]) -> Iterator[tuple[str | None, str]]:
    """(None for `pattern`, else the `patternProperties` key; why) of each catastrophic pattern."""
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        why = catastrophic(pattern)
        if why:
            yield None, why
    props = node.get("patternProperties")
    if isinstance(props, dict):
        for key in props:
            why = catastrophic(key) if isinstance(key, str) else None
            if why:
                yield key, why


def catastrophic(pattern: str) -> str | None:
    """Why `pattern` can backtrack exponentially in `re`, or None (also for a pattern
    `re` cannot read: the validators already treat that one as undecidable)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    try:
        nested = _nested(parsed)
    except RecursionError:          # groups nested past what can be walked: not judged safe
        nested = True
    if nested:
        shown = pattern if len(pattern) <= 40 else pattern[:39] + "…"
        return (f"pattern {shown!r} can take exponential time to match (a repeat around a repeat, or around "
                "alternatives that start alike); write it without the nesting")
    return None


def _nested(seq: Any) -> bool:
    """True when some unbounded repeat in `seq` repeats an ambiguous body (`_ambiguous`)."""
    for op, av in seq:
        if op in _REPEATS:
            if _unbounded(av[1]) and _ambiguous(_unwrap(av[2])):
                return True
            if _nested(av[2]):
                return True
        elif op == sre_constants.SUBPATTERN:
            if _nested(av[-1]):
                return True
        elif op == sre_constants.BRANCH:
            if any(_nested(branch) for branch in av[1]):
                return True
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            if _nested(av[1]):
                return True
    return False


def _ambiguous(body: list[tuple[Any, Any]]) -> bool:
    """A repeated body that can match one run of characters in many ways: besides parts
    that may match nothing (`\\s?`), it is an unbounded repeat (`(\\w+\\s?)*`) or
    alternatives that start alike; a required delimiter (`([a-z]+\\.)*`) makes it safe."""
    if any(_overlaps(item) for item in body):
        return True
    required = [item for item in body if not _optional(item)]
    if not required:
        return any(_is_unbounded_repeat(item) for item in body)
    return len(required) == 1 and (_is_unbounded_repeat(required[0]) or _overlaps(required[0]))


def _optional(item: tuple[Any, Any]) -> bool:
    return item[0] in _REPEATS and item[1][0] == 0


def _unbounded(high: int) -> bool:
    return high == _UNBOUNDED or high > 1000


def _unwrap(seq: Any) -> list[tuple[Any, Any]]:
    """`seq`'s items, looking through a group that is all of it: `((a+))` is `a+`."""
    items = list(seq)
    while len(items) == 1 and items[0][0] == sre_constants.SUBPATTERN:
        items = list(items[0][1][-1])
    return items


def _is_unbounded_repeat(item: tuple[Any, Any]) -> bool:
    return item[0] in _REPEATS and _unbounded(item[1][1])


def _overlaps(item: tuple[Any, Any]) -> bool:
    """Alternatives that may begin with the same character: only branches that each start
    with a different literal character are known not to (`(a|b)`, `(foo|bar)`)."""
    if item[0] != sre_constants.BRANCH:
        return False
    firsts = []
    for branch in item[1][1]:
        head = _unwrap(branch)[:1]
        if not head or head[0][0] != sre_constants.LITERAL:
            return True
        firsts.append(head[0][1])
    return len(set(firsts)) < len(firsts)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
