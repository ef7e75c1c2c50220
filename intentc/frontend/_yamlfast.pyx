# cython: language_level=3
"""The common case of `yaml_read.Reader`, in C, straight from libyaml's parser.

`Reader._events` spends three quarters of a YAML file's parse in Python: one
`Event` and two `Mark` objects per event, and a dozen attribute reads on
them.  This module walks
libyaml's events in C and builds the very same `YMap` / `YList` values and
positions, for documents written the usual way.

It decides nothing a user could see.  At the first thing the full reader
would report or treat specially -- a syntax error, an anchor or alias, an
explicit tag, a merge key, a duplicate or non-scalar key, nesting past the
limit, a scalar that is not a value of its type -- it returns None, and
`Reader` reads the text again, from the start, with the Python reader,
which says exactly what it always said.  `tests/test_yaml_fast.py` holds
the two readers to identical values, positions and diagnostics.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8


cdef extern from "yaml.h":
    ctypedef enum yaml_event_type_t:
        YAML_NO_EVENT
        YAML_STREAM_START_EVENT
        YAML_STREAM_END_EVENT
        YAML_DOCUMENT_START_EVENT
        YAML_DOCUMENT_END_EVENT
        YAML_ALIAS_EVENT
        YAML_SCALAR_EVENT
        YAML_SEQUENCE_START_EVENT
        YAML_SEQUENCE_END_EVENT
        YAML_MAPPING_START_EVENT
        YAML_MAPPING_END_EVENT

    ctypedef struct yaml_mark_t:
        size_t index
        size_t line
        size_t column

    ctypedef struct _scalar_data:        # only the fields read here; the names need not be libyaml's
        unsigned char *anchor
        unsigned char *tag
        unsigned char *value
        size_t length
        int plain_implicit

    ctypedef struct _collection_data:
        unsigned char *anchor
        unsigned char *tag

    ctypedef union _event_data:
        _scalar_data scalar
        _collection_data sequence_start
        _collection_data mapping_start

    ctypedef struct yaml_event_t:
        yaml_event_type_t type
        _event_data data
        yaml_mark_t start_mark
        yaml_mark_t end_mark

    ctypedef struct yaml_parser_t:
        pass

    int yaml_parser_initialize(yaml_parser_t *parser)
    void yaml_parser_delete(yaml_parser_t *parser)
    void yaml_parser_set_input_string(yaml_parser_t *parser, const unsigned char *input, size_t size)
    int yaml_parser_parse(yaml_parser_t *parser, yaml_event_t *event)
    void yaml_event_delete(yaml_event_t *event)


cdef class _Frame:
    """A mapping or list being built: the value, its positions, the key
    waiting for its value (None while a key is expected) and where it began."""
    cdef object obj
    cdef object pos
    cdef bint is_map
    cdef object key
    cdef object key_at
    cdef Py_ssize_t line
    cdef Py_ssize_t column


def read(str text, object ymap, object ylist, dict cache, Py_ssize_t cache_size,
         object plain_value, object invalid, Py_ssize_t max_depth):
    """The documents of `text` as `Reader.docs` holds them -- (root, its
    position) each -- or None when the full reader must read it.

    `ymap` / `ylist` are the classes to build; a plain scalar's value comes
    from `cache`, or from `plain_value` (which returns `invalid` when the
    scalar would be reported) and is then remembered while `cache` holds
    fewer than `cache_size`."""
    cdef yaml_parser_t parser
    cdef yaml_event_t event
    cdef bytes data
    cdef list docs = []
    cdef list stack = []
    cdef _Frame top, frame
    cdef object root = None, root_at = None, at, raw, value, made
    cdef bint plain
    cdef Py_ssize_t depth = 0
    cdef yaml_event_type_t kind
    try:
        data = text.encode("utf-8")
    except UnicodeError:
        return None
    if yaml_parser_initialize(&parser) == 0:
        raise MemoryError
    try:
        yaml_parser_set_input_string(&parser, <const unsigned char *><char *>data, len(data))
        while True:
            if yaml_parser_parse(&parser, &event) == 0:
                return None
            try:
                kind = event.type
                if kind == YAML_SCALAR_EVENT:
                    if event.data.scalar.anchor != NULL or event.data.scalar.tag != NULL:
                        return None
                    at = (event.start_mark.line, event.start_mark.column,
                          event.end_mark.line, event.end_mark.column)
                    raw = PyUnicode_DecodeUTF8(<char *>event.data.scalar.value,
                                               event.data.scalar.length, "strict")
                    plain = event.data.scalar.plain_implicit == 1
                    if stack:
                        top = stack[-1]
                        if top.is_map and top.key is None:        # a key
                            if plain and raw == "<<":
                                return None
                            top.key = raw
                            top.key_at = at
                            continue
                    if plain:
                        value = cache.get(raw, invalid)
                        if value is invalid:
                            value = plain_value(raw)
                            if value is invalid:
                                return None
                            if len(cache) < cache_size:
                                cache[raw] = value
                    else:
                        value = raw
                    if not stack:
                        root, root_at = value, at
                    elif not _attach(<_Frame>stack[-1], value, at):
                        return None
                elif kind == YAML_MAPPING_START_EVENT or kind == YAML_SEQUENCE_START_EVENT:
                    depth += 1
                    if depth > max_depth:
                        return None
                    if kind == YAML_MAPPING_START_EVENT:
                        if event.data.mapping_start.anchor != NULL or event.data.mapping_start.tag != NULL:
                            return None
                    elif event.data.sequence_start.anchor != NULL or event.data.sequence_start.tag != NULL:
                        return None
                    if stack:
                        top = stack[-1]
                        if top.is_map and top.key is None:        # a list or mapping as a key
                            return None
                    frame = _Frame()
                    frame.line = event.start_mark.line
                    frame.column = event.start_mark.column
                    at = (frame.line, frame.column, frame.line, frame.column)
                    frame.is_map = kind == YAML_MAPPING_START_EVENT
                    frame.obj = ymap(at) if frame.is_map else ylist(at)
                    frame.pos = frame.obj.pos
                    stack.append(frame)
                elif kind == YAML_MAPPING_END_EVENT or kind == YAML_SEQUENCE_END_EVENT:
                    depth -= 1
                    frame = stack.pop()
                    made = frame.obj
                    at = (frame.line, frame.column, event.end_mark.line, event.end_mark.column)
                    made.at = at
                    if not stack:
                        root, root_at = made, at
                    elif not _attach(<_Frame>stack[-1], made, at):
                        return None
                elif kind == YAML_DOCUMENT_START_EVENT:
                    del stack[:]
                    depth = 0
                    root, root_at = None, None
                elif kind == YAML_DOCUMENT_END_EVENT:
                    if root_at is not None:
                        docs.append((root, root_at))
                    root, root_at = None, None
                elif kind == YAML_STREAM_END_EVENT:
                    return docs
                elif kind == YAML_ALIAS_EVENT:
                    return None
            finally:
                yaml_event_delete(&event)
    finally:
        yaml_parser_delete(&parser)


cdef bint _attach(_Frame top, object value, object at) except -1:
    """`value` into the mapping or list being built; False on a duplicate key."""
    cdef object key
    if top.is_map:
        key = top.key
        if key in top.pos:
            return False
        top.obj[key] = value
        top.pos[key] = (top.key_at, at)
        top.key = None
    else:
        top.obj.append(value)
        top.pos.append(at)
    return True
