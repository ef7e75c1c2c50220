"""Manifests as block YAML, byte for byte what PyYAML writes, five times sooner.

`compile` writes one YAML file per object: PyYAML's representer (Python, even
with libyaml's emitter) walks every value through several Python calls, and
was a third of the whole compile.  The objects intentc renders are
plain data: dicts with string keys, lists, strings, ints, bools, None.  Their
block layout is regular (sorted keys, two-space mappings, sequences not
indented under their key), so it is written here directly.

What is not regular is how a string is written: plain, 'single' or "double"
quoted, which depends on YAML's implicit types (`'17'`, `'true'`,
`'2026-01-01'`) and on the characters in it.  That decision is left to
PyYAML itself: each distinct string is dumped once, alone, and the form it
got is remembered (`_VALUES`), except for two shapes checked here that can
only be plain (a name-like word that is no YAML keyword, a hex digest).  A
string PyYAML would write over several lines (line breaks, or longer than
its line width could allow), a key that is not a plain string, or any type
other than those above, and the whole object goes to PyYAML
(`_Unsure`): the output is always PyYAML's.  `tests/test_yaml_block.py`
compares the two on every golden manifest and on random objects.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

_LONGEST = 1024          # longer strings: PyYAML's own line folding may apply (width 4096)
_SIMPLE_KEY = 128        # longer keys are written as complex keys ("? key")
_MEMO_LIMIT = 1 << 16    # remembered string forms; cleared when full (names unique per intent)

# A word that starts with a letter and holds no indicator PyYAML quotes for:
# plain unless it is one of YAML 1.1's booleans or nulls (the resolver's only
# implicit types starting with a letter), and not ending with ':' ("key:").
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./@=+-]*(?::[A-Za-z0-9_./@=+-]+)*\Z")
_KEYWORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                      "null Null NULL y Y n N".split())
# A hex digest with a letter other than b or e: neither an int (0x / 0b / digits only),
# nor a float (needs '.', 'e+' or 'inf'), nor a date (needs '-').
_BREAK = re.compile("[\r\n\x85\u2028\u2029]")    # what YAML takes for a line break
_DIGEST = re.compile(r"(?=[0-9a-f]*[acdf])[0-9a-f]+\Z")


class _Unsure(Exception):
    """Something this writer does not lay out as PyYAML would: PyYAML writes the object."""


class BlockWriter:
    """`write(body)`: the text `fallback(body)` gives, for the plain data described above."""

    def __init__(self, fallback: Callable[[Any], str]) -> None:
        self._fallback = fallback
        self._values: dict[str, str] = {}

    def write(self, body: Mapping[str, Any]) -> str:
        if not body:
            return self._fallback(body)
        out: list[str] = []
        try:
            self._mapping(out, body, "", False)
        except _Unsure:
            return self._fallback(body)
        return "".join(out)

    # -- layout -------------------------------------------------------------------
    def _mapping(self, out: list[str], d: Mapping[str, Any], pad: str, inline: bool) -> None:
        for n, key in enumerate(sorted(d)):
            if type(key) is not str:
                raise _Unsure
            out.append(pad if n or not inline else "")
            out.append(self._key(key))
            out.append(":")
            self._value(out, d[key], pad, False)

    def _sequence(self, out: list[str], items: list[Any], pad: str, inline: bool) -> None:
        for n, value in enumerate(items):
            out.append(pad if n or not inline else "")
            self._value(out, value, pad, True)

    def _value(self, out: list[str], value: Any, pad: str, item: bool) -> None:
        """`value` after its key's colon, or (`item`) as a sequence's item at its dash."""
        t = type(value)
        if (t is dict or t is list) and value:
            if item:                            # the block starts on the dash's line
                out.append("- ")
                inner = pad + "  "
            else:                               # below the key; a sequence not indented under it
                out.append("\n")
                inner = pad + "  " if t is dict else pad
            if t is dict:
                self._mapping(out, value, inner, item)
            else:
                self._sequence(out, value, inner, item)
            return
        out.append("- " if item else " ")
        out.append("{}" if t is dict else "[]" if t is list else self._scalar(value))
        out.append("\n")

    # -- scalars ------------------------------------------------------------------
    def _key(self, key: str) -> str:
        if len(key) <= _SIMPLE_KEY and _NAME.match(key) and key not in _KEYWORDS:
            return key
        raise _Unsure                     # quoted, or a complex key: rare, PyYAML's

    def _scalar(self, value: Any) -> str:
        t = type(value)
        if t is str:
            return self._string(value)
        if t is bool:
            return "true" if value else "false"
        if t is int:
            return str(value)
        if value is None:
            return "null"
        raise _Unsure                     # floats and anything else: PyYAML's

    def _string(self, s: str) -> str:
        if (_NAME.match(s) and s not in _KEYWORDS) or _DIGEST.match(s):
            return s
        form = self._values.get(s)
        if form is None:
            if len(s) > _LONGEST:
                raise _Unsure
            text = self._fallback({"k": s})
            form = text[3:-1]
            if not text.startswith("k: ") or not text.endswith("\n") or _BREAK.search(form):
                raise _Unsure             # written over several lines
            if len(self._values) >= _MEMO_LIMIT:
                self._values.clear()
            self._values[s] = form
        return form
