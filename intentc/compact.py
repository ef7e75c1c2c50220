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

These moves were a fifth of a cold `check` in Python (a frozen dataclass's
``__init__`` per node made or unpickled, one ``object.__setattr__`` a field;
a `__reduce__` frame per node pickled; the walk above), so
`intentc/_compactfast.pyx` does them in C when it is built (`FAST`): a node
class's generated ``__init__`` becomes the compiled `init` (`_compile_init`),
`_build` sets the slots without running ``__init__``, as unpickling slotted
objects does, and `Compact.__reduce__` becomes the compiled `reduce`.
The Python functions here stay as the reference (`tests/test_compact_fast.py`)
and run where the module is not built or ``INTENTC_PURE_IR=1``.  A pickle
names `intentc.compact._build` either way, so a cache loads on both.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from typing import Any, Callable, ClassVar

_intern = sys.intern


class Compact:
    """Mixin for ``@dataclass(frozen=True, slots=True)`` classes whose fields all take part in ``__init__``."""

    __slots__ = ()
    INTERNED: ClassVar[tuple[str, ...]] = ()    # optional str fields whose values repeat across files

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _compile_init(cls)

    def __reduce__(self) -> tuple[object, ...]:
        cls = type(self)
        values = _fields_py(self)
        # `cls(*values)` unless strings are to be interned (the compiled reduce
        # always names `_build`, which rebuilds without `__init__`)
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


def _intern_strings_py(node: object) -> None:
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
    ("ir", "intentc._compactfast", "INTENTC_PURE_IR"),                # below
)
FAST = compiled_module("intentc._compactfast", "INTENTC_PURE_IR")   # the functions below, in C


def intern_strings(node: object) -> None:
    """Intern, in place, the `INTERNED` string fields of `node` and of every IR node below it."""
    if FAST is not None:
        FAST.intern_strings(node, Compact, _walk)
    else:
        _intern_strings_py(node)


InitSpec = tuple[tuple[str, ...], tuple[int, ...], tuple[Any, ...]]


def _init_spec(cls: type) -> InitSpec:
    """A dataclass's ``__init__`` parameters in order: their names, whether each is
    required (0), has a default (1) or a default factory (2), and that default."""
    names, kinds, defaults = [], [], []
    for f in dataclasses.fields(cls):
        names.append(f.name)
        if f.default is not dataclasses.MISSING:
            kinds.append(1)
            defaults.append(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            kinds.append(2)
            defaults.append(f.default_factory)
        else:
            kinds.append(0)
            defaults.append(None)
    return tuple(names), tuple(kinds), tuple(defaults)


def _compile_init(cls: type) -> None:
    """Give a slotted dataclass `FAST.init` for the ``__init__`` `dataclass` generated,
    when that one does nothing else: every field a plain positional-or-keyword
    parameter in field order (no `InitVar`, keyword-only or ``init=False`` field)
    and no ``__post_init__``.  Called for each subclass; a class still being
    decorated (no slots or no dataclass fields yet) is left alone, the slotted
    class `dataclass` makes from it is the one that gets it."""
    generated = cls.__dict__.get("__init__")
    if (FAST is None or "__slots__" not in cls.__dict__ or "__dataclass_fields__" not in cls.__dict__
            or generated is None or getattr(generated, "__code__", None) is None
            or generated.__code__.co_filename != "<string>" or hasattr(cls, "__post_init__")):
        return
    code = generated.__code__
    params = code.co_varnames[:code.co_argcount]
    if code.co_kwonlyargcount or params != ("self", *(f.name for f in dataclasses.fields(cls))):
        return
    GENERATED_INITS[cls] = generated    # the reference, for the differential tests
    cls.__init__ = FAST.init        # type: ignore[misc]


GENERATED_INITS: dict[type, Any] = {}


def compiled_as(fast: Callable[..., Any], module: str, name: str) -> Callable[..., Any]:
    """`fast` (a function of `FAST`) under the name of the Python function it stands
    in for: a pickle names the function that rebuilds an object, and must load on
    an install with either implementation."""
    fast.__module__, fast.__qualname__, fast.__name__ = module, name, name
    return fast


_build_py, _reduce_py = _build, Compact.__reduce__    # the references, for the differential tests
if FAST is not None:
    _build = compiled_as(FAST.build, __name__, "_build")
    FAST.setup(_layout_of, _build, _init_spec, None)
    Compact.__reduce__ = FAST.reduce     # type: ignore[method-assign]
