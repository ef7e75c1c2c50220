"""The DSL surface: ``*.intent`` text → IR, with a span on every node.

Why it is built this way:

* One lark LALR parser, built once at import, with the lowering
  `_Lower` transformer inlined (``transformer=``): the IR is built while the
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
* Errors never stop the file: after a syntax error the parser salvages the
  declarations already complete, then restarts at the next line that opens a
  ``tenant``/``dataset``/``intent`` block, so one run reports every broken
  block.  Semantic-looking checks that need no other file (a clause given
  twice, a required clause missing, a number that is not one) are made here,
  where the positions of both occurrences are known.
"""

from __future__ import annotations

import bisect
import importlib.resources
import json
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import lark
from lark import Lark, Token, Transformer
from lark.lexer import Lexer
from lark.utils import TextSlice
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from intentc.diagnostics import Diagnostic, Related, Span, error
from intentc.frontend import dsl_errors
from intentc.ir import (Action, Batch, Constraints, Context, Dataset, FieldSpans, GpuRequest, Intent,
                        ModelSettings, Program, Ref, Tenant, Trigger)
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
_Item = tuple[str, Any, Span, Token]

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]-?[0-9]+)?")
# A line that plausibly opens a declaration: where recovery restarts.
_BOUNDARY = re.compile(r"^[ \t]*((?:tenant|dataset|intent)[ \t]+[^\s{}#,]+[ \t]*(?:\{|#|$))", re.M)

_TENANT_KEYS = {"TIER": "tier", "SLA": "tier", "WEIGHT": "weight", "QUOTA": "quota",
                "GROUP": "group", "DRIFT": "drift"}
_GPU_OPTIONS = {"X": "product", "MEMORY": "memory", "WITHIN": "within", "PREFER": "prefer"}
_ESCAPES = 'the escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX (as in JSON)'
_REQUIRED = {
    "trigger": "trigger: on push",
    "action": 'action: batch image "registry/app:1.0"',
    "context": "context: tenant team-a",
}


