"""A base for the frozen, slotted dataclasses there are millions of.

The IR of a 100,000-intent repository is about a million small nodes plus
a million spans; with an instance dictionary each, `check` peaked far over
what the daemon's pod is given.  ``@dataclass(frozen=True, slots=True)``
drops the dictionary, but the default pickling of slotted dataclasses
(``__setstate__`` with one ``object.__setattr__`` per field) doubled the
time to read the parse cache.  `Compact` pickles a node as one constructor
call with its fields in order instead.

Each file's result is pickled on its own (a worker ships it, the cache
stores it), so a value written in every file — a tenant name, an image, a
GPU product, ``bf16`` — came back as one string object per file.  A class
names such fields in `INTERNED`; they are interned when unpickled, so the
parent holds each distinct value once.  A program parsed in-process (the
daemon's Reloader, `parse_source`) is never unpickled: `intern_strings`
interns the same fields in place, right after the parse, before the program
is shared with anything (each repeated value would otherwise be held once
per file that writes it).  The values stay equal, only their identity
changes, so equality, hashing and every output stay the same.

A compiled stand-in for these moves was tried and removed: on `intentc
check` it did not buy what a second implementation must buy to be kept
(docs/benchmarks.md, "The compiled modules").
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, ClassVar

_intern = sys.intern


class Compact:
    """Mixin for ``@dataclass(frozen=True, slots=True)`` classes whose fields all take part in ``__init__``."""

    __slots__ = ()
    INTERNED: ClassVar[tuple[str, ...]] = ()    # optional str fields whose values repeat across files

    def __reduce__(self) -> tuple[object, ...]:
        cls = type(self)
        values = _fields_py(self)
        # `cls(*values)` unless strings are to be interned
        return (_build, (cls, values)) if _layout_of(cls)[1] else (cls, values)


Layout = tuple[tuple[str, ...], tuple[int, ...]]
_LAYOUTS: dict[type, Layout] = {}


def _layout(cls: type) -> Layout:
    """A node class's slots, in the order of its fields (a slotted dataclass's
    `__slots__`), and the positions among them of its `INTERNED` fields."""
    names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    return names, tuple(names.index(name) for name in getattr(cls, "INTERNED", ()))


def _layout_of(cls: type) -> Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _layout(cls)
    return layout


def _fields_py(node: object) -> tuple[Any, ...]:
    """A node's field values in order: what it is pickled as."""
    return tuple([getattr(node, name) for name in _layout_of(type(node))[0]])


def _build(cls: Any, values: tuple[Any, ...]) -> Any:
    """A node back from its pickled field values, the `INTERNED` strings interned."""
    at = _layout_of(cls)[1]
    if not at:
        return cls(*values)
    interned = list(values)
    for i in at:
        v = interned[i]
        if type(v) is str:
            interned[i] = _intern(v)
    return cls(*interned)


_Walk = tuple[tuple[str, ...], tuple[str, ...]]
_SKIP = frozenset({"span", "spans", "file", "line", "column", "end_line", "end_column"})  # positions


def _walk(cls: type) -> _Walk:
    """The names of a node class's interned fields, and of its other fields that may hold nodes."""
    slots = [name for k in cls.__mro__ for name in getattr(k, "__slots__", ())]
    interned = getattr(cls, "INTERNED", ())
    return tuple(interned), tuple(name for name in slots if name not in interned and name not in _SKIP)


_WALKS: dict[type, _Walk] = {}


def intern_strings(node: object) -> None:
    """Intern, in place, the `INTERNED` string fields of `node` and of every IR node below it."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        if isinstance(n, tuple):
            stack.extend(n)
        elif isinstance(n, Compact):
            walk = _WALKS.get(type(n))
            if walk is None:
                walk = _WALKS[type(n)] = _walk(type(n))
            interned, children = walk
            for name in interned:
                v = getattr(n, name)
                if type(v) is str:
                    object.__setattr__(n, name, _intern(v))
            for name in children:
                v = getattr(n, name)
                if isinstance(v, (tuple, Compact)):
                    push(v)


def compiled_module(name: str, off: str) -> Any:
    """One of the optional compiled modules (`setup.py`), or None when it is not
    built or the environment variable `off` is ``1`` (for measuring: its Python
    counterpart runs instead)."""
    if os.environ.get(off) == "1":
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# The optional compiled modules, what each speeds up, and the variable that turns it off
# (`intentc version` reports them; each module's loader names its own).
SPEEDUPS: tuple[tuple[str, str, str], ...] = (
    ("yaml", "intentc.frontend._yamlfast", "INTENTC_PURE_YAML"),     # frontend/yaml_read.py
    ("dsl", "intentc.frontend._dslfast", "INTENTC_PURE_DSL"),        # frontend/dsl.py
)

