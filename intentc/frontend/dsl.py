"""The DSL surface: ``*.intent`` text → IR, with a span on every node.

Why it is built this way:

* One lark LALR parser, built once at import, with the lowering
  `Lowering` transformer inlined (``transformer=``): the IR is built while the
  parser reduces, and no parse tree is ever materialised.  lark refuses
  ``@v_args(meta=True)`` for inlined transformers, so spans come from the
  tokens themselves (``keep_all_tokens``): a node spans its first to its
  last token, which is exact and cheaper than lark's position propagation.
* A small lexer of our own (lark's custom-lexer interface) scans with one
  regex built from the grammar's terminals and turns a WORD into a keyword
  only when the parser, in its current state, accepts that keyword.  So a
  keyword is only ever a whole word (``weightx`` is reported as an unknown
  clause, not as ``weight`` followed by garbage), ``tenant`` is a fine value
  wherever the parser does not expect the keyword, and lexing costs a third
  of what lark's contextual lexer costs.
* Errors never stop the file: after a syntax error inside a block the
  parser goes on at the block's next clause (lark's interactive parser,
  repaired as an ``on_error`` hook would: `_recover`), and after one
  between blocks it salvages the declarations already complete and restarts
  at the next line that opens a ``tenant``/``dataset``/``intent`` block, so
  one run reports every broken clause.  A block with a syntax error yields
  no IR.  Semantic-looking checks that need no other file (a clause given
  twice, a required clause missing, a number that is not one) are made here,
  where the positions of both occurrences are known.
"""

from __future__ import annotations

import bisect
import contextlib
import importlib.resources
import operator
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import lark
import lark_cython
from lark_cython import lark_cython as _cy
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.grammar import Rule
from lark.lexer import Lexer
from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders, ExpandSingleChild
from lark.parsers.lalr_analysis import Reduce, Shift
from lark.utils import TextSlice

from intentc.cachetrust import make_private_folder, open_trusted
from intentc.compact import compiled_module
from intentc.diagnostics import Diagnostic, Span, error
from intentc.frontend import dsl_errors
from intentc.frontend.dsl_lower import Lowering
from intentc.ir import Dataset, Intent, Program, Tenant
from intentc.sources import SourceFile


def grammar_text() -> str:
    """The grammar shipped in the package, or the checkout's copy when running uninstalled."""
    try:
        return (importlib.resources.files("intentc.grammar") / "intent.lark").read_text(encoding="utf-8")
    except (ImportError, OSError, TypeError):   # not installed: running from a checkout
        path = Path(__file__).resolve().parents[2] / "grammar" / "intent.lark"
        return path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Comment:
    """A ``#`` comment kept for `intentc fmt`; `trailing` when code precedes it on its line."""

    line: int
    column: int
    text: str
    trailing: bool


@dataclass(frozen=True)
class ParseResult:
    program: Program
    diagnostics: tuple[Diagnostic, ...]
    comments: tuple[Comment, ...]


# (key, value, value span, keyword token): what a clause or item reduces to.

# A line that opens a top-level block: where parsing restarts after an error.
_BOUNDARY = re.compile(r"^[ \t]*((?:tenant|dataset|intent)[ \t]+[^\s{}#,]+[ \t]*(?:\{|#|$))", re.M)

class _LexState(_cy.LexerState):  # type: ignore[misc]  # lark-cython checks for its own class
    """Where lexing of one parse stands: tokens lexed ahead (`ahead`, last
    first), the scan's position after them, and where the text stops
    being lexable (`stop`: end of text or the first character no token
    starts with), reported only when the parser asks that far."""

    __slots__ = ("ahead", "line", "line_start", "pos", "stop")

    def __init__(self, text: str, line_ctr: Any) -> None:
        super().__init__(text, line_ctr)
        self.pos, self.line, self.line_start = line_ctr.char_pos, line_ctr.line, line_ctr.line_start_pos
        self.ahead: list[Any] = []
        self.stop: tuple[int, int, int] | None = None


