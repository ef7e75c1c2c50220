"""Reading YAML text into positioned values (`YMap` / `YList`), safely.

libyaml's C *parser* emits events, and `Reader` builds plain dicts and lists
from them, remembering where each key and value was written.  Building from
events rather than from libyaml's composer matters for three reasons:

* the composer recurses in C and crashes the interpreter on deeply nested
  input; counting depth per event stops at `MAX_DEPTH` instead;
* an alias is the already-built value, shared rather than copied, and its
  size is added to a per-document budget, so a "billion laughs" document is
  refused after a few hundred events, in constant memory;
* duplicate keys (which the composer silently accepts) are caught at the
  second key.

A syntax error ends libyaml's stream; reading resumes at the next ``---``
line, so one run still reports problems in the later documents.  Lowering
the values to the IR is `intentc.frontend.yaml`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml as pyyaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from intentc.compact import compiled_module
from intentc.diagnostics import Diagnostic, Related, error, excerpt
from intentc.frontend.schema import (
    Pos,
    YList,
    YMap,
    to_span,
)

MAX_DEPTH = 64                  # nested mappings/lists, aliases included
_DEEP_HINT = "intentc documents need a handful of levels; check for runaway brackets"
MAX_ALIAS_EXPANSION = 100_000   # values reachable through aliases, per document
# Values per file.  Each value read costs a few hundred bytes (the object, its slot, its
# position), so the densest file within the size limit -- a flow list of `1,` -- would take
# around a hundred times its size before a single check ran; the cap stops the reader long
# before that.  A real file comes nowhere near it: an intent is about 40 values, a 300-node
# topology about 5,000.
MAX_VALUES = 200_000
_VALUES_HINT = ("intentc documents hold tens of values; split a generated file, or check it for a runaway list "
                f"(at most {MAX_VALUES:,} values a file)")
# The compiled reader does not count; it is used only for texts too short to hold more than
# MAX_VALUES values (a value takes at least two characters: `1,`), so both readers agree.
_FAST_MAX_CHARS = 2 * MAX_VALUES

# libyaml's parser alone (no constructor or resolver to set up per file), or the pure-Python one
_LOADER: Any = pyyaml.SafeLoader
if pyyaml.__with_libyaml__:
    from yaml._yaml import CParser
    _LOADER = CParser
_BYTE_OFFSETS = _LOADER is not pyyaml.SafeLoader    # libyaml reports reader errors in UTF-8 bytes

# The common case compiled (`_yamlfast.pyx`, built when the machine has a C compiler
# and libyaml's headers); it hands anything unusual back to `Reader`.
_fast: Any = (compiled_module("intentc.frontend._yamlfast", "INTENTC_PURE_YAML")
              if _LOADER is not pyyaml.SafeLoader else None)

_T = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = _T + "str", _T + "null", _T + "bool", _T + "int", _T + "float"
_KNOWN_SCALAR_TAGS = {_STR, _NULL, _BOOL, _INT, _FLOAT, _T + "timestamp"}
_IMPLICIT: dict[str, list[tuple[str, re.Pattern[str]]]] = Resolver.yaml_implicit_resolvers
_CONSTRUCT = SafeConstructor()
_DOC_START = re.compile(r"^---(?:[ \t]|$)", re.MULTILINE)

# Plain scalars repeat across files ("push", "bf16", "team-a"); their YAML 1.1
# resolution is pure, so a bounded memo skips the regex work.
_PLAIN_CACHE: dict[str, Any] = {}
_PLAIN_CACHE_SIZE = 50_000

_INVALID = object()     # a scalar that is not a value of its type (and a cache miss)
_MERGE = object()       # the `<<` key
_BAD_KEY = object()     # a key that is not a scalar; its value is dropped


class _TooMany(Exception):
    def __init__(self, at: Pos) -> None:
        super().__init__(at)
        self.at = at


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _Frame:
    """A mapping or list being built.  Its `label` (how messages name it:
    ``spec.action``-style keys, ``[2]`` for items) is worked out from the
    parent and the slot it fills only when a message needs it."""

    __slots__ = ("anchor", "height", "is_map", "key", "key_at", "merges", "obj", "parent", "size", "slot", "start")

    def __init__(self, obj: YMap | YList, parent: _Frame | None, anchor: str | None, start: Pos) -> None:
        self.obj = obj
        self.is_map = isinstance(obj, YMap)
        self.key: object = None
        self.key_at: Pos = start
        self.merges: list[tuple[Any, Pos]] = []
        self.size = 1
        self.height = 1
        self.anchor = anchor
        self.parent = parent
        # the key this value is written under, or its index in the parent list
        self.slot: object = None if parent is None else parent.key if parent.is_map else len(parent.obj)
        self.start = start

    @property
    def label(self) -> str:
        parent = self.parent
        if parent is None:
            return "document"
        if parent.is_map:
            return excerpt(self.slot) if isinstance(self.slot, str) else parent.label
        return f"{parent.label}[{self.slot}]"


def _short(tag: str) -> str:
    return "!!" + tag[len(_T):] if tag.startswith(_T) else tag


def _resolve_plain(value: str) -> str:
    for tag, regexp in _IMPLICIT.get(value[:1], ()):
        if regexp.match(value):
            return tag
    return _STR


def _typed(raw: str, tag: str) -> Any:
    """`raw` read as a value of `tag` (YAML 1.1 core types as Kubernetes reads
    them; other tags keep the text), or `_INVALID` when it is not one."""
    if tag == _STR:
        return raw
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return raw.lower() in ("yes", "true", "on")
    try:
        if tag == _INT:
            if raw.isdigit() and (raw[0] != "0" or len(raw) == 1):
                return int(raw)
            return _CONSTRUCT.construct_yaml_int(ScalarNode(tag, raw))
        if tag == _FLOAT:
            return _CONSTRUCT.construct_yaml_float(ScalarNode(tag, raw))
    except (ValueError, TypeError, IndexError):
        return _INVALID
    return raw


def _plain_value(raw: str) -> Any:
    """The value of an untagged plain scalar, or `_INVALID` when `Reader._scalar`
    would report it (not a value of the type it resolves to, or a tag such as
    ``=``'s that intentc does not read)."""
    tag = _resolve_plain(raw)
    return _typed(raw, tag) if tag in _KNOWN_SCALAR_TAGS else _INVALID


class Reader:
    """Text → a list of (document root, its position) plus diagnostics."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.docs: list[tuple[Any, Pos]] = []
        self.diags: list[Diagnostic] = []
        self.values = 0             # values attached so far, against MAX_VALUES

    def err(self, code: str, message: str, at: Pos, hint: str | None = None,
            related: tuple[Related, ...] = ()) -> None:
        self.diags.append(error(code, message, to_span(self.file, at), hint, related))

    def syntax_error(self, message: str, line: int, col: int, hint: str | None = None) -> None:
        """libyaml reports an unexpected end of input one line past the text: point at its end."""
        last = self.text.count("\n")
        if line > last:
            line = last
            col = len(self.text) - (self.text.rfind("\n") + 1)
        self.err("E0201", message, (line, col, line, col + 1), hint)

    # -- segments -----------------------------------------------------------

    def read(self) -> None:
        try:
            self._read()
        except _TooMany as exc:
            # the whole file is refused, as an oversized one is: a document cut short would
            # report made-up errors (a key after the cut "missing"), and what was built goes
            self.docs = []
            self.err("E0207", f"YAML file holds more than {MAX_VALUES:,} values; the rest is not read", exc.at,
                     hint=_VALUES_HINT)

    def _read(self) -> None:
        if _fast is not None and len(self.text) <= _FAST_MAX_CHARS:   # the compiled common case; None: it needs this reader
            docs = _fast.read(self.text, YMap, YList, _PLAIN_CACHE, _PLAIN_CACHE_SIZE,
                              _plain_value, _INVALID, MAX_DEPTH)
            if docs is not None:
                self.docs = docs
                return
        offset = 0
        segment = self.text
        while True:
            stop_line = self._segment(segment, offset)
            if stop_line is None:
                return
            # the broken line may itself start the next document (`---` after an unclosed `{`)
            nxt = _DOC_START.search(self.text, self._line_start(max(stop_line, offset + 1)))
            if nxt is None:
                return
            offset = self.text.count("\n", 0, nxt.start())
            segment = self.text[nxt.start():]

    def _line_start(self, line: int) -> int:
        pos = 0
        for _ in range(line):
            found = self.text.find("\n", pos)
            if found < 0:
                return len(self.text)
            pos = found + 1
        return pos

    def _segment(self, segment: str, offset: int) -> int | None:
        """Read one stretch of text; the line to resume after when it breaks off."""
        loader = None
        try:
            loader = _LOADER(segment)        # the pure-Python reader checks characters here
            self._events(loader.get_event, offset)
            return None
        except _TooDeep as exc:
            return exc.line
        except pyyaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = (mark.line if mark else 0) + offset
            col = mark.column if mark else 0
            problem = exc.problem or "invalid YAML"
            if "nesting depth" in problem:
                # libyaml from PyYAML 6.0.4 stops runaway flow nesting in its scanner,
                # before our own depth count sees the events: the same finding.
                self.err("E0203", f"YAML nested more than {MAX_DEPTH} levels deep",
                         (line, col, line, col + 1), hint=_DEEP_HINT)
                return line
            hint = f"{exc.context} (line {exc.context_mark.line + offset + 1})" \
                if exc.context and exc.context_mark else exc.context
            self.syntax_error(f"YAML syntax error: {problem}", line, col, hint)
            return line
        except pyyaml.reader.ReaderError as exc:
            index = exc.position
            if _BYTE_OFFSETS:
                index = len(segment.encode("utf-8")[:index].decode("utf-8", "ignore"))
            line = segment.count("\n", 0, index)
            col = index - (segment.rfind("\n", 0, index) + 1)
            char = segment[index] if index < len(segment) else ""
            what = f"character U+{ord(char):04X}" if char else "character"
            self.syntax_error(f"YAML syntax error: {what} is not allowed in YAML ({exc.reason})",
                              line + offset, col)
            return line + offset
        except (pyyaml.YAMLError, ValueError, UnicodeError) as exc:
            self.syntax_error(f"YAML syntax error: {exc}", offset, 0)
            return None
        finally:
            if loader is not None:
                loader.dispose()

    # -- events → values ----------------------------------------------------

    def _events(self, get_event: Callable[[], Any], off: int) -> None:
        stack: list[_Frame] = []
        anchors: dict[str, tuple[Any, int, int] | None] = {}
        expanded = 0
        skipping = False
        depth = 0
        root: Any = None
        root_at: Pos | None = None

        def attach(value: Any, at: Pos, size: int, height: int, key_text: object) -> None:
            nonlocal root, root_at
            if not stack:
                root, root_at = value, at
                return
            f = stack[-1]
            obj = f.obj
            if isinstance(obj, YMap):
                if f.key is None:                              # this value is a key
                    if key_text is None:
                        self.err("E0211", f"keys in {f.label} must be plain strings, not a list or mapping", at)
                        key_text = _BAD_KEY
                    f.key, f.key_at = key_text, at
                    return
                key, f.key = f.key, None
                if key is _BAD_KEY:
                    return
                if key is _MERGE:
                    f.merges.append((value, at))
                    return
                assert isinstance(key, str)
                if key in obj.pos:
                    first = obj.pos[key][0]
                    self.err("E0205", f'duplicate key "{excerpt(key)}" in {f.label}', f.key_at,
                             hint="a key may appear once per mapping; the first value is used",
                             related=(Related("first written here", to_span(self.file, first)),))
                    return
                obj[key] = value
                obj.pos[key] = (f.key_at, at)
            else:
                obj.append(value)
                obj.pos.append(at)
            f.size += size
            if height >= f.height:
                f.height = height + 1

        while True:
            ev = get_event()
            t = type(ev)
            if t is ScalarEvent:
                if skipping:
                    continue
                s, e = ev.start_mark, ev.end_mark
                at = (s.line + off, s.column, e.line + off, e.column)
                raw: str = ev.value
                plain = ev.tag is None and ev.implicit[0]
                if stack and not ev.anchor:
                    f = stack[-1]
                    if f.is_map and f.key is None:              # a key: its text is all it needs
                        f.key = _MERGE if plain and raw == "<<" else raw
                        f.key_at = at
                        continue
                key_text: object = raw
                if plain:
                    value = _PLAIN_CACHE.get(raw, _INVALID)
                    if value is _INVALID:
                        value = _plain_value(raw)
                        if value is _INVALID:                   # reported each time, never remembered
                            value = self._scalar(ev, at)
                        elif len(_PLAIN_CACHE) < _PLAIN_CACHE_SIZE:
                            _PLAIN_CACHE[raw] = value
                    if raw == "<<":
                        key_text = _MERGE
                else:
                    value = self._scalar(ev, at)
                self.values += 1
                if self.values > MAX_VALUES:
                    raise _TooMany(at)
                if ev.anchor:
                    anchors[ev.anchor] = (value, 1, 0)
                elif stack:                                     # the common cases, inlined
                    f = stack[-1]
                    obj = f.obj
                    if isinstance(obj, YList):
                        obj.append(value)
                        obj.pos.append(at)
                        f.size += 1
                        continue
                    key = f.key
                    if type(key) is str and key not in obj.pos:
                        obj[key] = value
                        obj.pos[key] = (f.key_at, at)
                        f.key = None
                        f.size += 1
                        continue
                attach(value, at, 1, 0, key_text)
            elif t is MappingStartEvent or t is SequenceStartEvent:
                depth += 1
                s = ev.start_mark
                if depth > MAX_DEPTH:
                    self.err("E0203", f"YAML nested more than {MAX_DEPTH} levels deep",
                             (s.line + off, s.column, s.line + off, s.column + 1),
                             hint=_DEEP_HINT)
                    raise _TooDeep(s.line + off)
                if skipping:
                    continue
                start = (s.line + off, s.column, s.line + off, s.column)
                self.values += 1
                if self.values > MAX_VALUES:
                    raise _TooMany((*start[:3], s.column + 1))
                made: YMap | YList = YMap(start) if t is MappingStartEvent else YList(start)
                if ev.tag and ev.tag not in ("!", _T + "map", _T + "seq", _T + "omap"):
                    self.err("E0211", f'unsupported YAML tag "{excerpt(_short(ev.tag))}"', start)
                if ev.anchor:
                    anchors[ev.anchor] = None
                stack.append(_Frame(made, stack[-1] if stack else None, ev.anchor, start))
            elif t is MappingEndEvent or t is SequenceEndEvent:
                depth -= 1
                if skipping:
                    continue
                f = stack.pop()
                e = ev.end_mark
                done = f.obj
                done.at = (f.start[0], f.start[1], e.line + off, e.column)
                if f.merges:
                    self._merge(f)
                if f.anchor:
                    anchors[f.anchor] = (done, f.size, f.height)
                elif stack:                                     # the common cases, inlined
                    p = stack[-1]
                    obj = p.obj
                    key = p.key
                    if isinstance(obj, YList):
                        obj.append(done)
                        obj.pos.append(done.at)
                    elif type(key) is str and key not in obj.pos:
                        obj[key] = done
                        obj.pos[key] = (p.key_at, done.at)
                        p.key = None
                    else:
                        attach(done, done.at, f.size, f.height, None)
                        continue
                    p.size += f.size
                    if f.height >= p.height:
                        p.height = f.height + 1
                    continue
                attach(done, done.at, f.size, f.height, None)
            elif t is AliasEvent:
                if skipping:
                    continue
                s, e = ev.start_mark, ev.end_mark
                at = (s.line + off, s.column, e.line + off, e.column)
                if ev.anchor not in anchors:
                    self.err("E0201", f'YAML syntax error: unknown alias "*{excerpt(ev.anchor)}"', at,
                             hint=f'define the anchor "&{excerpt(ev.anchor)}" before using it')
                    attach(None, at, 1, 0, "")
                    continue
                target = anchors[ev.anchor]
                if target is None:
                    self.err("E0202", f'alias "*{excerpt(ev.anchor)}" refers to a value that contains it', at)
                    skipping = True
                    continue
                value, size, height = target
                expanded += size
                if expanded > MAX_ALIAS_EXPANSION:
                    self.err("E0202", f"YAML aliases expand to more than {MAX_ALIAS_EXPANSION} values "
                                      "(an alias bomb?)", at,
                             hint="intentc refuses documents whose aliases multiply their size")
                    skipping = True
                    continue
                if len(stack) + height > MAX_DEPTH:
                    self.err("E0203", f"YAML nested more than {MAX_DEPTH} levels deep through aliases", at)
                    skipping = True
                    continue
                key_text = value if isinstance(value, str) else (
                    None if isinstance(value, (dict, list)) else str(value))
                attach(value, at, size, height, key_text)
            elif t is DocumentStartEvent:
                anchors.clear()
                expanded, skipping, depth, root, root_at = 0, False, 0, None, None
                stack.clear()
            elif t is DocumentEndEvent:
                if not skipping and root_at is not None:
                    self.docs.append((root, root_at))
                root, root_at = None, None
            elif t is StreamEndEvent or ev is None:
                return

    def _scalar(self, ev: ScalarEvent, at: Pos) -> Any:
        """The value of a scalar, with YAML 1.1 core types as Kubernetes reads them."""
        raw: str = ev.value
        tag = ev.tag
        if tag is None or tag == "!":
            if not ev.implicit[0]:
                return raw
            tag = _resolve_plain(raw)
        value = _typed(raw, tag)
        if value is _INVALID:
            self.err("E0211", f'"{excerpt(raw)}" is not a valid {_short(tag)} value', at)
            return raw
        if tag not in _KNOWN_SCALAR_TAGS:
            self.err("E0211", f'unsupported YAML tag "{_short(tag)}"', at,
                     hint="intentc reads strings, numbers, booleans, lists and mappings")
        return value

    def _merge(self, f: _Frame) -> None:
        """`<<: *defaults`: keys written in the mapping win, then earlier merges."""
        d = f.obj
        if not isinstance(d, YMap):
            return
        for value, at in f.merges:
            sources = value if isinstance(value, list) else [value]
            for src in sources:
                if not isinstance(src, YMap):
                    self.err("E0211", "a merge key (<<) takes a mapping or a list of mappings", at)
                    continue
                for k, v in src.items():
                    if k not in d:
                        d[k] = v
                        d.pos[k] = src.pos[k]


