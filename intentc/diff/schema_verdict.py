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
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from intentc.diff.schema_diff import CheckKind, SchemaFinding, Subject
from intentc.diff.schema_inline import DROPPED, inline
from intentc.diff.schema_prove import implies, mp, valid
from intentc.diff.schema_refs import Json, Loc, Node, SchemaSet, escape
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


class Settler:
    """Verdicts for the findings of one comparison, with fragments and proofs cached per subject."""

    def __init__(self, base: SchemaSet, head: SchemaSet, sample: bool = True) -> None:
        self.base, self.head, self.sample = base, head, sample
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

    def settle(self, f: SchemaFinding, subject: Subject | None) -> SchemaFinding:
        static = f.rule.level
        if subject is None or f.rule.name in KEEP:
            return dataclasses.replace(f, level=static)
        if static is Level.INFO and f.rule.name != "property-added":
            return dataclasses.replace(f, level=Level.INFO, reason=LOOSENS)
        whole, b, h, proved = self._fragments(subject)
        if proved:
            if f.rule.name in REMOVALS:
                return dataclasses.replace(f, level=Level.WARN, reason=STILL_ACCEPTED)
            return dataclasses.replace(f, level=Level.INFO, reason=PROVED)
        extra = (b,) + tuple(x for x in (f.check.head, f.check.base) if isinstance(x, dict) and "$ref" not in x)
        explains = _explains(f)
        if subject.outer is not None:
            # inside a combinator branch: the value must break the node holding the combinator,
            # not only the branch (another anyOf branch may still accept it)
            ob = inline(self.base, self.base.node(subject.outer[0].loc), subject.outer[0].loc)
            oh = inline(self.head, self.head.node(subject.outer[1].loc), subject.outer[1].loc)
            own = explains
            extra += (ob,)

            def explains(v: Json) -> bool:
                return own(v) and valid(ob, v) and not valid(oh, v)
        found, example = witness(whole, h, explains, extra, sample=self.sample)
        if found:
            return dataclasses.replace(f, level=Level.ERR, example=(example,),
                                       reason=COUNTER_EXAMPLE)
        level = Level.INFO if static is Level.INFO else Level.WARN
        return dataclasses.replace(f, level=level, reason=MAYBE + (f" or {SAMPLES} samples" if self.sample else ""))
