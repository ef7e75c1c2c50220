"""A base for the frozen, slotted dataclasses there are millions of.

The IR of a 100,000-intent repository is about a million small nodes plus
three million spans; with an instance dictionary each, `check` peaked far
over what the daemon's pod is given.  ``@dataclass(frozen=True, slots=True)``
drops the dictionary, but the default pickling of slotted dataclasses
(``__setstate__`` with one ``object.__setattr__`` per field) doubled the
time to read the parse cache.  `Compact` pickles a node as one constructor
call with its fields in order instead.
"""

from __future__ import annotations


class Compact:
    """Mixin for ``@dataclass(frozen=True, slots=True)`` classes whose fields all take part in ``__init__``."""

    __slots__ = ()

    def __reduce__(self) -> tuple[object, ...]:
        names: tuple[str, ...] = self.__slots__   # the dataclass's fields, in order
        return type(self), tuple([getattr(self, name) for name in names])
