"""The JSON Schemas of the YAML surface, and schema errors as positioned diagnostics.

The schemas in ``schemas/`` are the contract editors see (through the
yaml-language-server ``$schema`` modeline), so they are also what the
compiler validates against: one source of truth for structure, types and
the closed vocabularies.  Validators are built once per kind and reused,
because building one costs far more than running it.

jsonschema reports errors as JSON paths; users need a line and a column.
The YAML reader therefore hands over `YMap` / `YList` values that remember
where each key and value was written, and `schema_diagnostics` turns every
error into a `Diagnostic` at the offending key or value, in the user's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # jsonschema (with attrs, referencing and its metaschemas) was half of the
    # CLI's import time; it is only needed once a document is found invalid.
    from jsonschema import Draft202012Validator, ValidationError
    from referencing import Registry

from intentc.diagnostics import Diagnostic, Span, error, excerpt, make_span
from intentc.diagnostics.suggest import did_you_mean

_fast: Any
try:  # a compiled validator answers "is this valid?" without Python per node; jsonschema explains why not
    import jsonschema_rs as _fast
except ImportError:  # pragma: no cover - exercised only where the wheel is missing
    _fast = None

API_VERSION = "intentc.dev/v1alpha1"
KINDS = ("Intent", "Tenant", "Dataset", "Topology")
POLICY_KIND = "Policy"      # read from policies/*.yaml by intentc.policy.load, not with the intents
CLUSTER_KIND = "Cluster"    # read from clusters/*.yaml by intentc.fleet.clusters, not with the intents
SCHEMA_FILES = {kind: f"{kind.lower()}.schema.json" for kind in (*KINDS, POLICY_KIND, CLUSTER_KIND)}
COMMON_FILE = "common.schema.json"

# 0-based (line, column, end_line, end_column) as the YAML parser reports them.
Pos = tuple[int, int, int, int]


# --------------------------------------------------------------------------
# Values that remember where they were written
# --------------------------------------------------------------------------

class YMap(dict[str, Any]):
    """A YAML mapping as a plain dict (so jsonschema and the lowering see
    ordinary data) plus where the mapping, each key and each value were written."""

    __slots__ = ("at", "pos")

    def __init__(self, at: Pos) -> None:     # empty from `dict.__new__`: no `dict.__init__` call
        self.at = at
        self.pos: dict[str, tuple[Pos, Pos]] = {}      # key -> (key position, value position)


class YList(list[Any]):
    """A YAML sequence as a plain list plus the position of each item."""

    __slots__ = ("at", "pos")

    def __init__(self, at: Pos) -> None:     # empty from `list.__new__`: no `list.__init__` call
        self.at = at
        self.pos: list[Pos] = []


def to_position(p: Pos) -> tuple[int, int, int, int]:
    """What `to_span` makes of `p`, as (line, column, end line, end column)."""
    line, col, end_line, end_col = p
    if end_line < line or (end_line == line and end_col <= col):
        end_line, end_col = line, col + 1
    return line + 1, col + 1, end_line + 1, end_col + 1


def to_span(file: str, p: Pos) -> Span:
    """1-based, end-exclusive; an empty value still gets a one-column span.

    A YAML intent carries some thirty spans, and the frozen dataclass
    ``__init__`` was a third of lowering time: `make_span` builds the same value.
    """
    line, col, end_line, end_col = p
    if end_line < line or (end_line == line and end_col <= col):
        end_line, end_col = line, col + 1
    return make_span(file, line + 1, col + 1, end_line + 1, end_col + 1)


# --------------------------------------------------------------------------
# Loading the schemas
# --------------------------------------------------------------------------

def schema_file(filename: str) -> Path:
    """A bundled schema: from the installed package (`intentc.schemas`, a
    namespace package inside the wheel), else from ``schemas/`` of a checkout."""
    try:
        installed = resources.files("intentc.schemas") / filename
        if installed.is_file():
            return Path(str(installed))
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "schemas" / filename


def schema_path(kind: str) -> Path:
    return schema_file(SCHEMA_FILES[kind])


@cache
def load_schema(filename: str) -> dict[str, Any]:
    with open(schema_file(filename), encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
    return schema


@lru_cache(maxsize=1)
def registry() -> Registry:
    """Every schema under its file name.

    The schema files carry no ``$id`` on purpose: their ``$ref``s
    (``common.schema.json#/$defs/...``) then resolve relative to wherever the
    file is read from — this registry, an editor following the
    yaml-language-server modeline, or ``check-jsonschema --schemafile`` — and
    never point at a URL that would have to be fetched.
    """
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
    names = [COMMON_FILE, *SCHEMA_FILES.values()]
    pairs = [(n, Resource.from_contents(load_schema(n), default_specification=DRAFT202012))
             for n in names]
    return Registry().with_resources(pairs)


_VALIDATORS: dict[str, Draft202012Validator] = {}
_FAST_VALIDATORS: dict[str, Any] = {}


def validator(kind: str) -> Draft202012Validator:
    """The pre-built validator for one kind (built on first use, then shared)."""
    found = _VALIDATORS.get(kind)
    if found is None:
        from jsonschema import Draft202012Validator
        found = Draft202012Validator(load_schema(SCHEMA_FILES[kind]), registry=registry())
        _VALIDATORS[kind] = found
    return found


def _retrieve(uri: str) -> dict[str, Any]:
    """Cross-file ``$ref``s resolve to the bundled files, never to the network."""
    return load_schema(uri.rsplit("/", 1)[-1])


def is_valid(kind: str, instance: object) -> bool:
    """The fast yes/no used before asking jsonschema for explanations.

    Both validators implement the same 2020-12 semantics (the tests compare
    them on generated documents); without the compiled one, jsonschema answers.
    """
    if _fast is None:
        return bool(validator(kind).is_valid(instance))
    fast = _FAST_VALIDATORS.get(kind)
    if fast is None:
        fast = _fast.Draft202012Validator(load_schema(SCHEMA_FILES[kind]), retriever=_retrieve)
        _FAST_VALIDATORS[kind] = fast
    try:
        return bool(fast.is_valid(instance))
    except (ValueError, OverflowError, TypeError):     # a value the compiled side cannot take
        return bool(validator(kind).is_valid(instance))


# --------------------------------------------------------------------------
# Errors → diagnostics
# --------------------------------------------------------------------------

_CODES = {
    "required": "E0210", "minProperties": "E0210",
    "type": "E0211",
    "additionalProperties": "E0212",
    "enum": "E0213", "const": "E0213",
    "pattern": "E0214", "format": "E0214", "minLength": "E0214", "maxLength": "E0214",
    "minimum": "E0215", "maximum": "E0215", "exclusiveMinimum": "E0215", "exclusiveMaximum": "E0215",
    "minItems": "E0216", "maxItems": "E0216", "uniqueItems": "E0216",
}

_TYPE_WORDS = {
    "string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
    "array": "a list", "object": "a mapping", "null": "empty",
}


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def describe_value(value: object) -> str:
    kind = json_type(value)
    if kind == "string":
        return f'"{excerpt(value)}"'
    if kind == "boolean":
        return "true" if value else "false"
    if kind in ("integer", "number"):
        return str(value)
    return {"array": "a list", "object": "a mapping", "null": "an empty value"}[kind]


class _Locator:
    """Finds the text positions of a JSON path inside one YAML document."""

    def __init__(self, doc: YMap, file: str, label: str, skip_top: Sequence[str]) -> None:
        self.doc = doc
        self.file = file
        self.label = label
        self.skip_top = skip_top

    def walk(self, path: Sequence[str | int]) -> tuple[Any, Pos, Pos | None]:
        """The value at `path`, its position, and the position of its key (None at the root)."""
        node: Any = self.doc
        at: Pos = self.doc.at
        key_at: Pos | None = None
        for step in path:
            if isinstance(node, YMap) and isinstance(step, str) and step in node.pos:
                key_at, at = node.pos[step]
            elif isinstance(node, YList) and isinstance(step, int) and step < len(node.pos):
                at = node.pos[step]
                key_at = at
            else:
                break
            node = node[step]
        return node, at, key_at

    def value_span(self, path: Sequence[str | int]) -> Span:
        return to_span(self.file, self.walk(path)[1])

    def key_span(self, path: Sequence[str | int]) -> Span:
        key_at = self.walk(path)[2]
        if key_at is None:                      # the document itself: point at its first key
            first = next(iter(self.doc.pos.values()), None)
            return to_span(self.file, first[0] if first else self.doc.at)
        return to_span(self.file, key_at)

    def name(self, path: Sequence[str | int]) -> str:
        """How a user calls the place: ``settings``, ``nodes[2]``, ``Intent document``."""
        if not path:
            return f"{self.label} document"
        last = path[-1]
        if isinstance(last, int):
            parent = next((p for p in reversed(path[:-1]) if isinstance(p, str)), "list")
            return f"{excerpt(parent)}[{last}]"
        return excerpt(last)


def _branch_types(branch: dict[str, Any]) -> set[str]:
    if "type" in branch:
        t = branch["type"]
        return set(t) if isinstance(t, list) else {t}
    if "const" in branch:
        return {json_type(branch["const"])}
    if "enum" in branch:
        return {json_type(v) for v in branch["enum"]}
    return set(_TYPE_WORDS)


def _accepts(types: set[str], actual: str) -> bool:
    return actual in types or (actual == "integer" and "number" in types)


def _describe_branches(branches: Sequence[dict[str, Any]]) -> str:
    words: list[str] = []
    for b in branches:
        if "enum" in b:
            words.extend(f'"{v}"' for v in b["enum"])
        else:
            words.extend(_TYPE_WORDS.get(t, t) for t in sorted(_branch_types(b)))
    unique = list(dict.fromkeys(words))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _leaf_errors(err: ValidationError) -> Iterator[ValidationError]:
    """Descend into oneOf/anyOf to the branch the user evidently meant (by JSON type)."""
    if err.validator not in ("oneOf", "anyOf") or not err.context:
        yield err
        return
    branches: list[dict[str, Any]] = list(err.validator_value)
    actual = json_type(err.instance)
    matching = [i for i, b in enumerate(branches) if _accepts(_branch_types(b), actual)]
    if len(matching) != 1:
        yield err
        return
    for sub in err.context:
        if sub.relative_schema_path and sub.relative_schema_path[0] == matching[0]:
            yield from _leaf_errors(sub)


def _message(err: ValidationError, loc: _Locator) -> list[tuple[str, str, Span, str | None]]:
    """(code, message, span, hint) for one leaf error; some errors yield several findings."""
    path = list(err.absolute_path)
    v = err.validator
    code = _CODES.get(str(v), "E0219")
    node, _, _ = loc.walk(path)
    if isinstance(node, dict) and isinstance(err.instance, str) and err.instance in node \
            and v not in ("required", "additionalProperties", "minProperties", "maxProperties"):
        # a propertyNames failure: the key itself is wrong
        kspan = to_span(loc.file, node.pos[err.instance][0]) if isinstance(node, YMap) else loc.value_span(path)
        title = err.schema.get("title", "name")
        return [(code, f'key "{excerpt(err.instance)}" in {loc.name(path)} is not a valid {title}', kspan,
                 err.schema.get("description"))]
    where = loc.name(path)
    if len(path) >= 2 and list(err.absolute_schema_path)[-2:-1] == ["additionalProperties"]:
        where = f'{loc.name(path[:-1])} "{path[-1]}"'        # a free-form map entry: labels "pool"
    inst = err.instance
    if v == "required":
        missing = [p for p in err.validator_value if isinstance(inst, dict) and p not in inst
                   and not (not path and p in loc.skip_top)]
        return [(code, f'missing required property "{p}" in {where}', loc.key_span(path), None) for p in missing]
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        out = []
        for key in inst if isinstance(inst, dict) else ():
            if key in allowed:
                continue
            kspan = to_span(loc.file, inst.pos[key][0]) if isinstance(inst, YMap) else loc.value_span(path)
            hint = "allowed here: " + ", ".join(allowed) if allowed else None
            out.append((code, f'unknown property "{excerpt(key)}" in {where}{did_you_mean(key, allowed)}', kspan, hint))
        return out
    span = loc.value_span(path)
    got = describe_value(inst)
    if v in ("minProperties", "maxProperties"):
        props = ", ".join(sorted(err.schema.get("properties", {})))
        if err.schema.get("maxProperties") == 1:
            return [(code, f"{where} must have exactly one of {props}", span, None)]
        return [(code, err.message, span, None)]
    if v == "type":
        types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        want = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in types)
        return [(code, f"{where} must be {want}, got {got}", span, None)]
    if v in ("oneOf", "anyOf"):
        want = _describe_branches(err.validator_value)
        return [("E0211", f"{where} must be {want}, got {got}", span, err.schema.get("description"))]
    if v == "enum":
        allowed_values = [str(x) for x in err.validator_value]
        message = f"{where} must be one of {', '.join(allowed_values)}, got {got}{did_you_mean(inst, allowed_values)}"
        return [(code, message, span, None)]
    if v == "const":
        want_value = describe_value(err.validator_value)
        return [(code, f"{where} must be {want_value}, got {got}", span, None)]
    if v == "pattern":
        title = err.schema.get("title")
        what = f"a valid {title}" if title else f"of the form {err.validator_value}"
        return [(code, f"{where} {got} is not {what}", span, err.schema.get("description"))]
    if v == "minLength":
        if err.validator_value == 1:
            return [(code, f"{where} must not be empty", span, None)]
        return [(code, f"{where} must be at least {err.validator_value} characters long", span, None)]
    if v == "maxLength":
        return [(code, f"{where} must be at most {err.validator_value} characters long", span, None)]
    bounds = {"minimum": "at least", "maximum": "at most",
              "exclusiveMinimum": "greater than", "exclusiveMaximum": "less than"}
    if v in bounds:
        return [(code, f"{where} must be {bounds[str(v)]} {err.validator_value}, got {got}", span, None)]
    if v in ("minItems", "maxItems"):
        n = err.validator_value
        word = "at least" if v == "minItems" else "at most"
        return [(code, f"{where} must list {word} {n} item{'s' if n != 1 else ''}", span, None)]
    if v == "uniqueItems":
        return [(code, f"{where} must not repeat items", span, None)]
    return [(code, f"{where}: {err.message}", span, None)]


# A list of millions of wrong items would give as many errors, each an object and a message.
MAX_ERRORS_PER_DOCUMENT = 100


def schema_diagnostics(doc: YMap, kind: str, file: str,
                       skip_top: Sequence[str] = ("apiVersion", "kind")) -> list[Diagnostic]:
    """Validate one document against its kind's schema.

    Top-level keys in `skip_top` are checked by the caller (it needs them to
    pick the schema at all), so their errors are not reported twice.
    """
    if is_valid(kind, doc):
        return []
    loc = _Locator(doc, file, kind, skip_top)
    found: dict[tuple[object, ...], Diagnostic] = {}
    for top in validator(kind).iter_errors(doc):
        if len(found) >= MAX_ERRORS_PER_DOCUMENT:      # errors come lazily: stop asking
            last = max(found.values(), key=Diagnostic.sort_key).span
            span = Span.point(last.file, last.line, last.column)
            found[("E0008",)] = error("E0008", f"more than {MAX_ERRORS_PER_DOCUMENT} schema errors in this "
                                               "document; the rest are not reported", span)
            break
        for leaf in _leaf_errors(top):
            path = list(leaf.absolute_path)
            if len(path) == 1 and path[0] in skip_top:
                continue
            for code, message, span, hint in _message(leaf, loc):
                d = error(code, message, span, hint)
                found.setdefault((span, code, message), d)
    return sorted(found.values(), key=Diagnostic.sort_key)
