"""Settling each schema finding by what documents it rejects, not by its spelling.

"Breaking" means: some value valid under the base schema is invalid under the
head.  Each finding is decided on its subject (the two nodes it was found
at, or each side's schema for an added/removed property name):

* proved compatible by `schema_prove` -> INFO (a removed property that stays
  accepted -> WARN: documents that set it still validate, but the schema no
  longer describes it);
* a counter-example found by `schema_witness` (boundary values, then
  deterministic sampling) that the finding's own keyword rejects -> ERR, and
  the value is reported;
* neither -> "maybe": WARN (a loosening rule stays INFO).

A node's subschemas that the walk compares as nodes of their own
(properties, items, paired combinator branches, ...) are replaced by `true`
in its fragment, so a change deep inside a property is settled once, at the
node where it was written.  `default` changes and whole-file rules keep
their catalogue severity: they are about meaning, not validity.

`compare_schemas`, the entry point, is here: it walks both revisions
(`schema_diff.changes`, which knows nothing of verdicts) and settles what
the walk found.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from intentc.diff.schema_diff import CheckKind, DataPath, Lift, SchemaFinding, Subject, changes
from intentc.diff.schema_inline import DROPPED, inline
from intentc.diff.schema_prove import implies, mp, valid
from intentc.diff.schema_refs import Json, Loc, Node, SchemaSet, canonical_json, escape
from intentc.diff.schema_rules import Level
from intentc.diff.schema_witness import SAMPLES, witness

# Rules about meaning or whole files: no validity verdict applies.
KEEP = frozenset({"default-added", "default-changed", "default-removed", "schema-added", "schema-removed",
                  "property-deprecated"})
REMOVALS = frozenset({"property-removed", "deprecated-property-removed"})
LOOSENS = "admits every value it admitted before"
PROVED = "proved: every value valid before stays valid"
STILL_ACCEPTED = "documents that set it stay valid, but the schema no longer describes it"
COUNTER_EXAMPLE = "counter-example: valid before, invalid after"
MAYBE = "maybe: no counter-example in boundary values"
WALKED_LISTS = ("allOf", "anyOf", "oneOf")


def _kw_loc(node: Node, kw: str) -> Loc:
    origin = node.origin.get(kw, node.loc)
    return (origin[0], f"{origin[1]}/{escape(kw)}")


def local(schemas: SchemaSet, node: Node, other: Node) -> Json:
    """`node` as a self-contained fragment, with the subschemas the walk compares separately set to true."""
    out: dict[str, Any] = {}
    kb, ko = node.keywords, other.keywords
    for kw, v in sorted(kb.items()):
        if kw in ("$ref", "items"):
            continue
        if kw == "properties" and isinstance(v, dict):
            out[kw] = {k: True for k in v}
        elif kw == "patternProperties" and isinstance(v, dict):
            theirs = mp(ko, kw)
            out[kw] = {p: True if p in theirs else
                       inline(schemas, s, (_kw_loc(node, kw)[0], f"{_kw_loc(node, kw)[1]}/{escape(p)}"))
                       for p, s in v.items()}
        elif kw == "additionalProperties" and _walked_additional(v, ko.get(kw, True)):
            continue
        elif kw == "prefixItems" and isinstance(v, list) and isinstance(ko.get(kw), list):
            out[kw] = [True] * len(v)
        elif kw in WALKED_LISTS and isinstance(v, list) and isinstance(ko.get(kw), list) \
                and len(v) == len(ko[kw]):
            continue
        elif kw not in DROPPED:
            out[kw] = inline(schemas, {kw: v}, node.origin.get(kw, node.loc))[kw]
    return out


def _walked_additional(mine: Json, theirs: Json) -> bool:
    return (mine is False) == (theirs is False) and (isinstance(mine, dict) or isinstance(theirs, dict))


def name_schema(schemas: SchemaSet, node: Node, name: str) -> Json:
    """What `node` asks of the value of property `name`, self-contained."""
    import re
    parts: list[Json] = []
    props = node.keywords.get("properties")
    if isinstance(props, dict) and name in props:
        loc = _kw_loc(node, "properties")
        parts.append(inline(schemas, props[name], (loc[0], f"{loc[1]}/{escape(name)}")))
    pats = node.keywords.get("patternProperties")
    matched = False
    for p, s in sorted(pats.items()) if isinstance(pats, dict) else ():
        try:
            hit = re.search(p, name) is not None
        except re.error:
            hit = False
        if hit:
            matched = True
            loc = _kw_loc(node, "patternProperties")
            parts.append(inline(schemas, s, (loc[0], f"{loc[1]}/{escape(p)}")))
    if not parts and not matched:
        add = node.keywords.get("additionalProperties", True)
        parts.append(inline(schemas, add, _kw_loc(node, "additionalProperties")))
    parts = [p for p in parts if p is not True and p != {}]
    if any(p is False for p in parts):
        return False
    return parts[0] if len(parts) == 1 else ({"allOf": parts} if parts else True)


def _explains(f: SchemaFinding) -> Callable[[Json], bool]:
    """A counter-example is this finding's when the finding's own keyword rejects it."""
    check = f.check
    if check.kind is CheckKind.INVALID and isinstance(check.head, dict) and "$ref" not in check.head:
        head = check.head
        return lambda v: not valid(head, v)
    if f.rule.name in ("required-property-added", "property-became-required") and isinstance(f.new, str):
        name = f.new
        return lambda v: isinstance(v, dict) and name not in v
    return lambda v: True


Concrete = tuple[str | int, ...]


class _Context:
    """One side's whole document schemas: does a value, placed at its instance location
    in an otherwise empty document, fail there?  Errors above that location (a missing
    sibling of an ancestor) are not the value's and are ignored; errors at or below it
    include the constraints ancestors put on that location (a parent's `allOf`)."""

    def __init__(self, schemas: SchemaSet) -> None:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        self.schemas = schemas
        self.registry: Any = Registry().with_resources(
            (schemas.uris[p], Resource.from_contents(doc, default_specification=DRAFT202012))
            for p, doc in schemas.docs.items() if isinstance(doc, (dict, bool)))
        self.validators: dict[str, Any] = {}

    def errors(self, root: str, doc: Json) -> set[tuple[Concrete, str]] | None:
        """(instance location, keyword) of each error; None when the root is not on this
        side or cannot be evaluated."""
        from jsonschema import Draft202012Validator
        if root not in self.schemas.docs:
            return None
        v = self.validators.get(root)
        if v is None:
            v = self.validators[root] = Draft202012Validator({"$ref": self.schemas.uri_of((root, ""))},
                                                             registry=self.registry)
        try:
            return {(tuple(e.absolute_path), str(e.validator)) for e in v.iter_errors(doc)}
        except Exception:            # an unresolvable reference or a bad pattern
            return None


def _below(errors: set[tuple[Concrete, str]], path: Concrete) -> bool:
    return any(p[:len(path)] == path for p, _ in errors)


def _placements(value: Json, pattern: tuple[str, ...], keys: tuple[str, ...]) -> list[tuple[Json, Concrete]]:
    """`value` wrapped into documents that hold it at `pattern` ("*": an array item, first
    or later, or a map entry under each of `keys`)."""
    out: list[tuple[Json, Concrete]] = [(value, ())]
    for tok in reversed(pattern):
        nxt: list[tuple[Json, Concrete]] = []
        for doc, path in out:
            if tok == "*":
                nxt += [([doc], (0,) + path), ([None, None, None, doc], (3,) + path)]
                nxt += [({k: doc}, (k,) + path) for k in keys]
            elif tok.isdigit() and int(tok) < 8:
                nxt += [([None] * int(tok) + [doc], (int(tok),) + path), ({tok: doc}, (tok,) + path)]
            else:
                nxt.append(({tok: doc}, (tok,) + path))
        out = nxt[:16]
    return out


def _pattern_names(schemas: SchemaSet) -> tuple[str, ...]:
    """A property name matching each `patternProperties` pattern of the schemas."""
    from intentc.diff.schema_witness import name_for
    found: set[str] = set()

    def walk(node: Json) -> None:
        if isinstance(node, dict):
            for p in mp(node, "patternProperties"):
                name = name_for(p)
                if name is not None:
                    found.add(name)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    for doc in schemas.docs.values():
        walk(doc)
    return ("zz-key",) + tuple(sorted(found))[:4]


class Settler:
    """Verdicts for the findings of one comparison, with fragments and proofs cached per subject."""

    def __init__(self, base: SchemaSet, head: SchemaSet, sample: bool = True) -> None:
        self.base, self.head, self.sample = base, head, sample
        self.contexts = (_Context(base), _Context(head))
        self.keys: tuple[str, ...] | None = None
        self.fragments: dict[tuple[Loc, Loc, str | None], tuple[Json, Json, Json, bool]] = {}

    def _fragments(self, s: Subject) -> tuple[Json, Json, Json, bool]:
        """(the whole base node, the base and head fragments the verdict compares, proved compatible).
        Counter-examples are drawn from the whole base node, so each one is a value the
        base really accepts there, children included."""
        key = (s.base.loc, s.head.loc, s.name)
        hit = self.fragments.get(key)
        if hit is None:
            if s.name is not None:
                b, h = name_schema(self.base, s.base, s.name), name_schema(self.head, s.head, s.name)
                whole = b
            else:
                b, h = local(self.base, s.base, s.head), local(self.head, s.head, s.base)
                whole = inline(self.base, self.base.node(s.base.loc), s.base.loc)
            hit = self.fragments[key] = (whole, b, h, implies(b, h))
        return hit

    def _in_context(self, f: SchemaFinding, explains: Callable[[Json], bool],
                    pattern: DataPath) -> Callable[[Json], bool]:
        """A counter-example must also break a document: placed at its instance location
        `pattern`, no error there under the whole base schema (ancestors' constraints
        included), and an error the base did not have under the head, at the location or
        its container (`items: false`, `additionalProperties: false` report there)."""
        if not f.uses:
            return explains
        root = f.uses[0].root
        base_ctx, head_ctx = self.contexts
        if self.keys is None:
            self.keys = _pattern_names(self.base)
        keys = self.keys

        def holds(v: Json) -> bool:
            if not explains(v):
                return False
            for doc, path in _placements(v, pattern, keys):
                before, after = base_ctx.errors(root, doc), head_ctx.errors(root, doc)
                if before is None or after is None:
                    return True
                if not _below(before, path) and _below(after - before, path[:-1] if path else path):
                    return True
            return False
        return holds

    def _whole(self, lift: Lift) -> tuple[Json, Json]:
        key = (lift.base.loc, lift.head.loc, "\x00lift")
        hit = self.fragments.get(key)
        if hit is None:
            b = inline(self.base, self.base.node(lift.base.loc), lift.base.loc)
            h = inline(self.head, self.head.node(lift.head.loc), lift.head.loc)
            hit = self.fragments[key] = (b, b, h, implies(b, h))
        return hit[1], hit[2]

    def settle(self, f: SchemaFinding, subject: Subject | None) -> SchemaFinding:
        static = f.rule.level
        if subject is None or f.rule.name in KEEP:
            return dataclasses.replace(f, level=static)
        lift = subject.lift
        exclusive = lift is not None and lift.exclusive
        loosening = static is Level.INFO and f.rule.name != "property-added"
        if loosening and not exclusive:
            return dataclasses.replace(f, level=Level.INFO, reason=LOOSENS)
        whole, b, h, proved = self._fragments(subject)
        if lift is not None and exclusive:
            proved = implies(*self._whole(lift))      # a loosened oneOf branch may overlap another
        if proved:
            if f.rule.name in REMOVALS:
                return dataclasses.replace(f, level=Level.WARN, reason=STILL_ACCEPTED)
            return dataclasses.replace(f, level=Level.INFO, reason=PROVED)
        extra = (b,) + tuple(x for x in (f.check.head, f.check.base) if isinstance(x, dict) and "$ref" not in x)
        explains = (lambda v: True) if loosening else _explains(f)
        at = f.uses[0].data_path if f.uses else ()
        if f.check.kind is CheckKind.ABSENT:
            at = at[:-1]                       # a missing property: the example is the object lacking it
        if lift is None:
            found, example = witness(whole, h, self._in_context(f, explains, at), extra, sample=self.sample)
        else:
            # inside a combinator: the example is the value of the node holding it, and the
            # part of it at the finding's location is what the finding's keyword rejects
            lb, lh = self._whole(lift)
            rel = at[len(lift.data_path):]

            def lifted(v: Json) -> bool:
                return any(explains(part) for part in _parts(v, rel))
            found, example = witness(lb, lh, self._in_context(f, lifted, lift.data_path), extra + (whole, h),
                                     sample=self.sample)
            at = lift.data_path
        if found:
            return dataclasses.replace(f, level=Level.ERR, example=(example,), example_at=at,
                                       reason=COUNTER_EXAMPLE)
        level = Level.INFO if static is Level.INFO else Level.WARN
        return dataclasses.replace(f, level=level, reason=MAYBE + (f" or {SAMPLES} samples" if self.sample else ""))


def _parts(v: Json, rel: DataPath) -> list[Json]:
    """The values inside `v` at the relative instance location `rel` ("*": every item / entry)."""
    out = [v]
    for tok in rel:
        nxt: list[Json] = []
        for x in out:
            if tok == "*":
                nxt += list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, list) else []
            elif isinstance(x, dict) and tok in x:
                nxt.append(x[tok])
            elif isinstance(x, list) and tok.isdigit() and int(tok) < len(x):
                nxt.append(x[int(tok)])
        out = nxt
    return out


# --------------------------------------------------------------------------
# Entry point: the walk's findings, each settled
# --------------------------------------------------------------------------

def compare_schemas(base_docs: Mapping[str, Json], head_docs: Mapping[str, Json],
                    sample: bool = True) -> list[SchemaFinding]:
    """Every classified change between two revisions of a schema directory, each
    with its verdict (`SchemaFinding.severity`).  Keys are schema file paths (the
    same path on both sides = the same schema).  `sample=False` decides by proof
    and boundary values only, without hypothesis sampling."""
    base, head = SchemaSet.of(base_docs), SchemaSet.of(head_docs)
    found, subjects = changes(base, head)
    settler = Settler(base, head, sample)
    settled = [settler.settle(f, subjects.get(key)) for key, f in sorted(found.items())]
    return sorted(settled, key=lambda f: (-f.severity.rank, f.schema, f.pointer, f.rule.id,
                                          canonical_json(f.old), canonical_json(f.new)))
