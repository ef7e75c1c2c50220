"""Organisation rules written in CEL (`rules:` in `policies/*.yaml`, docs/rules.md).

A tag rule (catalogue.py) asks for requirements intentc implements; an
organisation rule is a predicate the organisation writes itself: "training
in team-x declares a duration of at most 24 h", "P0 only `within nvlink`",
"no `latest` images".  It is a CEL expression over the intent, its tenant,
its datasets and, where a plan exists, its placement (`cel_view.py`), true
when the intent is acceptable.

This module holds the rule as data and what can be known of it without an
intent: the expression is scanned (a small lexer, below) for the variables
and fields it reads, checked against the bounds that keep its cost small,
and compiled once by the CEL implementation (the `cel` module of PyPI's
`common-expression-language`, Rust's cel crate: docs/rules.md says why).
The library has no type checker, so reading a variable that does not exist
is found here, by the scan, at its own line and column in the policy file.

The library is imported only when a repository has rules: `intentc check`
of a repository without them never loads it.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from intentc.diagnostics import Diagnostic, Span, error, excerpt, make_span
from intentc.diagnostics.suggest import closest
from intentc.ir import NO_SPAN

# Bounds on a rule's cost, checked before it is compiled.  CEL has no loops
# or recursion: an evaluation's cost is bounded by the expression's size and
# by the data's size raised to the depth of nested comprehensions, so these
# two bounds keep one evaluation small (the run budget in cel_check.py
# catches the rest).
MAX_EXPRESSION_CHARS = 4096
MAX_COMPREHENSION_DEPTH = 2

VARIABLES = ("intent", "tenant", "datasets", "placement")
MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
KEYWORDS = frozenset({"true", "false", "null", "in"})

# The fields of `intent` a Kubernetes ValidatingAdmissionPolicy can read back
# from the pods intentc renders (render/admission.py): a rule reading only
# these is enforced by the cluster too.
ADMISSION_FIELDS = frozenset({"name", "tenant", "kind", "image"})


class RuleSeverity(str, enum.Enum):
    """What a failing rule is: an error fails check and compile; a warning is reported (and, on the
    cluster, a warning to the client plus an audit annotation)."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class RuleMatch:
    """Which intents a rule judges: empty means every tenant, or every action kind."""

    tenants: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()

    def admits(self, tenant: str, kind: str) -> bool:
        return (not self.tenants or tenant in self.tenants) and (not self.kinds or kind in self.kinds)


@dataclass(frozen=True)
class CelRule:
    """One organisation rule as written.  Two rules are the same when they say the same thing,
    wherever written (`intentc diff` compares them so)."""

    name: str
    expression: str
    message: str
    severity: RuleSeverity = RuleSeverity.ERROR
    match: RuleMatch = RuleMatch()
    origin: str = field(default="", compare=False)                # the policy file
    span: Span = field(default=NO_SPAN, compare=False)            # its name
    expression_span: Span = field(default=NO_SPAN, compare=False)  # its expression's value
    expression_column: int = field(default=0, compare=False)       # 1-based column of its first character, 0: unknown

    def describe(self) -> str:
        """One line a reviewer compares (`intentc diff`)."""
        scope = []
        if self.match.tenants:
            scope.append("tenants " + ", ".join(self.match.tenants))
        if self.match.kinds:
            scope.append("kinds " + ", ".join(self.match.kinds))
        where = f" [{'; '.join(scope)}]" if scope else ""
        return f"{self.severity.value}{where}: {self.expression}"


@dataclass(frozen=True)
class Token:
    kind: str           # "id", "str", "num", "op"
    text: str
    offset: int         # in the expression


_LEX = re.compile(r'''
    (?P<ws>\s+)
  | (?P<str>[rRbB]{0,2}(?:"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\d[\w.]*)
  | (?P<op>.)
''', re.VERBOSE)


def tokens(expression: str) -> list[Token]:
    """The expression's tokens, white space left out (enough to find names; the library parses)."""
    out = []
    for m in _LEX.finditer(expression):
        kind = m.lastgroup or "op"
        if kind != "ws":
            out.append(Token(kind, m.group(), m.start()))
    return out