class _Lower(Transformer):  # type: ignore[type-arg]
    """Rule callbacks that build IR nodes; one instance, reset for every parse."""

    def __init__(self) -> None:
        super().__init__()
        self.path = ""
        self.diags: list[Diagnostic] = []
        self.decls: list[Tenant | Dataset | Intent] = []
        self.comments: list[Token] = []

    def begin(self, path: str) -> None:
        self.path, self.diags, self.decls, self.comments = path, [], [], []

    # -- helpers -----------------------------------------------------------

    def _sp(self, t: Token) -> Span:
        return Span(self.path, t.line, t.column, t.end_line, t.end_column)  # type: ignore[arg-type]

    def _cover(self, a: Span, b: Span) -> Span:
        return Span(self.path, a.line, a.column, b.end_line, b.end_column)

    def _text(self, t: Token) -> str:
        v: str = t.value
        if t.type != "STRING":
            return v
        if "\\" not in v:
            return v[1:-1]
        try:
            s: str = json.loads(v, strict=False)
            s.encode("utf-8")
        except json.JSONDecodeError as exc:
            pos = exc.pos - 1 if v[exc.pos] != "\\" and v[exc.pos - 1] == "\\" else exc.pos
            at = Span.point(self.path, t.line, t.column + pos, 2)  # type: ignore[arg-type,operator]
            self.diags.append(error("E0107", f"invalid escape '{v[pos:pos + 2]}' in a string", at,
                                    hint=_ESCAPES))
            return v[1:-1]
        except UnicodeEncodeError:
            self.diags.append(error("E0107", "a \\u escape in this string is half a surrogate pair",
                                    self._sp(t), hint=_ESCAPES))
            return v[1:-1]
        return s

    def _bad(self, t: Token, what: str, example: str) -> None:
        hint = "numbers are written without quotes" if t.type == "STRING" else f"for example {example}"
        self.diags.append(error("E0107", f"{what}, found {dsl_errors.describe_found(t)}", self._sp(t),
                                hint=hint))

    def _int(self, t: Token, what: str) -> int | None:
        if t.type == "WORD" and _INT.fullmatch(t.value):
            try:
                return int(t.value)
            except ValueError:  # more digits than Python converts
                pass
        self._bad(t, f"{what} must be an integer", "4")
        return None

    def _float(self, t: Token, what: str) -> float | None:
        if t.type == "WORD" and _FLOAT.fullmatch(t.value):
            value = float(t.value)
            if value not in (float("inf"), float("-inf")):
                return value
        self._bad(t, f"{what} must be a number", "0.95")
        return None

    def _unique(self, items: Iterable[_Item], where: str) -> dict[str, tuple[Any, Span, Token]]:
        """Items by key; a key given twice is E0105 at the second, noting the first."""
        seen: dict[str, tuple[Any, Span, Token]] = {}
        for key, value, span, kw in items:
            first = seen.get(key)
            if first is None:
                seen[key] = (value, span, kw)
                continue
            also = "" if kw.value == first[2].value else f" (as '{first[2].value}' and '{kw.value}')"
            self.diags.append(error(
                "E0105", f"'{kw.value}' is given twice in {where}{also}", self._sp(kw),
                hint="keep one of them", related=[Related(f"first '{first[2].value}' here", self._sp(first[2]))]))
        return seen

    @staticmethod
    def _take(u: dict[str, tuple[Any, Span, Token]], keys: Iterable[str], fields: dict[str, Any],
              spans: dict[str, Span], prefix: str = "") -> None:
        for key in keys:
            hit = u.get(key)
            if hit is not None and hit[0] is not None:
                fields[prefix + key] = hit[0]
                spans[prefix + key] = hit[1]

    def _refs(self, toks: list[Token]) -> tuple[Ref, ...]:
        return tuple(Ref(self._text(t), self._sp(t)) for t in toks)

    def _items_span(self, items: list[_Item]) -> Span:
        return self._cover(self._sp(items[0][3]), items[-1][2])

    # -- declarations --------------------------------------------------------

    def start(self, c: list[Any]) -> None:
        return None

    def tenant(self, c: list[Any]) -> Tenant:
        name = self._text(c[1])
        where = f"tenant '{name}'"
        u = self._unique(c[3:-1], where)
        fields: dict[str, Any] = {}
        spans = {"name": self._sp(c[1])}
        self._take(u, ("tier", "weight", "group", "drift"), fields, spans)
        if "quota" in u:
            quota = self._unique(u["quota"][0], f"the quota of {where}")
            self._take(quota, ("gpus", "cpu", "memory"), fields, spans, prefix="quota_")
        t = Tenant(name, span=self._cover(self._sp(c[0]), self._sp(c[-1])), spans=FieldSpans.of(spans),
                   **fields)
        self.decls.append(t)
        return t

    def tenant_clause(self, c: list[Any]) -> _Item:
        kw = c[0]
        key = _TENANT_KEYS[kw.type]
        if key == "quota":
            items: list[_Item] = c[2::2]
            return "quota", items, self._items_span(items), kw
        v = c[2]
        value = self._int(v, "weight") if key == "weight" else self._text(v)
        return key, value, self._sp(v), kw

    def quota_item(self, c: list[Any]) -> _Item:
        kw, v = c
        value = self._int(v, "a GPU quota") if kw.type == "GPUS" else self._text(v)
        return kw.type.lower(), value, self._sp(v), kw

    def dataset(self, c: list[Any]) -> Dataset:
        name = self._text(c[1])
        spans = {"name": self._sp(c[1])}
        fields: dict[str, Any] = {}
        if len(c) > 2:
            self._take(self._unique(c[3:-1], f"dataset '{name}'"), ("uri",), fields, spans)
        d = Dataset(name, span=self._cover(self._sp(c[0]), self._sp(c[-1])), spans=FieldSpans.of(spans),
                    **fields)
        self.decls.append(d)
        return d

    def dataset_clause(self, c: list[Any]) -> _Item:
        return "uri", self._text(c[2]), self._sp(c[2]), c[0]

    def intent(self, c: list[Any]) -> Intent | None:
        name = self._text(c[1])
        name_span = self._sp(c[1])
        u = self._unique(c[3:-1], f"intent '{name}'")
        missing = [k for k in _REQUIRED if k not in u]
        for k in missing:
            self.diags.append(error("E0106", f"intent '{name}' has no {k} clause", name_span,
                                    hint=f"add a clause such as `{_REQUIRED[k]}`"))
        if missing or any(u[k][0] is None for k in _REQUIRED):
            return None
        fields: dict[str, Any] = {}
        spans = {"name": name_span}
        self._take(u, ("trigger", "action", "context", "constraints", "consumes", "produces"), fields, spans)
        if "constraints" not in fields:     # no clause: later passes still get a place to point at
            fields["constraints"] = Constraints(span=name_span)
        i = Intent(name, span=self._cover(self._sp(c[0]), self._sp(c[-1])), spans=FieldSpans.of(spans),
                   **fields)
        self.decls.append(i)
        return i

    def intent_clause(self, c: list[Any]) -> _Item:
        kw = c[0]
        t = kw.type
        if t == "TRIGGER":
            return "trigger", c[2], c[2].span, kw
        if t == "ACTION":
            action, span = c[2]
            return "action", action, span, kw
        items: list[Any] = c[2::2]
        if t == "CONTEXT":
            return "context", self._context(items), self._items_span(items), kw
        if t == "CONSTRAINTS":
            return "constraints", self._constraints(items), self._items_span(items), kw
        span = self._cover(self._sp(items[0]), self._sp(items[-1]))
        return t.lower(), self._refs(items), span, kw

    # -- trigger and action --------------------------------------------------

    def trigger(self, c: list[Any]) -> Trigger:
        first = c[0]
        span = self._cover(self._sp(first), self._sp(c[-1]))
        if first.type == "ON":
            return Trigger(self._text(c[1]), span=span)
        if first.type == "AFTER":
            return Trigger("after", after=self._refs(c[1::2]), span=span)
        if first.type == "SCHEDULE":
            return Trigger("schedule", schedule=self._text(c[1]), span=span)
        return Trigger(self._text(first), span=span)

    def action(self, c: list[Any]) -> tuple[Action | None, Span]:
        kind = c[0]
        parts: list[Any] = c[1:]
        settings = parts.pop() if parts and isinstance(parts[-1], ModelSettings) else None
        end = settings.span if settings else (parts[-1][2] if parts else self._sp(kind))
        span = self._cover(self._sp(kind), end)
        u = self._unique(parts, "the action")
        if "image" not in u:
            self.diags.append(error("E0106", "the action has no image", self._sp(kind),
                                    hint='add the container image: image "registry/app:1.0"'))
            return None, span
        fields: dict[str, Any] = {}
        spans = {"kind": self._sp(kind)}
        self._take(u, ("image", "model", "command", "replicas", "port"), fields, spans)
        return Action(self._text(kind), settings=settings, span=span, spans=FieldSpans.of(spans),
                      **fields), span

    def action_part(self, c: list[Any]) -> _Item:
        kw, v = c
        t = kw.type
        if t == "COMMAND":
            values, span = v
            return "command", values, span, kw
        if t in ("REPLICAS", "PORT"):
            return t.lower(), self._int(v, t.lower()), self._sp(v), kw
        return t.lower(), self._text(v), self._sp(v), kw

    def string_list(self, c: list[Any]) -> tuple[tuple[str, ...], Span]:
        return tuple(self._text(t) for t in c[1:-1:2]), self._cover(self._sp(c[0]), self._sp(c[-1]))

    value_list = string_list

    def settings(self, c: list[Any]) -> ModelSettings:
        fields: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        self._take(self._unique(c[1:-1], "the settings"), ("batch", "seq_len", "kv_cache", "precision"),
                   fields, spans)
        return ModelSettings(span=self._cover(self._sp(c[0]), self._sp(c[-1])), spans=FieldSpans.of(spans),
                             **fields)

    def setting(self, c: list[Any]) -> _Item:
        kw, v = c[0], c[2]
        t = kw.type
        if t == "BATCH":
            batch, span = v
            return "batch", batch, span, kw
        if t == "SEQ_LEN":
            return "seq_len", self._int(v, "seq_len"), self._sp(v), kw
        return t.lower(), self._text(v), self._sp(v), kw

    def batch(self, c: list[Any]) -> tuple[Batch | None, Span]:
        span = self._cover(self._sp(c[0]), self._sp(c[-1]))
        if c[0].type == "AUTO":
            if len(c) == 1:
                return Batch(auto=True), span
            limit = self._int(c[3], "the auto batch maximum")
            return (Batch(auto=True, max=limit) if limit is not None else None), span
        size = self._int(c[0], "batch (a size or auto)")
        return (Batch(auto=False, size=size) if size is not None else None), span

    # -- context and constraints ---------------------------------------------

    def context_item(self, c: list[Any]) -> _Item:
        kw, v = c
        if kw.type == "TENANT":
            return "tenant", Ref(self._text(v), self._sp(v)), self._sp(v), kw
        if kw.type == "TAGS":
            values, span = v
            return "tags", values, span, kw
        return "drift", self._text(v), self._sp(v), kw

    def _context(self, items: list[_Item]) -> Context | None:
        u = self._unique(items, "the context")
        if "tenant" not in u:
            self.diags.append(error("E0106", "the context names no tenant", self._items_span(items),
                                    hint="add the owning tenant: context: tenant team-a"))
            return None
        fields: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        self._take(u, ("tenant", "tags", "drift"), fields, spans)
        return Context(span=self._items_span(items), spans=FieldSpans.of(spans), **fields)

    def constraint_item(self, c: list[Any]) -> _Item:
        kw, v = c
        t = kw.type
        if t == "GPUS":
            gpus, span = v
            return "gpus", gpus, span, kw
        if t == "TOLERANCE":
            return "tolerance", self._float(v, "tolerance"), self._sp(v), kw
        return t.lower(), self._text(v), self._sp(v), kw

    def _constraints(self, items: list[_Item]) -> Constraints:
        fields: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        self._take(self._unique(items, "the constraints"),
                   ("cpu", "memory", "gpus", "sla", "tolerance", "duration"), fields, spans)
        return Constraints(span=self._items_span(items), spans=FieldSpans.of(spans), **fields)

    def gpus(self, c: list[Any]) -> tuple[GpuRequest | None, Span]:
        count_tok = c[0]
        options: list[_Item] = c[1:]
        span = self._cover(self._sp(count_tok), options[-1][2] if options else self._sp(count_tok))
        u = self._unique(options, "the GPU request")
        count = self._int(count_tok, "the GPU count")
        if count is None:
            return None, span
        fields: dict[str, Any] = {}
        spans = {"count": self._sp(count_tok)}
        self._take(u, ("product", "memory", "within", "prefer"), fields, spans)
        return GpuRequest(count, span=span, spans=FieldSpans.of(spans), **fields), span

    def gpu_option(self, c: list[Any]) -> _Item:
        kw, v = c
        return _GPU_OPTIONS[kw.type], self._text(v), self._sp(v), kw


