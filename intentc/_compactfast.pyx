# cython: language_level=3
"""The IR's per-node plumbing in C: `intentc.compact`'s pickling and interning,
`diagnostics.make_span`, and `FieldSpans`' packing of positions.

None of it is parsing, yet it was a fifth of a cold `check`: each of the
100,000 spans, million nodes and million packed positions of a large
repository went through a few Python calls that only move values between
slots -- a frozen dataclass's ``__init__`` (one ``object.__setattr__`` a
field), the pickle protocol's ``__reduce__`` and its constructor call on
the way back, a walk that interns strings in place.  Here the same moves are
the C API's generic attribute get and set on the same slots.

Each function is a drop-in for a Python one kept beside it as the reference
(``compact._build_py``, ``compact._intern_strings_py``, ...); the Python
module picks this one when it is built.  `tests/test_compact_fast.py` holds
the two to identical values, types, identities of interned strings and
pickles.
"""

import sys

from cpython.object cimport PyObject_GenericGetAttr, PyObject_GenericSetAttr
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint16_t, uint32_t


cdef extern from *:
    """
    static PyObject *intentc_alloc(PyObject *cls) {
        /* what object.__new__ does for a class of slots: its tp_alloc, nothing set */
        return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    }
    """
    object intentc_alloc(object cls)


_intern = sys.intern


cdef object _new(object cls, tuple names, tuple values, tuple interned):
    """An instance of `cls` with `values` in its slots `names`, `__init__` not run
    (as unpickling does), the strings at the positions `interned` interned."""
    cdef Py_ssize_t i, n = len(names)
    if len(values) != n:
        raise TypeError(f"{cls.__name__} takes {n} values, not {len(values)}")
    obj = intentc_alloc(cls)
    for i in range(n):
        PyObject_GenericSetAttr(obj, names[i], values[i])
    for i in interned:
        v = values[i]
        if type(v) is str:
            PyObject_GenericSetAttr(obj, names[i], _intern(v))
    return obj


cdef dict _LAYOUTS = {}      # class -> (slot names, positions to intern)
cdef object _layout_of       # a Python function: class -> that pair (`compact._layout`)
cdef object _SPAN = None     # `diagnostics.Span`


def setup(layout_of, build, init_spec_of, span_cls):
    """Called once by `intentc.compact` / `intentc.diagnostics`: how to learn a
    class's layout, the function that rebuilds a node, how to learn a class's
    ``__init__`` parameters, the `Span` class."""
    global _layout_of, _BUILD, _init_spec_of, _SPAN
    if layout_of is not None:
        _layout_of, _BUILD, _init_spec_of = layout_of, build, init_spec_of
    if span_cls is not None:
        _SPAN = span_cls


def build(cls, tuple values):
    """Unpickling a `Compact` node (`compact._build_py`)."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _layout_of(cls)
    names, interned = <tuple>layout
    return _new(cls, names, values, interned)


def fields(obj):
    """A `Compact` node's slot values in order (`Compact.__reduce__`)."""
    cls = type(obj)
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _layout_of(cls)
    cdef tuple names = (<tuple>layout)[0]
    cdef Py_ssize_t i, n = len(names)
    out = [None] * n
    for i in range(n):
        out[i] = PyObject_GenericGetAttr(obj, names[i])
    return tuple(out)


cdef object _BUILD = None    # `compact._build`, under the name pickles give it
cdef dict _INITS = {}        # class -> (field names, kinds: 0 required / 1 default / 2 factory, defaults)
cdef object _init_spec_of    # a Python function: class -> that triple (`compact._init_spec`)


def init(self, *args, **kwargs):
    """A frozen dataclass's generated ``__init__`` (one ``object.__setattr__`` a
    field, a Python call each), as generic C: the arguments bound to the fields
    as Python binds them, defaults and factories filled in, each slot set."""
    cls = type(self)
    spec = _INITS.get(cls)
    if spec is None:
        spec = _INITS[cls] = _init_spec_of(cls)
    cdef tuple names = (<tuple>spec)[0]
    cdef tuple kinds = (<tuple>spec)[1]
    cdef tuple defaults = (<tuple>spec)[2]
    cdef Py_ssize_t i, n = len(names), given = len(args), taken = 0
    if given > n:
        raise TypeError(f"{cls.__name__}.__init__() takes {n + 1} positional arguments but {given + 1} were given")
    for i in range(n):
        name = names[i]
        if i < given:
            v = args[i]
            if kwargs and name in kwargs:
                raise TypeError(f"{cls.__name__}.__init__() got multiple values for argument '{name}'")
        elif kwargs and name in kwargs:
            v = kwargs[name]
            taken += 1
        else:
            kind = kinds[i]
            if kind == 0:
                raise TypeError(f"{cls.__name__}.__init__() missing 1 required argument: '{name}'")
            v = defaults[i] if kind == 1 else defaults[i]()
        PyObject_GenericSetAttr(self, name, v)
    if taken != len(kwargs):
        unknown = next(k for k in kwargs if k not in names)
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument '{unknown}'")