@dataclass(frozen=True)
class Reads:
    """What an expression reads: its root variables, the fields of `intent` it selects, whether it
    uses `intent` other than by selecting a field, and names that are no variable."""

    roots: frozenset[str]
    intent_fields: frozenset[str]
    intent_order: tuple[str, ...]   # the fields of `intent` in the order the expression reads them
    intent_whole: bool
    unknown: tuple[Token, ...]
    depth: int                      # deepest nesting of comprehensions
    # per variable read, the fields selected of it (None: used otherwise, as a whole)
    selected: tuple[tuple[str, frozenset[str] | None], ...] = ()

    @property
    def placement(self) -> bool:
        return "placement" in self.roots

    @property
    def admissible(self) -> bool:
        """True when the cluster sees everything the rule reads (render/admission.py)."""
        return (self.roots <= {"intent"} and not self.intent_whole and bool(self.intent_fields)
                and self.intent_fields <= ADMISSION_FIELDS)


@functools.lru_cache(maxsize=1024)
def reads(expression: str) -> Reads:
    """What `expression` reads (see `Reads`), once per distinct text: the loader, the evaluation,
    the renderer and `intentc diff` all ask."""
    toks = tokens(expression)
    bound: set[str] = set()         # the variables comprehensions bind: `.all(x, ...)`, `.map(k, v, ...)`
    for i in range(len(toks) - 4):
        if toks[i].text == "." and toks[i + 1].text in MACROS and toks[i + 2].text == "(":
            j = i + 3
            while j + 1 < len(toks) and toks[j].kind == "id" and toks[j + 1].text == ",":
                bound.add(toks[j].text)
                j += 2
    roots: set[str] = set()
    fields: dict[str, None] = {}
    picked: dict[str, set[str] | None] = {}
    whole = False
    unknown: list[Token] = []
    stack: list[bool] = []          # one per open bracket: does it open a comprehension?
    depth = 0
    for i, t in enumerate(toks):
        prev = toks[i - 1].text if i else ""
        nxt = toks[i + 1].text if i + 1 < len(toks) else ""
        if t.kind == "op":
            if t.text in "([{":
                opens = t.text == "(" and i >= 2 and toks[i - 1].text in MACROS and toks[i - 2].text == "."
                stack.append(opens)
                depth = max(depth, sum(stack))
            elif t.text in ")]}" and stack:
                stack.pop()
            continue
        if t.kind != "id" or prev == "." or nxt == "(" or t.text in KEYWORDS or t.text in bound:
            continue
        if t.text in VARIABLES:
            roots.add(t.text)
            selects = nxt == "." and i + 2 < len(toks) and toks[i + 2].kind == "id"
            have = picked.setdefault(t.text, set())
            if selects and have is not None:
                have.add(toks[i + 2].text)
            elif not selects and not _null_test(toks, i):
                picked[t.text] = None
            if t.text == "intent":
                if selects:
                    fields.setdefault(toks[i + 2].text)
                else:
                    whole = True
        elif nxt != ":" or not stack:       # `{name: value}` in a message literal is rare; map keys are quoted
            unknown.append(t)
    selected = tuple((root, None if got is None else frozenset(got)) for root, got in sorted(picked.items()))
    return Reads(frozenset(roots), frozenset(fields), tuple(fields), whole, tuple(unknown), depth, selected)


def _null_test(toks: list[Token], i: int) -> bool:
    """True when the variable at `i` is only compared with null (`tenant != null`, `null == tenant`):
    that reads none of its fields."""
    after = "".join(t.text for t in toks[i + 1:i + 4])
    before = "".join(t.text for t in toks[max(i - 3, 0):i])
    return after in ("==null", "!=null") or before in ("null==", "null!=")


@functools.lru_cache(maxsize=1024)
def program(expression: str) -> Any:
    """The compiled expression (a `cel.Program`), once per distinct text; ValueError when it does not
    parse."""
    import cel

    return cel.compile(expression)


_POSITION = re.compile(r"<input>:(\d+):(\d+):\s*(.*)")


