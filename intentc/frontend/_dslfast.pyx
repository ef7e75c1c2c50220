# cython: language_level=3, boundscheck=False
"""The common case of a `.intent` file's parse, lexer and LALR loop in C.

A DSL file spent about half of its parse between the lexer and lark-cython's
loop: a regex match object, a slice and a `Token` per token, then two Python
calls per token (`LexerThread.next_token`, `_Lexer.next_token`) to hand it
over.  This module scans the text character by character and drives the
very same parse table and reduction callbacks (`dsl._PARSER`'s) in one C
loop, so the IR is built by the same `Lowering` code as before.

It decides nothing a user could see.  It only runs a whole file from its
start; at the first thing that is not a clean parse -- a character no token
starts with, a string left open, a token the parser's state does not accept
-- it returns False, and `dsl._run` parses the text again, from the start,
with lark's loop and the Python lexer, which report and recover exactly as
they always did.  What the scanner implements is the grammar's terminals
as they are written today; `dsl.py` checks the grammar's patterns against
`PATTERNS` at import and keeps this module off if they ever differ.
`tests/test_dsl_fast.py` holds both paths to identical IR, diagnostics and
comments.
"""

# The terminal patterns the scanner below implements, as lark renders them.
PATTERNS = {
    "WORD": "[A-Za-z0-9_.\\-]+",
    "STRING": '"[^"\\\\\n]*+(?:\\\\.[^"\\\\\n]*+)*+"',
    "COMMENT": "#[^\n]*",
    "WS": "[ \t\x0c\r\n]+",
}


cdef inline bint is_word(Py_UCS4 c) noexcept:
    return (c >= u'a' and c <= u'z') or (c >= u'A' and c <= u'Z') or (c >= u'0' and c <= u'9') \
        or c == u'_' or c == u'.' or c == u'-'


cdef inline bint is_inline_space(Py_UCS4 c) noexcept:
    return c == u' ' or c == u'\t' or c == u'\x0c' or c == u'\r'


def parse(str text, list states, dict reductions, dict callbacks, int start_state, int end_state,
          dict keywords, dict punct, object token_type, object shift, list comments):
    """Parse `text` whole; True when it parsed cleanly, False to hand it back.

    `states[s]` is row `s` of the parse table (terminal or rule name -> (action,
    argument)); `reductions[rule]` is (length of its expansion, its callback,
    the name it reduces to); `callbacks` holds lark's callbacks by terminal
    name (a terminal with one is shifted as its callback's value); `keywords`
    maps a word to its keyword terminal, taken only where the current state
    accepts it; `punct` maps each one-character terminal to its name.
    Comment tokens are appended to `comments`."""
    cdef Py_ssize_t n = len(text), pos = 0, start, line_start = 0
    cdef Py_ssize_t line = 1, size
    cdef Py_UCS4 c
    cdef list state_stack = [start_state]
    cdef list value_stack = []
    cdef dict row
    cdef object kind, value, tok, kw, action, arg, step
    cdef int state
    cdef bint at_end = False
    while True:
        # ---- the next token (or the end of the text) ----
        while pos < n:
            c = text[pos]
            if c == u'\n':
                pos += 1
                line += 1
                line_start = pos
            elif is_inline_space(c):
                pos += 1
            else:
                break
        if pos >= n:
            at_end = True
            kind = "$END"
            tok = None
        else:
            start = pos
            c = text[pos]
            if is_word(c):
                pos += 1
                while pos < n and is_word(text[pos]):
                    pos += 1
                kind = "WORD"
            elif c == u'"':
                pos += 1
                while True:
                    if pos >= n:
                        return False              # a string left open
                    c = text[pos]
                    if c == u'"':
                        pos += 1
                        break
                    if c == u'\n':
                        return False
                    if c == u'\\':
                        if pos + 1 >= n or text[pos + 1] == u'\n':
                            return False
                        pos += 2
                    else:
                        pos += 1
                kind = "STRING"
            elif c == u'#':
                pos += 1
                while pos < n and text[pos] != u'\n':
                    pos += 1
                comments.append(token_type("COMMENT", text[start:pos], start, line, start - line_start + 1,
                                           line, pos - line_start + 1, pos))
                continue
            else:
                kind = punct.get(c)
                if kind is None:
                    return False                  # a character no token starts with
                pos += 1
            value = text[start:pos]
            state = state_stack[-1]
            if kind == "WORD":
                kw = keywords.get(value)
                if kw is not None and kw in <dict>states[state]:
                    kind = kw
            tok = token_type(kind, value, start, line, start - line_start + 1, line, pos - line_start + 1, pos)
        # ---- feed it: reduce as far as it takes, then shift it (or accept) ----
        while True:
            state = state_stack[-1]
            row = <dict>states[state]
            step = row.get(kind)
            if step is None:
                return False                      # a syntax error: the reference path reports it
            action, arg = <tuple>step
            if action is shift:
                if at_end:
                    return False
                state_stack.append(arg)
                f = callbacks.get(kind)
                value_stack.append(tok if f is None else f(tok))
                break
            size, f, name = <tuple>reductions[arg]
            if size:
                s = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                s = []
            value = f(s)
            action, arg = <tuple>(<dict>states[state_stack[-1]])[name]
            state_stack.append(arg)
            value_stack.append(value)
            if at_end and arg == end_state:
                return True