class _Lexer(_cy.Lexer, Lexer):
    """One master regex over the text; a WORD becomes a keyword only when the
    parser, in its current state, accepts that keyword.

    This is what lark's contextual lexer does, minus its per-state lexers
    and the separate match per ignored token, which made lexing half of the
    parse time.  Patterns come from the grammar's own terminals.

    It speaks lark-cython's lexer interface (`next_token` per token,
    `lark_cython.Token`s, `EOFError` at the end), so the compiled LALR loop
    pulls tokens without a generator in between.  The text is lexed ahead,
    `BATCH` tokens at a time, in one loop over a regex scanner per line (WORD,
    STRING and COMMENT never span a line break, so a token's line and
    column need no counting of line breaks); `next_token` only hands the
    next token over, turning a WORD into a keyword where the parser's
    state accepts it, the one decision that needs the parser.  Batches,
    not the whole file: after a syntax error the parse restarts at the
    next block, and what was lexed past the error is lexed again (a batch
    about the size of one intent keeps that re-lexing small without paying
    a call per token)."""

    __future_interface__ = 2
    BATCH = 64

    def __init__(self, conf: Any) -> None:
        terms = {t.name: t for t in conf.terminals}
        self.keywords: dict[str, str] = {}
        self.punct: dict[str, str] = {}
        for t in conf.terminals:
            if t.pattern.type == "str":
                (self.keywords if t.pattern.value.isidentifier() else self.punct)[t.pattern.value] = t.name
        # Whitespace within a line is the optional prefix of each token's
        # match: one match per token.  Each terminal is a group of its own,
        # so the match's group number names its type.
        ws = terms["WS"].pattern.to_regexp()
        if not (ws.startswith("[") and ws.endswith("]+") and "\n" in ws):
            raise ValueError(f"the lexer expects WS to be one character class with a line break, not {ws!r}")
        inline_ws = ws.replace("\n", "")
        alternatives = [f"(?P<COMMENT>{terms['COMMENT'].pattern.to_regexp()})",
                        f"(?P<WORD>{terms['WORD'].pattern.to_regexp()})",
                        f"(?P<STRING>{terms['STRING'].pattern.to_regexp()})"]
        alternatives += [f"(?P<{name}>{re.escape(p)})" for p, name in sorted(self.punct.items())]
        self.scanner = re.compile(f"(?:{inline_ws})?(?:" + "|".join(alternatives) + ")")
        if self.scanner.groups != len(alternatives):
            raise ValueError("a terminal's pattern has a capturing group of its own")
        self.kinds: tuple[str, ...] = ("",) + tuple(sorted(self.scanner.groupindex, key=self.scanner.groupindex.__getitem__))
        self.skip_inline_ws = re.compile(inline_ws).match
        # What error recovery looks for (`_sync_point`): braces, and a word opening a
        # line, with the ':' after it if there is one; strings and comments hide braces.
        self.sync_scanner = re.compile(
            f"(?P<STRING>{terms['STRING'].pattern.to_regexp()})|(?P<COMMENT>{terms['COMMENT'].pattern.to_regexp()})"
            f"|(?P<LBRACE>\\{{)|(?P<RBRACE>\\}})"
            f"|\\n(?:{inline_ws})?(?P<LINE_WORD>{terms['WORD'].pattern.to_regexp()})(?P<COLON>(?:{inline_ws})?:)?")
        # (every alternative starts with one of five characters: re skips to them in C)

    def make_lexer_state(self, text: Any) -> Any:
        """A state at the start of `text` (a str, or a `TextSlice` when parsing
        restarts after an error: positions stay absolute)."""
        sl = TextSlice.cast_from(text)
        ctr = _cy.LineCounter("\n")
        if sl.start:
            ctr.char_pos = sl.start
            ctr.line = sl.text.count("\n", 0, sl.start) + 1
            ctr.line_start_pos = sl.text.rfind("\n", 0, sl.start) + 1
        return _LexState(sl.text, ctr)

    def _lex_ahead(self, st: _LexState) -> None:
        """Lex the next `BATCH` tokens (fewer at the end) into `st.ahead`, last token first."""
        text, pos, line, line_start = st.text, st.pos, st.line, st.line_start
        end, batch = len(text), self.BATCH
        kinds, token, find = self.kinds, _cy.Token, text.find
        scanner = self.scanner.scanner  # type: ignore[attr-defined]  # re.Pattern.scanner: not in typeshed
        out: list[Any] = []
        while True:
            eol = find("\n", pos)
            if eol < 0:
                eol = end
            # each match starts where the last one ended; the first place no token
            # starts ends the loop (in C: no check per token)
            for m in iter(scanner(text, pos, eol).match, None):
                i: int = m.lastindex  # type: ignore[assignment]  # every alternative is a group
                start, pos = m.span(i)
                col = start - line_start + 1
                out.append(token(kinds[i], text[start:pos], start, line, col, line, col + pos - start, pos))
                if len(out) == batch:
                    break
            if len(out) == batch:              # the rest of this line next time
                break
            if pos != eol:
                ws = self.skip_inline_ws(text, pos, eol)
                if ws is not None:
                    pos = ws.end()
                if pos != eol:                  # a character no token starts with
                    st.stop = (pos, line, line_start)
                    break
            if eol == end:
                st.stop = (end, line, line_start)
                break
            pos = line_start = eol + 1
            line += 1
        st.pos, st.line, st.line_start = pos, line, line_start
        out.reverse()
        st.ahead = out

    def next_token(self, lexer_state: Any, parser_state: Any) -> Any:
        ahead: list[Any] = lexer_state.ahead
        while True:
            if not ahead:
                stop = lexer_state.stop
                if stop is not None:
                    pos, line, line_start = stop
                    text = lexer_state.text
                    if pos < len(text):
                        raise UnexpectedCharacters(text, pos, line, pos - line_start + 1, state=parser_state)
                    raise EOFError(self)
                self._lex_ahead(lexer_state)
                ahead = lexer_state.ahead
                continue
            tok = ahead.pop()
            kind = tok.type
            if kind == "WORD":
                kw = self.keywords.get(tok.value)
                if kw is not None and kw in _STATES[parser_state.position]:
                    tok.type = kw
            elif kind == "COMMENT":
                _LOWER.comments.append(tok)
                continue
            return tok

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Any]:
        """lark's generator interface (the interactive parser's `iter_parse`)."""
        try:
            while True:
                yield self.next_token(lexer_state, parser_state)
        except EOFError:
            return


