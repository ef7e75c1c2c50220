"""Lowering DSL parse events to the IR: the lark Transformer inlined in the parser.

`Lowering` builds the IR while the LALR parser reduces (no parse tree is
ever materialised).  lark refuses ``@v_args(meta=True)`` for inlined
transformers, so spans come from the tokens themselves: a node spans its
first to its last token.  Checks that need no other file and where both
positions are known (a clause given twice, a required clause missing, a
number that is not one) are made here.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from lark import Transformer

from intentc.diagnostics import Diagnostic, Related, Span, error, make_span
from intentc.frontend import dsl_errors
from intentc.frontend.lark_glue import Token
from intentc.ir import (
    CONSTRAINT_KEYS,
    OWN,
    SETTING_KEYS,
    Action,
    Batch,
    ClusterSelector,
    Constraints,
    Context,
    Dataset,
    FieldSpans,
    GpuRequest,
    Intent,
    ModelSettings,
    Ref,
    Tenant,
    Trigger,
)
from intentc.ir import batch as make_batch

# (key, value, where the value was written, keyword token).  Where: a `Span`, or
# the value's own token when that is all of it (tokens carry the same line,
# column, end_line and end_column): field spans are packed from positions, and
# a Span made per value only to be taken apart again was a fifth of the spans.
_Item = tuple[str, Any, Any, Token]



_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]-?[0-9]+)?")
# A line that plausibly opens a declaration: where recovery restarts.

_TENANT_KEYS = {"TIER": "tier", "SLA": "tier", "WEIGHT": "weight", "QUOTA": "quota",
                "GROUP": "group", "DRIFT": "drift", "MAX_SLA": "max_sla"}
_GPU_OPTIONS = {"X": "product", "MEMORY": "memory", "WITHIN": "within", "PREFER": "prefer"}
_ESCAPES = 'the escapes are \\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uHHHH with four hex digits (as in JSON)'
_REQUIRED = {
    "trigger": "trigger: on push",
    "action": 'action: batch image "registry/app:1.0"',
    "context": "context: tenant team-a",
}


class Lowering(Transformer):  # type: ignore[type-arg]
    """Rule callbacks that build IR nodes; one instance, reset for every parse."""

    def __init__(self) -> None:
        super().__init__()
        self.path = ""
        self.diags: list[Diagnostic] = []
        self.decls: list[Tenant | Dataset | Intent] = []
        self.comments: list[Token] = []
        # Set when the parser recovered from a syntax error inside the block being
        # parsed (`dsl._recover`): that block's declaration yields no IR and no
        # "required clause missing" (the clause may be the broken one).
        self.broken = False

    def begin(self, path: str) -> None:
        self.path, self.diags, self.decls, self.comments = path, [], [], []
        self.broken = False

    # -- helpers -----------------------------------------------------------

    def _sp(self, t: Token) -> Span:
        return make_span(self.path, t.line, t.column, t.end_line, t.end_column)

    def _fields(self, spans: dict[str, Any], own: Any) -> FieldSpans:
        """The node's field spans with its own span (`own`) among them."""
        spans[OWN] = own
        return FieldSpans.located(self.path, spans)

    def _cover(self, a: Any, b: Any) -> Span:
        """From the start of `a` to the end of `b` (each a `Span` or a token: no `Span` made for either)."""
        return make_span(self.path, a.line, a.column, b.end_line, b.end_column)

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

    def _unique(self, items: Iterable[_Item], where: str) -> dict[str, tuple[Any, Any, Token]]:
        """Items by key; a key given twice is E0105 at the second, noting the first."""
        seen: dict[str, tuple[Any, Any, Token]] = {}
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
    def _take(u: dict[str, tuple[Any, Any, Token]], keys: Iterable[str], fields: dict[str, Any],
              spans: dict[str, Any], prefix: str = "") -> None:
        for key in keys:
            hit = u.get(key)
            if hit is not None and hit[0] is not None:
                fields[prefix + key] = hit[0]
                spans[prefix + key] = hit[1]

    def _refs(self, toks: list[Token]) -> tuple[Ref, ...]:
        path = self.path
        return tuple(Ref(self._text(t), path, t.line, t.column, t.end_line, t.end_column) for t in toks)

    def _items_span(self, items: list[_Item]) -> Span:
        return self._cover(items[0][3], items[-1][2])

    # -- declarations --------------------------------------------------------

    def start(self, c: list[Any]) -> None:
        return None

    def tenant(self, c: list[Any]) -> Tenant | None:
        name = self._text(c[1])
        where = f"tenant '{name}'"
        u = self._unique(c[3:-1], where)
        if self.broken:            # a syntax error inside: no IR
            self.broken = False
            return None
        fields: dict[str, Any] = {}
        spans = {"name": c[1]}
        self._take(u, ("tier", "weight", "group", "drift", "max_sla"), fields, spans)
        if "quota" in u:
            quota = self._unique(u["quota"][0], f"the quota of {where}")
            self._take(quota, ("gpus", "cpu", "memory"), fields, spans, prefix="quota_")
        t = Tenant(name, spans=self._fields(spans, self._cover(c[0], c[-1])), **fields)
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
        return key, value, v, kw

    def quota_item(self, c: list[Any]) -> _Item:
        kw, v = c
        value = self._int(v, "a GPU quota") if kw.type == "GPUS" else self._text(v)
        return kw.type.lower(), value, v, kw

    def dataset(self, c: list[Any]) -> Dataset | None:
        name = self._text(c[1])
        spans = {"name": c[1]}
        fields: dict[str, Any] = {}
        if len(c) > 2:
            self._take(self._unique(c[3:-1], f"dataset '{name}'"), ("uri",), fields, spans)
        if self.broken:            # a syntax error inside: no IR
            self.broken = False
            return None
        d = Dataset(name, spans=self._fields(spans, self._cover(c[0], c[-1])), **fields)
        self.decls.append(d)
        return d

    def dataset_clause(self, c: list[Any]) -> _Item:
        return "uri", self._text(c[2]), c[2], c[0]

    def intent(self, c: list[Any]) -> Intent | None:
        name = self._text(c[1])
        name_span = self._sp(c[1])
        u = self._unique(c[3:-1], f"intent '{name}'")
        if self.broken:            # a syntax error inside: no IR
            self.broken = False
            return None
        missing = [k for k in _REQUIRED if k not in u]
        for k in missing:
            self.diags.append(error("E0106", f"intent '{name}' has no {k} clause", name_span,
                                    hint=f"add a clause such as `{_REQUIRED[k]}`"))
        if missing or any(u[k][0] is None for k in _REQUIRED):
            return None
        fields: dict[str, Any] = {}
        spans = {"name": name_span}
        self._take(u, ("trigger", "action", "context", "constraints", "consumes", "produces", "clusters"),
                   fields, spans)
        if "constraints" not in fields:     # no clause: later passes still get a place to point at
            fields["constraints"] = Constraints(spans=FieldSpans.at(name_span))
        i = Intent(name, spans=self._fields(spans, self._cover(c[0], c[-1])), **fields)
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
        if t == "CLUSTERS":
            return "clusters", c[2], c[2].span, kw
        span = self._cover(items[0], items[-1])
        return t.lower(), self._refs(items), span, kw

    def clusters(self, c: list[Any]) -> ClusterSelector:
        """`[a, b]`: by name; `{ key: value, ... }`: by labels (matchLabels)."""
        if isinstance(c[0], tuple):
            names, span, each = c[0]
            return ClusterSelector(names=names, name_spans=each, spans=FieldSpans.at(span))
        span = self._cover(c[0], c[-1])
        pairs: list[tuple[str, str, Span]] = [p for p in c[1:-1] if isinstance(p, tuple)]
        spans = {f"label:{k}": sp for k, _, sp in pairs}
        return ClusterSelector(match_labels=tuple(sorted((k, v) for k, v, _ in pairs)), by_labels=True,
                               spans=self._fields(spans, span))

    def label_pair(self, c: list[Any]) -> tuple[str, str, Span]:
        return self._text(c[0]), self._text(c[2]), self._cover(c[0], c[2])

    # -- trigger and action --------------------------------------------------

    def trigger(self, c: list[Any]) -> Trigger:
        first, last = c[0], c[-1]
        at = (self.path, first.line, first.column, last.end_line, last.end_column)
        if first.type == "ON":
            return Trigger(self._text(c[1]), (), None, *at)
        if first.type == "AFTER":
            return Trigger("after", self._refs(c[1::2]), None, *at)
        if first.type == "SCHEDULE":
            return Trigger("schedule", (), self._text(c[1]), *at)
        return Trigger(self._text(first), (), None, *at)

    def action(self, c: list[Any]) -> tuple[Action | None, Span]:
        kind = c[0]
        parts: list[Any] = c[1:]
        settings = parts.pop() if parts and isinstance(parts[-1], ModelSettings) else None
        end = settings.span if settings else (parts[-1][2] if parts else kind)
        span = self._cover(kind, end)
        u = self._unique(parts, "the action")
        if "image" not in u:
            self.diags.append(error("E0106", "the action has no image", self._sp(kind),
                                    hint='add the container image: image "registry/app:1.0"'))
            return None, span
        fields: dict[str, Any] = {}
        spans: dict[str, Any] = {"kind": kind}
        self._take(u, ("image", "model", "command", "replicas", "port"), fields, spans)
        return Action(self._text(kind), settings=settings, spans=self._fields(spans, span), **fields), span

    def action_part(self, c: list[Any]) -> _Item:
        kw, v = c
        t = kw.type
        if t == "COMMAND":
            values, span = v
            return "command", values, span, kw
        if t in ("REPLICAS", "PORT"):
            return t.lower(), self._int(v, t.lower()), v, kw
        return t.lower(), self._text(v), v, kw

    def string_list(self, c: list[Any]) -> tuple[tuple[str, ...], Span]:
        return tuple(self._text(t) for t in c[1:-1:2]), self._cover(c[0], c[-1])

    def value_list(self, c: list[Any]) -> tuple[tuple[str, ...], Span, tuple[Span, ...]]:
        toks = c[1:-1:2]
        return (tuple(self._text(t) for t in toks), self._cover(c[0], c[-1]),
                tuple(self._sp(t) for t in toks))

    def settings(self, c: list[Any]) -> ModelSettings:
        fields: dict[str, Any] = {}
        spans: dict[str, Any] = {}
        self._take(self._unique(c[1:-1], "the settings"), SETTING_KEYS, fields, spans)
        return ModelSettings(spans=self._fields(spans, self._cover(c[0], c[-1])), **fields)

    def setting(self, c: list[Any]) -> _Item:
        kw, v = c[0], c[2]
        t = kw.type
        if t == "BATCH":
            batch, span = v
            return "batch", batch, span, kw
        if t == "SEQ_LEN":
            return "seq_len", self._int(v, "seq_len"), v, kw
        if t == "KV_REUSE":
            return "kv_reuse", self._float(v, "kv_reuse"), v, kw
        return t.lower(), self._text(v), v, kw

    def batch(self, c: list[Any]) -> tuple[Batch | None, Span]:
        span = self._cover(c[0], c[-1])
        if c[0].type == "AUTO":
            if len(c) == 1:
                return make_batch(True), span
            limit = self._int(c[3], "the auto batch maximum")
            return (make_batch(True, max=limit) if limit is not None else None), span
        size = self._int(c[0], "batch (a size or auto)")
        return (make_batch(False, size) if size is not None else None), span

    # -- context and constraints ---------------------------------------------

    def context_item(self, c: list[Any]) -> _Item:
        kw, v = c
        if kw.type == "TENANT":
            return "tenant", Ref(self._text(v), self.path, v.line, v.column, v.end_line, v.end_column), v, kw
        if kw.type == "TAGS":
            values, span, each = v
            return "tags", (values, each), span, kw
        return "drift", self._text(v), v, kw

    def _context(self, items: list[_Item]) -> Context | None:
        u = self._unique(items, "the context")
        if "tenant" not in u:
            self.diags.append(error("E0106", "the context names no tenant", self._items_span(items),
                                    hint="add the owning tenant: context: tenant team-a"))
            return None
        fields: dict[str, Any] = {}
        spans: dict[str, Any] = {}
        self._take(u, ("tenant", "tags", "drift"), fields, spans)
        if "tags" in fields:
            fields["tags"], fields["tag_spans"] = fields["tags"]
        return Context(spans=self._fields(spans, self._items_span(items)), **fields)

    def constraint_item(self, c: list[Any]) -> _Item:
        kw, v = c
        t = kw.type
        if t == "GPUS":
            gpus, span = v
            return "gpus", gpus, span, kw
        if t in ("TOLERANCE", "SLACK"):
            return t.lower(), self._float(v, t.lower()), v, kw
        if t == "RETRIES":
            return "retries", self._int(v, "retries"), v, kw
        return t.lower(), self._text(v), v, kw

    def _constraints(self, items: list[_Item]) -> Constraints:
        fields: dict[str, Any] = {}
        spans: dict[str, Any] = {}
        self._take(self._unique(items, "the constraints"),
                   CONSTRAINT_KEYS, fields, spans)
        return Constraints(spans=self._fields(spans, self._items_span(items)), **fields)

    def gpus(self, c: list[Any]) -> tuple[GpuRequest | None, Span]:
        count_tok = c[0]
        options: list[_Item] = c[1:]
        span = self._cover(count_tok, options[-1][2] if options else count_tok)
        u = self._unique(options, "the GPU request")
        count = self._int(count_tok, "the GPU count")
        if count is None:
            return None, span
        fields: dict[str, Any] = {}
        spans: dict[str, Any] = {"count": count_tok}
        self._take(u, ("product", "memory", "within", "prefer"), fields, spans)
        return GpuRequest(count, spans=self._fields(spans, span), **fields), span

    def gpu_option(self, c: list[Any]) -> _Item:
        kw, v = c
        return _GPU_OPTIONS[kw.type], self._text(v), v, kw


