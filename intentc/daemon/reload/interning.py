"""One string object per repeated IR value, for files the Reloader parses in-process.

`check` parses in worker processes and unpickles each file's IR, and
unpickling interns the fields a class names in `Compact.INTERNED` (image,
model, SLA class, quantities, references...).  The Reloader parses in its
own process (`parse_source`), so each file kept its own copies: at
10,000 intents 10.7 string objects a file for 3.0 distinct values, ~460
bytes a file held twice or more (46 MB at 100,000 intents).  `intern_strings`
interns the same fields in place, right after the parse, before the program
is shared with anything: the values are equal, only their identity changes,
so equality, hashing and every output stay the same.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from intentc.compact import Compact

_intern = sys.intern
_Walk = tuple[tuple[tuple[Callable[[Any], Any], Callable[[Any, Any], None]], ...], tuple[Callable[[Any], Any], ...]]
_PLANS: dict[type, _Walk] = {}
_SKIP = frozenset({"span", "spans"})     # positions: no interned values below


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
