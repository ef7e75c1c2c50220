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
is shared with anything (~460 bytes a file held twice or more otherwise,
46 MB at 100,000 intents).  The values stay equal, only their identity
changes, so equality, hashing and every output stay the same.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, ClassVar

_intern = sys.intern


class Compact:
    """Mixin for ``@dataclass(frozen=True, slots=True)`` classes whose fields all take part in ``__init__``."""

    __slots__ = ()
    INTERNED: ClassVar[tuple[str, ...]] = ()    # optional str fields whose values repeat across files

    def __reduce__(self) -> tuple[object, ...]:
        names: tuple[str, ...] = self.__slots__   # the dataclass's fields, in order
        args = tuple([getattr(self, name) for name in names])
        if self.INTERNED:
            return _interned, (type(self), args)
        return type(self), args


_POSITIONS: dict[type, tuple[int, ...]] = {}


def _interned(cls: Any, args: tuple[Any, ...]) -> Any:
    at = _POSITIONS.get(cls)
    if at is None:
        at = _POSITIONS[cls] = tuple(cls.__slots__.index(name) for name in cls.INTERNED)
    values = list(args)
    for i in at:
        v = values[i]
        if v is not None:
            values[i] = _intern(v)
    return cls(*values)


_Walk = tuple[tuple[tuple[Callable[[Any], Any], Callable[[Any, Any], None]], ...], tuple[Callable[[Any], Any], ...]]
_PLANS: dict[type, _Walk] = {}
_SKIP = frozenset({"span", "spans", "file", "line", "column", "end_line", "end_column"})  # positions


def _plan(cls: type) -> _Walk:
    """The interned fields' (get, set) slot descriptors and the other fields' getters."""
    plan = _PLANS.get(cls)
    if plan is None:
        slots = [name for k in cls.__mro__ for name in getattr(k, "__slots__", ())]
        interned = getattr(cls, "INTERNED", ())
        descr = [getattr(cls, name) for name in interned]
        plan = _PLANS[cls] = (tuple((d.__get__, d.__set__) for d in descr),
                              tuple(getattr(cls, name).__get__ for name in slots
                                    if name not in interned and name not in _SKIP))
    return plan


def intern_strings(node: object) -> None:
    """Intern, in place, the `INTERNED` string fields of `node` and of every IR node below it."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        if isinstance(n, tuple):
            stack.extend(n)
        elif isinstance(n, Compact):
            interned, children = _plan(type(n))
            for get, put in interned:
                v = get(n)
                if type(v) is str:
                    put(n, _intern(v))
            for get in children:
                v = get(n)
                if isinstance(v, (tuple, Compact)):
                    push(v)
