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
parent holds each distinct value once.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

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