def _at(rule: CelRule, line: int, column: int, width: int = 1) -> Span:
    """The policy file's span of the expression's (1-based) line and column, where the expression is
    written on one line (plain or quoted); else the expression's value span."""
    s = rule.expression_span
    if rule.expression_column and line == 1 and s.line == s.end_line:
        col = rule.expression_column + column - 1
        return make_span(s.file, s.line, col, s.line, col + max(width, 1))
    return s if s is not NO_SPAN else rule.span


def compile_diagnostics(rule: CelRule) -> list[Diagnostic]:
    """E1031 for what keeps the rule from being evaluated: too long, too deeply nested, a name that
    is no variable, or a syntax error, each at its own position in the policy file."""
    where = f"rule '{rule.name}'"
    if len(rule.expression) > MAX_EXPRESSION_CHARS:
        return [error("E1031", f"{where}: expression of {len(rule.expression)} characters is longer than the "
                               f"{MAX_EXPRESSION_CHARS} allowed", rule.expression_span,
                      hint="split it into several rules")]
    r = reads(rule.expression)
    found: list[Diagnostic] = []
    if r.depth > MAX_COMPREHENSION_DEPTH:
        found.append(error("E1031", f"{where}: comprehensions nested {r.depth} deep; at most "
                                    f"{MAX_COMPREHENSION_DEPTH} are allowed", rule.expression_span,
                           hint="each nested all/exists/map/filter multiplies the cost of evaluation"))
    for t in r.unknown:
        line, col = _line_col(rule.expression, t.offset)
        near = closest(t.text, VARIABLES)
        mean = f' (did you mean "{near}"?)' if near else ""
        found.append(error("E1031", f"{where}: undeclared reference to '{excerpt(t.text)}'{mean}",
                           _at(rule, line, col, len(t.text)),
                           hint="a rule reads intent, tenant, datasets and placement (docs/rules.md)"))
    if found:
        return found
    try:
        program(rule.expression)
    except Exception as exc:        # the library's parse errors are ValueError; anything else is as fatal
        return [_syntax(rule, str(exc))]
    return []


def _syntax(rule: CelRule, text: str) -> Diagnostic:
    """E1031 at the first position the library's message names (`<input>:L:C: ...`)."""
    for m in _POSITION.finditer(text):
        line, col = int(m.group(1)), int(m.group(2))
        what = m.group(3).split("\n")[0]
        return error("E1031", f"rule '{rule.name}' does not compile: {excerpt(what, 200)}",
                     _at(rule, line, col), hint="CEL syntax: https://cel.dev (docs/rules.md)")
    return error("E1031", f"rule '{rule.name}' does not compile: {excerpt(text.splitlines()[0] if text else text, 200)}",
                 rule.expression_span)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def rules_of(spec: dict[str, Any], shown: str, source: str) -> Iterator[CelRule]:
    """The rules of one schema-valid Policy spec (a `YMap` from the YAML reader), with positions."""
    from intentc.frontend.schema import YMap, to_span

    items = spec.get("rules") or []
    for item in items:
        if not isinstance(item, YMap):
            continue
        match = item.get("match") or {}
        expr_pos = item.pos["expression"][1]
        expr_span = to_span(shown, expr_pos)
        rule = CelRule(
            name=str(item["name"]), expression=str(item["expression"]), message=str(item["message"]),
            severity=RuleSeverity(item.get("severity", "error")),
            match=RuleMatch(tuple(str(t) for t in match.get("tenants", ())),
                            tuple(str(k) for k in match.get("kinds", ()))),
            origin=shown, span=to_span(shown, item.pos["name"][1]), expression_span=expr_span,
            expression_column=_first_column(source, expr_span, str(item["expression"])))
        yield rule


def _first_column(source: str, span: Span, expression: str) -> int:
    """The column of the expression's first character where it is written on one line as it reads
    (plain or in quotes without escapes), so a position inside it maps to the file; else 0."""
    if span.line != span.end_line or "\n" in expression:
        return 0
    lines = source.splitlines()
    if span.line > len(lines):
        return 0
    text = lines[span.line - 1][span.column - 1:span.end_column - 1]
    if text == expression:
        return span.column
    if len(text) == len(expression) + 2 and text[0] in "\"'" and text[1:-1] == expression:
        return span.column + 1
    return 0