def _token(kind: str, value: str, pos: int, line: int, col: int, end_col: int, end_pos: int) -> Token:
    """`Token(...)` without its keyword-compatibility shim: a tenth of the lexing time."""
    tok = str.__new__(Token, value)
    tok.type, tok.value, tok.start_pos, tok.end_pos = kind, value, pos, end_pos
    tok.line, tok.column, tok.end_line, tok.end_column = line, col, line, end_col
    return tok


class _Lexer(Lexer):
    """One master regex over the text; a WORD becomes a keyword only when the
    parser, in its current state, accepts that keyword.

    This is what lark's contextual lexer does, minus its per-state lexers
    and the separate match per ignored token, which made lexing half of the
    parse time.  Patterns come from the grammar's own terminals."""

    __future_interface__ = 2

    def __init__(self, conf: Any) -> None:
        terms = {t.name: t for t in conf.terminals}
        self.keywords: dict[str, str] = {}
        punct: dict[str, str] = {}
        for t in conf.terminals:
            if t.pattern.type == "str":
                (self.keywords if t.pattern.value.isidentifier() else punct)[t.pattern.value] = t.name
        self.punct = punct
        alternatives = [f"(?P<WS>{terms['WS'].pattern.to_regexp()})",
                        f"(?P<COMMENT>{terms['COMMENT'].pattern.to_regexp()})",
                        f"(?P<WORD>{terms['WORD'].pattern.to_regexp()})",
                        f"(?P<STRING>{terms['STRING'].pattern.to_regexp()})",
                        "(?P<PUNCT>[" + "".join(re.escape(p) for p in sorted(punct)) + "])"]
        self.scan = re.compile("|".join(alternatives)).match

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        sl = lexer_state.text
        text, pos, end = sl.text, sl.start, sl.end
        line, line_start = lexer_state.line_ctr.line, lexer_state.line_ctr.line_start_pos
        states = parser_state.parse_conf.states
        keywords, punct, scan, comments = self.keywords, self.punct, self.scan, _LOWER.comments
        while pos < end:
            m = scan(text, pos, end)
            if m is None:
                raise UnexpectedCharacters(text, pos, line, pos - line_start + 1, state=parser_state)
            kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a named group
            npos = m.end()
            if kind == "WS":
                nl = text.count("\n", pos, npos)
                if nl:
                    line += nl
                    line_start = text.rfind("\n", pos, npos) + 1
                pos = npos
                continue
            value = m.group()
            col = pos - line_start + 1
            if kind == "WORD":
                kw = keywords.get(value)
                if kw is not None and kw in states[parser_state.position]:
                    kind = kw
            elif kind == "PUNCT":
                kind = punct[value]
            tok = _token(kind, value, pos, line, col, col + npos - pos, npos)
            pos = npos
            if kind == "COMMENT":
                comments.append(tok)
                continue
            yield tok


