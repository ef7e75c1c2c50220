"""The one module that knows lark's and lark-cython's internals.

The DSL's parser (`intentc.frontend.dsl`) is lark's LALR table driven by
lark-cython's compiled loop, fed by a lexer of our own and with lark's Python
wrappers around the reductions taken out (see the docstrings below for why each
is worth it).  All of that depends on how those two packages are built inside,
which they do not promise to keep, so it is all here, behind a small surface:

* `build(grammar, lowering)` → a `Parser` (`parse`, `compiled`, `keywords`,
  `sync_scanner`, the table), the only way the DSL makes one;
* `Token`, the token class the lexer makes and the parse's value stack holds;
* `table_states`, `state_stack`, `value_stack`, `restart_lexer`: the parser
  state an error leaves behind, which error messages and recovery read and repair.

Everything else in intentc uses lark's public API only: the grammar, the
`Transformer` it inlines, its exceptions and their `interactive_parser`.
`TESTED` names the versions this module was checked against;
`tests/test_lark_glue.py` fails loudly on any other, and `pyproject.toml`
bounds both packages to them.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import sys
from typing import Any, Callable, Iterator

import lark
import lark_cython
from lark import Lark
from lark.exceptions import UnexpectedCharacters
from lark.grammar import Rule
from lark.lexer import Lexer
from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders, ExpandSingleChild
from lark.parsers.lalr_analysis import Reduce, Shift
from lark.utils import TextSlice
from lark_cython import lark_cython as _cy

from intentc.cachetrust import make_private_folder, open_trusted

__all__ = ["TESTED", "KeywordLexer", "LexState", "Parser", "Shift", "TextSlice", "Token", "build", "cache_file",
           "restart_lexer", "state_stack", "table_states", "value_stack"]

# The releases this module was tested with (both ends of pyproject.toml's ranges).
TESTED = {"lark": ("1.3.0", "1.3.1"), "lark-cython": ("0.0.17",)}

Token = _cy.Token


class LexState(_cy.LexerState):  # type: ignore[misc]  # lark-cython checks for its own class
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


class KeywordLexer(_cy.Lexer, Lexer):
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
    # set by `build` once lark has made the lexer: the parse table (which keywords each
    # state accepts) and the lowering (which collects the comments)
    states: dict[int, dict[str, Any]]
    lowering: Any

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
        return LexState(sl.text, ctr)

    def _lex_ahead(self, st: LexState) -> None:
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
                if kw is not None and kw in self.states[parser_state.position]:
                    tok.type = kw
            elif kind == "COMMENT":
                self.lowering.comments.append(tok)
                continue
            return tok

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Any]:
        """lark's generator interface (the interactive parser's `iter_parse`)."""
        try:
            while True:
                yield self.next_token(lexer_state, parser_state)
        except EOFError:
            return


def cache_file() -> str | bool:
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


def _parse_table(lark_parser: Lark) -> Any:
    return lark_parser.parser.parser._parse_table


class Parser:
    """One LALR parser over the grammar, with the lowering inlined: `parse`
    builds the IR as it reduces and returns nothing; a syntax error raises
    lark's `UnexpectedInput`, whose `interactive_parser` can be repaired
    (`restart_lexer`) and resumed."""

    def __init__(self, lark_parser: Lark) -> None:
        self.lark = lark_parser
        self.states: dict[int, dict[str, Any]] = _parse_table(lark_parser).states
        self.lexer: KeywordLexer = lark_parser.parser.lexer
        self._lalr: Any = lark_parser.parser.parser
        (self._start,) = lark_parser.parser.parser_conf.start
        self._callbacks: dict[Any, Any] = lark_parser.parser.parser_conf.callbacks

    @property
    def keywords(self) -> dict[str, str]:
        """Keyword text → terminal name (``intent`` → ``INTENT``)."""
        return self.lexer.keywords

    @property
    def sync_scanner(self) -> re.Pattern[str]:
        """The regex error recovery scans with (see `KeywordLexer.__init__`)."""
        return self.lexer.sync_scanner

    @property
    def loop_module(self) -> str:
        """The module of the loop that drives the table (lark-cython's compiled one)."""
        return type(self._lalr).__module__

    def parse(self, text: str | TextSlice[str]) -> None:
        """`Lark.parse(text)` without lark's Python front-end layers in between
        (`Lark.parse`, `ParsingFrontend.parse`, its start and plugin lookups): the
        same lexer thread handed to the same lark-cython parser."""
        self._lalr.parse(_cy.LexerThread.from_text(self.lexer, text), self._start)

    def compiled(self, fast: Any) -> Callable[[str], bool] | None:
        """`fast.parse` (intentc's compiled lexer and LALR loop, `_dslfast`) bound to
        this parser's own table and callbacks, or None when the grammar's terminals
        are no longer the ones its scanner implements."""
        patterns = {t.name: t.pattern.to_regexp() for t in self.lark.terminals if t.pattern.type == "re"}
        if patterns != fast.PATTERNS or any(len(p) != 1 for p in self.lexer.punct):
            return None
        table = _parse_table(self.lark)
        states = [self.states[s] for s in range(len(self.states))]
        callbacks = self._callbacks
        reductions = {arg: (len(arg.expansion), callbacks[arg], arg.origin.name)
                      for row in states for action, arg in row.values() if action is Reduce}
        terminal_callbacks = {name: f for name, f in callbacks.items() if isinstance(name, str)}
        start, end = table.start_states[self._start], table.end_states[self._start]
        keywords, punct, token = self.lexer.keywords, self.lexer.punct, _cy.Token
        lowering = self.lexer.lowering     # its `comments` list is replaced at each `begin`

        def parse(text: str) -> bool:
            return bool(fast.parse(text, states, reductions, terminal_callbacks, start, end,
                                   keywords, punct, token, Shift, lowering.comments))
        return parse


def build(grammar: str, lowering: Any) -> Parser:
    """The DSL's parser: `grammar` with `lowering` (a lark `Transformer` with a
    `comments` list) inlined, lark's analysis cached on disk (`cache_file`),
    the reductions made plain."""
    cache = cache_file()
    cached = isinstance(cache, str) and os.path.lexists(cache)
    made = Lark(grammar, parser="lalr", lexer=KeywordLexer, transformer=lowering,
                keep_all_tokens=True, maybe_placeholders=False, cache=cache,
                _plugins=lark_cython.plugins)
    _made_private(cache, cached)
    parser = Parser(made)
    parser.lexer.states, parser.lexer.lowering = parser.states, lowering
    _plain_lookups(parser.states, parser._callbacks)
    _plain_repetitions(parser._callbacks)
    _plain_wrappers(parser._callbacks)
    return parser


# -- the parser state a syntax error leaves behind ---------------------------------

def table_states(parser_state: Any) -> dict[int, dict[str, Any]]:
    """The parse table's rows (state → terminal or rule name → (action, argument))."""
    return parser_state.parse_conf.parse_table.states  # type: ignore[no-any-return]


def state_stack(parser_state: Any) -> list[int]:
    """The LALR state stack (mutable: recovery cuts it back)."""
    return parser_state.state_stack  # type: ignore[no-any-return]


def value_stack(parser_state: Any) -> list[Any]:
    """The values reduced so far, tokens and lowered nodes (mutable, as `state_stack`)."""
    return parser_state.value_stack  # type: ignore[no-any-return]


def restart_lexer(interactive_parser: Any, pos: int, line: int, line_start: int) -> None:
    """Make the interrupted parse's lexer go on from `pos`, forgetting what it lexed ahead."""
    lex: LexState = interactive_parser.lexer_thread.state
    lex.pos, lex.line, lex.line_start = pos, line, line_start
    lex.ahead, lex.stop = [], None
