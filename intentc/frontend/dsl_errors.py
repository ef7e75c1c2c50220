"""Turning lark's parse errors into diagnostics a person can act on.

Two halves:

* `EXAMPLES` — a table of small bad inputs with the code and the exact
  line:column each must produce, some with a hint.  The parser indexes the
  hinted rows by the parser context they fail in (in the spirit of lark's
  ``UnexpectedInput.match_examples``), so an unseen input that fails the same
  way gets the same hint.  tests/test_dsl.py runs the whole table.
* `syntax_diagnostic` — the words: terminal names become "a quoted string" or
  "an intent clause (trigger, action, ...)", the value expected after a
  keyword is named by that keyword ("a number" after ``weight:``), and the
  acceptable set comes from a side-effect-free walk of the LALR table rather
  than from lark's merged lookaheads, which would list tokens from unrelated
  blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from intentc.diagnostics import Diagnostic, Related, Span, error, excerpt
from intentc.diagnostics.suggest import did_you_mean
from intentc.frontend import lark_glue
from intentc.frontend.lark_glue import Shift, Token


@dataclass(frozen=True)
class BadInput:
    name: str
    text: str
    code: str
    line: int
    column: int
    hint: str | None = None


_I = 'intent j {\n  trigger: on push\n  action: batch image "b:1"\n  context: tenant t\n'

EXAMPLES: tuple[BadInput, ...] = (
    BadInput("missing-colon-tenant", "tenant t {\n  tier gold\n}\n", "E0101", 2, 8,
             "clauses are written `name: value`, with a colon"),
    BadInput("missing-colon-intent", "intent j {\n  trigger on push\n}\n", "E0101", 2, 11,
             "clauses are written `name: value`, with a colon"),
    BadInput("brace-after-clause-name", "intent j {\n  trigger {\n}\n", "E0101", 2, 11),
    BadInput("unknown-top-keyword", "intnet j {\n}\n", "E0101", 1, 1,
             "a file holds `tenant`, `dataset` and `intent` blocks"),
    BadInput("unknown-intent-clause", _I + "  priority: 3\n}\n", "E0101", 5, 3,
             "an intent has the clauses trigger, action, context, constraints, consumes and produces"),
    BadInput("unknown-tenant-clause", "tenant t {\n  owner: \"x\"\n}\n", "E0101", 2, 3,
             "a tenant has the clauses tier, weight, quota, group and drift"),
    BadInput("unknown-setting", _I.replace('"b:1"', '"b:1" {\n    batchsize: 3\n  }') + "}\n",
             "E0101", 4, 5, "the settings are batch, seq_len, kv_cache, precision, model_memory, parameters, "
             "kv_reuse and throughput_mode"),
    BadInput("unquoted-group", "tenant t { group: team-t-devs }\n", "E0101", 1, 19,
             "this value is a string: put it in double quotes"),
    BadInput("unquoted-image", 'intent j {\n  action: batch image ghcr.io/acme/x:1\n}\n',
             "E0101", 2, 23, 'container images are quoted strings: image "ghcr.io/acme/app:1.0"'),
    BadInput("unquoted-uri", "dataset d { uri: s3://bucket/x }\n", "E0101", 1, 18,
             'a URI is a quoted string: uri: "s3://bucket/path"'),
    BadInput("unquoted-command", 'intent j {\n  action: batch image "b" command [run, x]\n}\n',
             "E0101", 2, 36, 'command arguments are quoted strings: command ["run", "--flag"]'),
    BadInput("missing-name", "tenant {\n}\n", "E0101", 1, 8, "give the block a name: tenant team-a { ... }"),
    BadInput("stray-close-brace", "tenant t {}\n}\n", "E0101", 2, 1),
    BadInput("missing-comma-context", _I.replace("tenant t", "tenant t tags [a]") + "}\n", "E0101", 4, 21),
    BadInput("missing-comma-constraints", _I + "  constraints: cpu 4 memory 8Gi\n}\n", "E0101", 5, 22),
    BadInput("trigger-without-event", "intent j {\n  trigger: on\n}\n", "E0101", 3, 1),
    BadInput("nested-list", 'intent j {\n  action: batch image "b" command [["a"]]\n}\n', "E0101", 2, 36),
    BadInput("gpus-product-word-x", _I + '  constraints: gpus 8 * "H100"\n}\n', "E0102", 5, 23,
             'write the GPU product after an `x`: gpus 8 x "H100-80GB"'),
    BadInput("gpu-count-glued-to-product", _I + '  constraints: gpus 8x"H100"\n}\n', "E0101", 5, 23,
             'separate the GPU count and the product: gpus 8 x "H100-80GB"'),
    BadInput("missing-comma-list", _I + "  consumes: a b\n}\n", "E0101", 5, 15),
    BadInput("equals-instead-of-colon", "tenant t {\n  weight = 4\n}\n", "E0102", 2, 10),
    BadInput("single-quotes", "dataset d { uri: 's3://x' }\n", "E0102", 1, 18),
    BadInput("semicolon", "tenant t { tier: gold; }\n", "E0102", 1, 22),
    BadInput("unterminated-string", 'dataset d { uri: "s3://x }\n', "E0104", 1, 18),
    BadInput("string-across-lines", 'intent j {\n  action: batch image "b\n:1"\n}\n', "E0104", 2, 23),
    BadInput("missing-close-brace", "tenant t {\n  tier: gold\n", "E0103", 3, 1),
    BadInput("missing-value-at-eof", "tenant t { weight:", "E0103", 1, 19),
    BadInput("missing-close-bracket", 'intent j {\n  context: tenant t, tags [a, b', "E0103", 2, 32),
    BadInput("empty-block-name-eof", "dataset", "E0103", 1, 8),
    BadInput("duplicate-clause", "tenant t {\n  tier: gold\n  tier: silver\n}\n", "E0105", 3, 3),
    BadInput("duplicate-item", _I + "  constraints: cpu 4, cpu 8\n}\n", "E0105", 5, 23),
    BadInput("missing-trigger", 'intent j {\n  action: batch image "b"\n  context: tenant t\n}\n',
             "E0106", 1, 8),
    BadInput("missing-image", "intent j {\n  trigger: manual\n  action: serve port 80\n"
                              "  context: tenant t\n}\n", "E0106", 3, 11),
    BadInput("context-without-tenant", 'intent j {\n  trigger: manual\n  action: batch image "b"\n'
                                       "  context: tags [x]\n}\n", "E0106", 4, 12),
    BadInput("weight-not-integer", "tenant t { weight: 2.5 }\n", "E0107", 1, 20),
    BadInput("seq-len-quoted", _I.replace('"b:1"', '"b:1" { seq_len: "4096" }') + "}\n", "E0107", 3, 40),
    BadInput("tolerance-not-number", _I + "  constraints: tolerance high\n}\n", "E0107", 5, 26),
    BadInput("bad-escape", 'dataset d { uri: "a\\qb" }\n', "E0107", 1, 20),
)


# --------------------------------------------------------------------------
# Words for terminals
# --------------------------------------------------------------------------

_PUNCT = {"LBRACE": "'{'", "RBRACE": "'}'", "COLON": "':'", "COMMA": "','", "LSQB": "'['",
          "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "STRING": "a quoted string",
          "WORD": "a name", "$END": "end of file"}

# What the word after a keyword is, so "expected a number after 'weight:'".
_ROLE = {
    "TENANT": "a name", "DATASET": "a name", "INTENT": "a name",
    "TIER": "a tier (gold, silver or bronze)", "SLA": "a class (a tier, or P0..P3 in constraints)",
    "WEIGHT": "a number", "GPUS": "a number", "REPLICAS": "a number", "PORT": "a number",
    "SEQ_LEN": "a number", "MAX": "a number", "TOLERANCE": "a number (e.g. 0.95)",
    "CPU": "a quantity (e.g. 16 or 500m)", "MEMORY": "a quantity (e.g. 64Gi)",
    "DURATION": "a duration (e.g. 2h)", "DRIFT": "a drift policy (report, heal or rollback)",
    "ON": "an event (e.g. push)", "AFTER": "an intent name", "CONSUMES": "a dataset name",
    "PRODUCES": "a dataset name", "CLUSTERS": "cluster names [a, b] or labels { key: value }", "ACTION": "an action kind (batch, training, inference or serve)",
    "KV_CACHE": "a kv_cache policy (recycle, retain or evict)", "PRECISION": "a precision (e.g. bf16)",
    "BATCH": "a batch size", "TAGS": "a tag", "WITHIN": "a scope (nvlink, node, rack or zone)",
    "PREFER": "a scope (nvlink, node, rack or zone)", "X": 'a GPU product (e.g. "H100-80GB")',
    "MODEL_MEMORY": "a quantity (e.g. 16Gi)", "PARAMETERS": "a parameter count (e.g. 8B)",
    "KV_REUSE": "a number (e.g. 0.8)", "THROUGHPUT_MODE": "a throughput mode (steady or burst)",
    "SLACK": "a number (e.g. 0.5)", "RETRIES": "a number", "FALLBACK": "a fallback (none or cpu)",
}

# Sets of keywords named as one thing; a group is used when all its members are acceptable.
_GROUPS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"TENANT", "DATASET", "INTENT"}), "a declaration (tenant, dataset or intent)"),
    (frozenset({"TIER", "SLA", "WEIGHT", "QUOTA", "GROUP", "DRIFT"}),
     "a tenant clause (tier, weight, quota, group, drift)"),
    (frozenset({"URI"}), "the clause 'uri'"),
    (frozenset({"TRIGGER", "ACTION", "CONTEXT", "CONSTRAINTS", "CONSUMES", "PRODUCES", "CLUSTERS"}),
     "an intent clause (trigger, action, context, constraints, consumes, produces, clusters)"),
    (frozenset({"ON", "AFTER", "SCHEDULE"}), 'a trigger (on push, after NAME, schedule "CRON" or manual)'),
    (frozenset({"IMAGE", "MODEL", "COMMAND", "REPLICAS", "PORT"}),
     "an action part (image, model, command, replicas, port)"),
    (frozenset({"BATCH", "SEQ_LEN", "KV_CACHE", "PRECISION", "MODEL_MEMORY", "PARAMETERS", "KV_REUSE",
                "THROUGHPUT_MODE"}),
     "a setting (batch, seq_len, kv_cache, precision, model_memory, parameters, kv_reuse, throughput_mode)"),
    (frozenset({"TENANT", "TAGS", "DRIFT"}), "a context item (tenant, tags, drift)"),
    (frozenset({"CPU", "MEMORY", "GPUS", "SLA", "TOLERANCE", "DURATION", "SLACK", "RETRIES", "FALLBACK"}),
     "a constraint (cpu, memory, gpus, sla, tolerance, duration, slack, retries, fallback)"),
    (frozenset({"GPUS", "CPU", "MEMORY"}), "a quota (gpus, cpu, memory)"),
    (frozenset({"X", "MEMORY", "WITHIN", "PREFER"}), "a GPU option (x, memory, within, prefer)"),
)

_SKIP_FOR_ROLE = frozenset({"COLON", "COMMA", "LSQB", "LPAR", "WORD", "STRING"})
_DECL_KEYWORDS = ("tenant", "dataset", "intent")
_OPENERS = frozenset({"LBRACE", "LSQB", "LPAR"})
_CLOSERS = frozenset({"RBRACE", "RSQB", "RPAR"})


short = excerpt


def _char(ch: str) -> str:
    return f"'{ch}'" if ch.isprintable() and ch != " " else f"U+{ord(ch):04X}"


def step(states: Any, stack: list[int], term: str) -> list[int] | None:
    """The state stack after shifting `term` (with the reductions it triggers),
    or None if `term` is not acceptable.  Works on a copy of the state stack
    only, so no user callback runs and no value is copied."""
    stack = list(stack)
    while True:
        act = states[stack[-1]].get(term)
        if act is None:
            return None
        action, arg = act
        if action is Shift:
            stack.append(arg)
            return stack
        if arg.expansion:
            del stack[-len(arg.expansion):]
        stack.append(states[stack[-1]][arg.origin.name][1])


def acceptable(parser_state: Any) -> frozenset[str]:
    """Terminals that would really be shifted next (lark's table also lists
    the merged LALR lookaheads, which would name tokens of unrelated blocks)."""
    states = lark_glue.table_states(parser_state)
    stack = lark_glue.state_stack(parser_state)
    return frozenset(t for t in states[parser_state.position]
                     if t.isupper() and step(states, stack, t) is not None)


def _missing_comma(parser_state: Any, acc: frozenset[str], token: Token) -> bool:
    """True when the token would be fine right after a ',' (`cpu 4 memory 8Gi`, `consumes: a b`)."""
    if "COMMA" not in acc:
        return False
    states = lark_glue.table_states(parser_state)
    after = step(states, lark_glue.state_stack(parser_state), "COMMA")
    if after is None:
        return False
    as_keyword = token.value.upper() if token.value.isidentifier() else token.type
    return any(step(states, after, t) is not None for t in {token.type, as_keyword})


def _role(value_stack: list[Any]) -> str:
    for item in reversed(value_stack):
        if isinstance(item, Token):
            if item.type in _SKIP_FOR_ROLE:
                continue
            return _ROLE.get(item.type, "a value")
    return "a value"


def describe_expected(acc: frozenset[str], value_stack: list[Any]) -> str:
    rest = set(acc)
    if len(rest) > 1:
        rest.discard("$END")
    words: list[str] = []
    for members, label in _GROUPS:
        if len(members) > 1 and members <= rest:
            words.append(label)
            rest -= members
    if "WORD" in rest:
        words.append(_role(value_stack))
        rest -= {"WORD", "STRING"}
    for term in sorted(rest):
        words.append(_PUNCT.get(term, f"'{term.lower()}'"))
    if not words:
        return "nothing more"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def describe_found(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "STRING":
        return f"the string {short(token.value)}"
    return f"'{short(token.value)}'"


def _open_block(value_stack: list[Any], path: str) -> tuple[str | None, Span | None]:
    """The declaration being parsed ("intent 'x'") and the innermost unclosed bracket."""
    where = None
    openers: list[Token] = []
    for i, item in enumerate(value_stack):
        if isinstance(item, Token):
            if item.type in ("TENANT", "DATASET", "INTENT") and where is None and i + 1 < len(value_stack):
                nxt = value_stack[i + 1]
                if isinstance(nxt, Token) and nxt.type in ("WORD", "STRING"):
                    where = f"{item.value} '{short(nxt.value)}'"
            if item.type in _OPENERS:
                openers.append(item)
            elif item.type in _CLOSERS and openers:
                openers.pop()
    if not openers:
        return where, None
    o = openers[-1]
    return where, Span(path, o.line, o.column, o.end_line, o.end_column)  # type: ignore[arg-type]


def end_of_text(text: str) -> tuple[int, int]:
    line = text.count("\n") + 1
    return line, len(text) - (text.rfind("\n") + 1) + 1


HintKey = tuple[frozenset[str], str, str]


def hint_keys(exc: UnexpectedInput) -> tuple[HintKey, HintKey] | None:
    """How an error is recognised as "the same mistake" as an example: the
    acceptable terminals, what was found, and (specific key only) the keyword
    the value belongs to.  A lookup tries the specific key, then the general one."""
    ip = getattr(exc, "interactive_parser", None)
    if ip is None:
        return None
    acc = acceptable(ip.parser_state)
    if isinstance(exc, UnexpectedToken):
        found = exc.token.type
    elif isinstance(exc, UnexpectedCharacters):
        found = f"char:{exc.char}"
    else:
        return None
    keyword = next((t.type for t in reversed(lark_glue.value_stack(ip.parser_state))
                    if isinstance(t, Token) and t.type not in _SKIP_FOR_ROLE), "")
    return (acc, found, keyword), (acc, found, "")


_CHAR_HINTS = {
    "'": 'strings use double quotes: "like this"',
    "=": "clauses are written `name: value`, with a colon",
    ";": "no separator is needed between clauses; items inside one clause are separated by commas",
    "/": "a value containing '/' or ':' must be quoted",
    "*": 'write the GPU product after an `x`: gpus 8 x "H100-80GB"',
}


def syntax_diagnostic(exc: UnexpectedInput, text: str, path: str,
                      hints: Mapping[HintKey, str]) -> Diagnostic:
    """One diagnostic for one lark error; `text` is the whole file (positions are absolute)."""
    ip = getattr(exc, "interactive_parser", None)
    stack: list[Any] = list(lark_glue.value_stack(ip.parser_state)) if ip is not None else []
    acc = acceptable(ip.parser_state) if ip is not None else frozenset()
    keys = hint_keys(exc)
    hint = (hints.get(keys[0]) or hints.get(keys[1])) if keys is not None else None
    where, opener = _open_block(stack, path)
    expected = describe_expected(acc, stack)
    prev = stack[-1] if stack and isinstance(stack[-1], Token) else None
    after = f" after '{short(prev.value)}'" if prev is not None else ""

    if isinstance(exc, UnexpectedCharacters):
        line, col, at = exc.line, exc.column, exc.pos_in_stream or 0
        ch = exc.char
        if ch == '"':
            eol = text.find("\n", at)
            end = col + max((len(text) if eol < 0 else eol) - at, 1)
            return error("E0104", "unterminated string: a string must end with '\"' on the same line",
                         Span(path, line, col, line, end),
                         hint="close the string on this line; write a line break inside it as \\n")
        return error("E0102", f"unexpected character {_char(ch)}{after}, expected {expected}",
                     Span.point(path, line, col), hint=hint or _CHAR_HINTS.get(ch))

    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    if tok.type == "$END":
        line, col = end_of_text(text)
        inside = f" inside {where}" if where else ""
        related = [Related("opened here and never closed", opener)] if opener else []
        return error("E0103", f"unexpected end of file{inside}: expected {expected}",
                     Span.point(path, line, col), hint=hint, related=related)
    span = Span(path, tok.line, tok.column, tok.end_line, tok.end_column)  # type: ignore[arg-type]
    related = []
    if ip is not None and _missing_comma(ip.parser_state, acc, tok):
        hint = f"is a ',' missing before '{short(tok.value)}'? items of one clause are separated by commas"
    if tok.value in _DECL_KEYWORDS and opener is not None and "RBRACE" in acc:
        hint = hint or f"is a '}}' missing? {where or 'the block'} is still open"
        related = [Related("the block opened here is still open", opener)]
    suggestion = did_you_mean(tok.value, _keywords(acc)) if tok.type == "WORD" else ""
    return error("E0101", f"expected {expected}{after}, found {describe_found(tok)}{suggestion}", span,
                 hint=hint, related=related)


def _keywords(acc: frozenset[str]) -> list[str]:
    """The keywords among acceptable terminals, as written (a keyword's terminal is its word in capitals)."""
    return [t.lower() for t in acc if t not in _PUNCT and t.lower().isidentifier()]