def _cache_file() -> str | bool:
    """Where lark keeps the analysed grammar between runs (saves ~120 ms per
    process).  A directory of the user's own rather than lark's default in the
    shared temp directory, since the cache is a pickle; lark checks the grammar's
    digest on load, so a stale file is rebuilt, and an unwritable one is skipped."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(root, "intentc")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return os.path.join(folder, f"grammar-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache")


_LOWER = _Lower()
_PARSER = Lark(grammar_text(), parser="lalr", lexer=_Lexer, transformer=_LOWER,
               keep_all_tokens=True, maybe_placeholders=False, cache=_cache_file())
_LOCK = threading.Lock()   # `_LOWER` holds the state of the parse in progress


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


def _run(text: str) -> None:
    """Parse `text`; on each syntax error, report, salvage, restart at the next block.

    A restart parses a `TextSlice` of the same text, so every position stays
    absolute and nothing is copied."""
    try:
        _PARSER.parse(text)
        return
    except UnexpectedInput as first:
        exc: UnexpectedInput = first
    boundaries: list[int] | None = None
    base = 0
    while True:
        _LOWER.diags.append(dsl_errors.syntax_diagnostic(exc, text, _LOWER.path, _HINTS))
        _salvage(exc)
        at = _offset(exc)
        if at is None:
            return
        if boundaries is None:
            boundaries = [m.start(1) for m in _BOUNDARY.finditer(text)]
        i = bisect.bisect_left(boundaries, max(at, base + 1))
        if i == len(boundaries):
            return
        base = boundaries[i]
        try:
            _PARSER.parse(TextSlice(text, base, len(text)))  # type: ignore[arg-type]
            return
        except UnexpectedInput as again:
            exc = again


def _comments(tokens: list[Token], text: str) -> tuple[Comment, ...]:
    if not tokens:
        return ()
    lines = text.split("\n")
    out = []
    for t in tokens:
        before = lines[t.line - 1][: t.column - 1]  # type: ignore[operator]
        out.append(Comment(t.line, t.column, t.value.rstrip(), bool(before.strip())))  # type: ignore[arg-type]
    return tuple(out)


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
