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
import importlib.resources
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from intentc.compact import compiled_module
from intentc.diagnostics import Diagnostic, Span, error
from intentc.frontend import dsl_errors, lark_glue
from intentc.frontend.dsl_lower import Lowering
from intentc.frontend.lark_glue import TextSlice
from intentc.frontend.sources import SourceFile
from intentc.ir import Dataset, Intent, Program, Tenant


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

_LOWER = Lowering()
_PARSER = lark_glue.build(grammar_text(), _LOWER)
_LOCK = threading.Lock()   # `_LOWER` holds the state of the parse in progress


def _compiled() -> Callable[[str], bool] | None:
    """The compiled common case of a whole file's parse (`_dslfast.parse`: lexer and
    LALR loop in C over this parser's own table and callbacks), or None when it
    is not built, turned off (``INTENTC_PURE_DSL=1``, for measuring), or the
    grammar's terminals are no longer the ones its scanner implements."""
    fast = compiled_module("intentc.frontend._dslfast", "INTENTC_PURE_DSL")
    return None if fast is None else _PARSER.compiled(fast)


_FAST = _compiled()


def _hint_index() -> dict[dsl_errors.HintKey, str]:
    """Where each hinted example fails → its hint (for each key, the first example wins)."""
    index: dict[dsl_errors.HintKey, str] = {}
    for ex in dsl_errors.EXAMPLES:
        if ex.hint is None:
            continue
        _LOWER.begin("<example>")
        try:
            _PARSER.parse(ex.text)
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
    for m in _PARSER.sync_scanner.finditer(text, from_, limit):
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
        if isinstance(item, lark_glue.Token):
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
    values = lark_glue.value_stack(ps)
    braces = _open_braces(values)
    if not braces:
        return False
    states = lark_glue.table_states(ps)
    stack = lark_glue.state_stack(ps)
    # Where to cut, innermost block first: after its clauses already complete, or just after its `{`.
    keep: list[int] = []
    for b in reversed(braces):
        if len(values) > b + 1 and not isinstance(values[b + 1], lark_glue.Token):
            keep.append(b + 2)
        keep.append(b + 1)
    inner = [n for n in keep if n > braces[-1]]

    def fit(kind: str, cuts: list[int]) -> int | None:
        return next((n for n in cuts if dsl_errors.step(states, stack[:n + 1], kind) is not None), None)

    def opens(word: str) -> bool:
        kw = _PARSER.keywords.get(word)
        return kw is not None and fit(kw, keep) is not None

    while True:
        sync = _sync_point(text, at, line, top, opens)
        if sync is None:
            return False
        if sync.kind == "RBRACE":
            fits = fit("RBRACE", inner)
        else:
            kw = _PARSER.keywords.get(sync.value)
            fits = fit(kw, keep) if kw is not None else None
            if fits is None:
                fits = fit("WORD", keep)
        if fits is not None or sync.pos > at:
            break
        at, line = sync.pos + 1, sync.line          # the error's own token, still wrong there
    n = keep[0] if fits is None else fits           # no fit: its own error, reported next
    del stack[n + 1:]
    del values[n:]
    lark_glue.restart_lexer(ip, sync.pos, sync.line, sync.line_start)
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
        _PARSER.parse(text)
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
            _PARSER.parse(TextSlice(text, base, len(text)))
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