def reduce(obj):
    """`Compact.__reduce__`: rebuilt by `compact._build` from the slot values."""
    return _BUILD, (type(obj), fields(obj))


cdef dict _WALKS = {}        # class -> (interned slot names, other slot names that may hold nodes)


def intern_strings(node, compact_cls, walk_of):
    """Intern, in place, the `INTERNED` string fields of `node` and of every node
    below it (`compact._intern_strings_py`; `walk_of(cls)` names the slots)."""
    cdef list stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is tuple:
            stack.extend(<tuple>n)
            continue
        if isinstance(n, tuple):
            stack.extend(n)
            continue
        if not isinstance(n, compact_cls):
            continue
        cls = type(n)
        walk = _WALKS.get(cls)
        if walk is None:
            walk = _WALKS[cls] = walk_of(cls)
        interned, children = <tuple>walk
        for name in <tuple>interned:
            v = PyObject_GenericGetAttr(n, name)
            if type(v) is str:
                iv = _intern(v)
                if iv is not v:
                    PyObject_GenericSetAttr(n, name, iv)
        for name in <tuple>children:
            v = PyObject_GenericGetAttr(n, name)
            if isinstance(v, tuple) or isinstance(v, compact_cls):
                stack.append(v)


def make_span(file, line, column, end_line, end_column):
    """`diagnostics.make_span`: a `Span` without its frozen `__init__`."""
    span = intentc_alloc(_SPAN)
    PyObject_GenericSetAttr(span, "file", file)
    PyObject_GenericSetAttr(span, "line", line)
    PyObject_GenericSetAttr(span, "column", column)
    PyObject_GenericSetAttr(span, "end_line", end_line)
    PyObject_GenericSetAttr(span, "end_column", end_column)
    return span


def pack_positions(list flat):
    """`ir._packed`: line, column, end line, end column of each span as native
    16-bit integers when every one fits, else 32-bit; None (the caller's
    `struct` reports it) for a value neither holds."""
    cdef Py_ssize_t i, n = len(flat)
    cdef long long v, top = 0
    for i in range(n):
        o = flat[i]
        if type(o) is not int or o < 0 or o > 0xFFFFFFFF:
            return None
        v = o
        if v > top:
            top = v
    cdef bytes out
    cdef uint16_t *narrow
    cdef uint32_t *wide
    if top <= 0xFFFF:
        out = PyBytes_FromStringAndSize(NULL, 2 * n)
        narrow = <uint16_t *>PyBytes_AS_STRING(out)
        for i in range(n):
            narrow[i] = <uint16_t>(<long long>flat[i])
    else:
        out = PyBytes_FromStringAndSize(NULL, 4 * n)
        wide = <uint32_t *>PyBytes_AS_STRING(out)
        for i in range(n):
            wide[i] = <uint32_t>(<long long>flat[i])
    return out


def field_spans(cls, file, mapping, dict shared):
    """`ir.FieldSpans.located` / `.pack` in one call: the keys sorted (one tuple
    object per set of keys, kept in `shared`), the positions of each value -- a
    4-tuple, or anything with ``line``, ``column``, ``end_line``, ``end_column``
    -- packed, and the `FieldSpans` made; None (the caller's Python path decides)
    for anything else."""
    keys = tuple(sorted(mapping))
    same = shared.get(keys)
    if same is None:
        shared[keys] = keys
    else:
        keys = same
    flat = []
    for key in <tuple>keys:
        o = mapping[key]
        if type(o) is tuple:
            if len(<tuple>o) != 4:
                return None
            flat.extend(<tuple>o)
        else:
            flat.append(o.line)
            flat.append(o.column)
            flat.append(o.end_line)
            flat.append(o.end_column)
    packed = pack_positions(flat)
    if packed is None:
        return None
    return _made_field_spans(cls, file, keys, packed)


cdef object _FIELD_SPANS = None     # `ir.FieldSpans`
cdef dict _SHARED_KEYS = None       # `ir._KEYS`


def setup_field_spans(cls, dict shared):
    """Called once by `intentc.ir`: the `FieldSpans` class and its shared keys tuples."""
    global _FIELD_SPANS, _SHARED_KEYS
    _FIELD_SPANS, _SHARED_KEYS = cls, shared


def field_spans_back(file, keys, positions):
    """Unpickling a `FieldSpans` (`ir._field_spans`): its keys tuple shared again, no ``__init__``."""
    same = _SHARED_KEYS.get(keys)
    if same is None:
        _SHARED_KEYS[keys] = keys
    else:
        keys = same
    return _made_field_spans(_FIELD_SPANS, file, keys, positions)


cdef object _made_field_spans(cls, file, keys, packed):
    obj = intentc_alloc(cls)
    PyObject_GenericSetAttr(obj, "file", file)
    PyObject_GenericSetAttr(obj, "keys", keys)
    PyObject_GenericSetAttr(obj, "positions", packed)
    return obj