def _cache_file() -> str | bool:
    """Where lark keeps the analysed grammar between runs (analysing it is
    start-up every process would pay).  A directory of the user's own rather than lark's default in the
    shared temp directory, since the cache is a pickle; lark checks the grammar's
    digest on load, so a stale file is rebuilt, and an unwritable one is skipped."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(root, "intentc")
    try:
        make_private_folder(folder)
    except OSError:
        return False
    path = os.path.join(folder, f"grammar-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache")
    if os.path.lexists(path):
        fd = open_trusted(path)        # lark unpickles it: only a file this user alone wrote
        if fd is None:
            return False
        os.close(fd)
    return path


def _made_private(path: str | bool, existed: bool) -> None:
    """lark creates its cache file with the process's umask (0664 under umask 002,
    which `cachetrust` refuses next time): make the file it just wrote private."""
    if isinstance(path, str) and not existed:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)


_LOWER = Lowering()
_GRAMMAR_CACHE = _cache_file()
_GRAMMAR_CACHED = isinstance(_GRAMMAR_CACHE, str) and os.path.lexists(_GRAMMAR_CACHE)
_PARSER = Lark(grammar_text(), parser="lalr", lexer=_Lexer, transformer=_LOWER,
               keep_all_tokens=True, maybe_placeholders=False, cache=_GRAMMAR_CACHE,
               _plugins=lark_cython.plugins)
_made_private(_GRAMMAR_CACHE, _GRAMMAR_CACHED)
_STATES: dict[int, dict[str, Any]] = _PARSER.parser.parser._parse_table.states


def _plain_lookups(states: dict[int, dict[str, Any]], callbacks: dict[Any, Any]) -> None:
    """Make the LALR loop's two dictionary lookups per reduction plain C lookups.

    A grammar loaded from lark's cache has its rules twice — in the parse table
    and as the keys of the callbacks — and each `callbacks[rule]` fell back to
    lark's Python `Rule.__eq__`; each goto `states[s][rule.origin.name]` looked
    up a lark `Token` whose Python `__eq__` ran against the table's `str` keys.
    Re-keying the callbacks by the table's own rule objects and making the
    names plain `str` removes some 60 Python calls per file; nothing else changes."""
    rules = {id(arg): arg for row in states.values() for action, arg in row.values() if action is Reduce}
    by_value = [(rule, callbacks[rule]) for rule in rules.values()]
    callbacks.clear()
    for rule, callback in by_value:
        rule.__class__ = _TableRule
        rule.origin.name = str(rule.origin.name)
        callbacks[rule] = callback


class _TableRule(Rule):
    """A rule of the parse table, equal only to itself.

    lark-cython's loop asserts ``arg != end_state`` on every reduction, which
    compared a `Rule` with an int through lark's Python `Rule.__eq__`, and
    hashed the rule through lark's Python `__hash__` to find its callback:
    two Python calls per reduction, some 130 per file.  The table holds one
    object per rule and the callbacks are keyed by those very objects, so
    identity is all these comparisons need, and it is done in C."""

    __slots__ = ()
    __eq__ = object.__eq__
    __hash__ = object.__hash__


class _Run:
    """What a repetition (lark's internal ``__x_star_n`` rules) reduces to:
    its items, which the enclosing rule inlines through `.children`."""

    __slots__ = ("children",)

    def __init__(self, children: list[Any]) -> None:
        self.children = children


def _run_callback(expansion: list[Any]) -> Any:
    """The reduction of one alternative of a repetition, without lark's
    child filter and `Tree`: a repetition of N items was N filter calls
    and N trees, all thrown away by the enclosing rule.  Same items, same order."""
    inline = [not sym.is_term and sym.name.startswith("_") for sym in expansion]
    if not any(inline):
        return _Run                       # the parser hands over a fresh list
    if inline[0] and not any(inline[1:]):
        def grow(c: list[Any]) -> _Run:   # left recursion: `__run item ...`
            run: _Run = c[0]
            run.children += c[1:]
            return run
        return grow

    def flatten(c: list[Any]) -> _Run:
        items: list[Any] = []
        for child, expand in zip(c, inline):
            if expand:
                items += child.children
            else:
                items.append(child)
        return _Run(items)
    return flatten


def _plain_repetitions(callbacks: dict[Any, Any]) -> None:
    for rule in callbacks:
        if rule.origin.name.startswith("__"):
            callbacks[rule] = _run_callback(rule.expansion)


def _splice(builder: Any, at: int) -> Any:
    def call(c: list[Any]) -> Any:
        c[at:at + 1] = c[at].children     # the parser hands over a fresh list
        return builder(c)
    return call


def _plain_wrappers(callbacks: dict[Any, Any]) -> None:
    """lark's Python wrappers around the lowering callbacks, made plain.

    ``?value: WORD | STRING`` reduces through lark's `ExpandSingleChild`
    (a Python call returning its one child, many per intent): an
    `itemgetter(0)` does the same in C.  A rule holding a repetition
    reduces through lark's `ChildFilterLALR_NoPlaceholders`, a Python loop
    over every child to inline the repetition's items: when it keeps every
    child and inlines one, splicing that one's items in place is the same
    list.  Other wrappers are left as they are."""
    for rule, callback in callbacks.items():
        if type(callback) is ExpandSingleChild and len(rule.expansion) == 1:
            callbacks[rule] = operator.itemgetter(0)
        elif type(callback) is ChildFilterLALR_NoPlaceholders:
            include = callback.to_include
            expand = [i for i, inline in include if inline]
            if [i for i, _ in include] == list(range(len(rule.expansion))) and len(expand) == 1:
                callbacks[rule] = _splice(callback.node_builder, expand[0])


def _parse(text: str | TextSlice[str]) -> None:
    """`_PARSER.parse(text)` without lark's Python front-end layers in between
    (`Lark.parse`, `ParsingFrontend.parse`, its start and plugin lookups): the
    same lexer thread handed to the same lark-cython parser."""
    _LALR.parse(_cy.LexerThread.from_text(_LEXER, text), _START)


_LALR: Any = _PARSER.parser.parser
_LEXER: Any = _PARSER.parser.lexer
(_START,) = _PARSER.parser.parser_conf.start
_plain_lookups(_STATES, _PARSER.parser.parser_conf.callbacks)
_plain_repetitions(_PARSER.parser.parser_conf.callbacks)
_plain_wrappers(_PARSER.parser.parser_conf.callbacks)
_LOCK = threading.Lock()   # `_LOWER` holds the state of the parse in progress


def _compiled() -> Callable[[str], bool] | None:
    """The compiled common case of a whole file's parse (`_dslfast.parse`: lexer and
    LALR loop in C over this parser's own table and callbacks), or None when it
    is not built, turned off (``INTENTC_PURE_DSL=1``, for measuring), or the
    grammar's terminals are no longer the ones its scanner implements."""
    fast = compiled_module("intentc.frontend._dslfast", "INTENTC_PURE_DSL")
    if fast is None:
        return None
    patterns = {t.name: t.pattern.to_regexp() for t in _PARSER.terminals if t.pattern.type == "re"}
    if patterns != fast.PATTERNS or any(len(p) != 1 for p in _LEXER.punct):
        return None
    table = _PARSER.parser.parser._parse_table
    states = [_STATES[s] for s in range(len(_STATES))]
    callbacks = _PARSER.parser.parser_conf.callbacks
    reductions = {arg: (len(arg.expansion), callbacks[arg], arg.origin.name)
                  for row in states for action, arg in row.values() if action is Reduce}
    terminal_callbacks = {name: f for name, f in callbacks.items() if isinstance(name, str)}
    start, end = table.start_states[_START], table.end_states[_START]
    keywords, punct, token = _LEXER.keywords, _LEXER.punct, _cy.Token

    def parse(text: str) -> bool:
        return bool(fast.parse(text, states, reductions, terminal_callbacks, start, end,
                               keywords, punct, token, Shift, _LOWER.comments))
    return parse


_FAST = _compiled()


def _hint_index() -> dict[dsl_errors.HintKey, str]:
    """Where each hinted example fails → its hint (for each key, the first example wins)."""
    index: dict[dsl_errors.HintKey, str] = {}
    for ex in dsl_errors.EXAMPLES:
        if ex.hint is None:
            continue
        _LOWER.begin("<example>")
        try:
            _parse(ex.text)
        except UnexpectedInput as exc:
            for key in dsl_errors.hint_keys(exc) or ():
                index.setdefault(key, ex.hint)
    _LOWER.begin("")
    return index


with _LOCK:
    _HINTS = _hint_index()


def _offset(exc: UnexpectedInput) -> int | None:
    """Where in the text an error happened; None at the end of the input."""
    if isinstance(exc, UnexpectedToken):
        return None if exc.token.type == "$END" else exc.token.start_pos
    if isinstance(exc, UnexpectedCharacters):
        return exc.pos_in_stream
    return None


def _salvage(exc: UnexpectedInput) -> None:
    """Finish a declaration whose closing token was followed by an error: at
    the top level, ending the input reduces it (and runs its callback)."""
    ip = getattr(exc, "interactive_parser", None)
    if ip is None:
        return
    try:
        ip.feed_eof()
    except UnexpectedInput:
        pass


@dataclass(frozen=True)
class _Sync:
    """Where parsing resumes inside a block: the token at `pos` (`line`, `line_start`
    for the lexer), of type `kind` (RBRACE, or a WORD that opens a clause)."""

    pos: int
    line: int
    line_start: int
    kind: str
    value: str


def _sync_point(text: str, at: int, line: int, top: list[int], opens: Callable[[str], bool]) -> _Sync | None:
    """The first place at or after `at` (on line `line`) where the innermost
    open block can go on: a ``}`` that closes it, or a word at the start of a
    line followed by ``:`` (a clause, a setting or a label: ``triger: after
    x``) or that `opens` a clause there (``action batch``: the colon is what
    is missing), neither inside a ``{ }`` opened after `at`.  None when a
    line opening a top-level block (`top`, sorted) or the end of the text
    comes first: the block is not closed before it, and parsing restarts
    at that line.

    One regex search over what matters (braces, words at line starts,
    strings and comments, which hide braces), in C: skipping a megabyte of
    junk after an error costs milliseconds, not seconds."""
    line_start = text.rfind("\n", 0, at) + 1
    # from the line break before `at` when only blanks are between: a word at `at` may open its line
    from_ = line_start - 1 if line_start and not text[line_start:at].strip() else at
    nxt = bisect.bisect_left(top, at)
    limit = top[nxt] if nxt < len(top) else len(text)
    depth = 0
    seen: dict[str, bool] = {}
    for m in _LEXER.sync_scanner.finditer(text, from_, limit):
        kind = m.lastgroup
        if kind == "COLON":                             # the last group closed: a word with its ':'
            kind = "LINE_WORD"
        if kind == "LBRACE":
            depth += 1
            continue
        if kind == "RBRACE":
            depth -= 1
            if depth >= 0:
                continue
            where = m.start()
        elif kind == "LINE_WORD":
            word = m.group("LINE_WORD")
            if depth:
                continue
            if not m.group("COLON"):
                if word not in seen:
                    seen[word] = opens(word)
                if not seen[word]:
                    continue
            where = m.start("LINE_WORD")
        else:                                           # a string or a comment
            continue
        line += text.count("\n", at, where)
        return _Sync(where, line, text.rfind("\n", 0, where) + 1, "RBRACE" if kind == "RBRACE" else "WORD",
                     "}" if kind == "RBRACE" else word)
    return None


def _open_braces(values: list[Any]) -> list[int]:
    """Indexes in the value stack of the `{` not yet closed, outermost first."""
    opened: list[int] = []
    for i, item in enumerate(values):
        if isinstance(item, _cy.Token):
            if item.type == "LBRACE":
                opened.append(i)
            elif item.type == "RBRACE" and opened:
                opened.pop()
    return opened


def _recover(exc: UnexpectedInput, text: str, at: int, top: list[int]) -> bool:
    """After a syntax error inside a block, make the parser go on at the block's
    next clause (or its closing `}`), so one run reports every broken clause.

    lark's error recovery as its ``on_error`` hook does it: the exception's
    `InteractiveParser` is repaired in place and `resume_parse` goes on.  The
    state stack is cut back to an open ``{``, after the clauses already
    complete, so no partial clause is left to cascade into more errors: the
    innermost block where the clause at the sync point (`_sync_point`) can
    come (an outer one when a stray ``{`` opened the inner), the innermost
    for its closing ``}`` or a clause no block has (its own error, reported
    next).  The lexer restarts at the sync point.  The declaration is marked
    broken: it yields no IR (`Lowering.broken`).  False when there is no open
    block or no sync point before the next top-level block: the caller
    restarts there, as before."""
    ip = getattr(exc, "interactive_parser", None)
    if ip is None:
        return False
    line: int = exc.token.line if isinstance(exc, UnexpectedToken) else exc.line
    ps = ip.parser_state
    values: list[Any] = ps.value_stack
    braces = _open_braces(values)
    if not braces:
        return False
    states = ps.parse_conf.parse_table.states
    stack: list[int] = ps.state_stack
    # Where to cut, innermost block first: after its clauses already complete, or just after its `{`.
    keep: list[int] = []
    for b in reversed(braces):
        if len(values) > b + 1 and not isinstance(values[b + 1], _cy.Token):
            keep.append(b + 2)
        keep.append(b + 1)
    inner = [n for n in keep if n > braces[-1]]

    def fit(kind: str, cuts: list[int]) -> int | None:
        return next((n for n in cuts if dsl_errors.step(states, stack[:n + 1], kind) is not None), None)

    def opens(word: str) -> bool:
        kw = _LEXER.keywords.get(word)
        return kw is not None and fit(kw, keep) is not None

    while True:
        sync = _sync_point(text, at, line, top, opens)
        if sync is None:
            return False
        if sync.kind == "RBRACE":
            fits = fit("RBRACE", inner)
        else:
            kw = _LEXER.keywords.get(sync.value)
            fits = fit(kw, keep) if kw is not None else None
            if fits is None:
                fits = fit("WORD", keep)
        if fits is not None or sync.pos > at:
            break
        at, line = sync.pos + 1, sync.line          # the error's own token, still wrong there
    n = keep[0] if fits is None else fits           # no fit: its own error, reported next
    del stack[n + 1:]
    del values[n:]
    lex: _LexState = ip.lexer_thread.state
    lex.pos, lex.line, lex.line_start = sync.pos, sync.line, sync.line_start
    lex.ahead, lex.stop = [], None
    _LOWER.broken = True
    return True


# Each restart after a syntax error costs a parse: a file of 300,000 broken
# blocks would take minutes and print as many errors.  Compilers stop too.
MAX_SYNTAX_ERRORS = 100


def _run(text: str) -> None:
    """Parse `text`; on each syntax error, report, salvage, restart at the next block.

    A restart parses a `TextSlice` of the same text, so every position stays
    absolute and nothing is copied.  A file the compiled loop parses cleanly
    is done there; anything else is parsed again from the start by lark's
    loop, which reports and recovers."""
    if _FAST is not None:
        if _FAST(text):
            return
        _LOWER.begin(_LOWER.path)       # what the compiled loop built so far is dropped
    try:
        _parse(text)
        return
    except UnexpectedInput as first:
        exc: UnexpectedInput = first
    boundaries: list[int] | None = None
    base = 0
    for _ in range(MAX_SYNTAX_ERRORS):
        _LOWER.diags.append(dsl_errors.syntax_diagnostic(exc, text, _LOWER.path, _HINTS))
        at = _offset(exc)
        if at is not None:
            if boundaries is None:
                boundaries = [m.start(1) for m in _BOUNDARY.finditer(text)]
            if _recover(exc, text, at, boundaries):
                try:
                    exc.interactive_parser.resume_parse()
                    return
                except UnexpectedInput as again:
                    exc = again
                    continue
        _salvage(exc)
        _LOWER.broken = False
        if at is None or boundaries is None:
            return
        i = bisect.bisect_left(boundaries, max(at, base + 1))
        if i == len(boundaries):
            return
        base = boundaries[i]
        try:
            _parse(TextSlice(text, base, len(text)))
            return
        except UnexpectedInput as again:
            exc = again
    where = dsl_errors.syntax_diagnostic(exc, text, _LOWER.path, _HINTS).span
    _LOWER.diags.append(error("E0008", f"more than {MAX_SYNTAX_ERRORS} syntax errors in this file; "
                                       f"the rest of it is not read", Span.point(where.file, where.line, where.column),
                              hint="fix the errors above first"))


def _comments(tokens: list[Token], text: str) -> tuple[Comment, ...]:
    """The comments, each `trailing` when code precedes it on its line (the
    text from the line's start, `column - 1` characters back, to the comment)."""
    return tuple(Comment(t.line, t.column, t.value.rstrip(),  # type: ignore[arg-type]
                         bool(text[t.start_pos - t.column + 1:t.start_pos].strip()))  # type: ignore[operator]
                 for t in tokens)


def parse_full(source: SourceFile) -> ParseResult:
    """Parse one file: the IR of every declaration that parsed, all diagnostics, the comments."""
    with _LOCK:
        _LOWER.begin(source.path)
        try:
            _run(source.text)
        except RecursionError:
            _LOWER.diags.append(error("E0101", "input nested too deeply to parse",
                                      Span.point(source.path, 1, 1)))
        decls, diags, comment_tokens = _LOWER.decls, _LOWER.diags, _LOWER.comments
        _LOWER.begin("")
    diags.sort(key=lambda d: (d.span.line, d.span.column))
    if not decls and not diags:
        diags.append(error("E0004", "file declares nothing", Span(source.path, 1, 1, 1, 2),
                           hint="a .intent file holds tenant, dataset and intent blocks"))
    program = Program(tuple(d for d in decls if isinstance(d, Tenant)),
                      tuple(d for d in decls if isinstance(d, Dataset)),
                      tuple(d for d in decls if isinstance(d, Intent)))
    return ParseResult(program, tuple(diags), _comments(comment_tokens, source.text))


def parse(source: SourceFile) -> tuple[Program, list[Diagnostic]]:
    """The surface entry point (see `intentc.frontend`)."""
    result = parse_full(source)
    return result.program, list(result.diagnostics)
