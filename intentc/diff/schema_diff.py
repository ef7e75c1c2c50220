"""Comparing two revisions of the JSON Schemas, keyword by keyword.

Both sides are walked in parallel from each document schema (the root of a
file), following `$ref`s across files, so a change inside a shared `$defs`
entry is found once per place that uses it, with the instance location it
governs ("data path": ``spec.constraints.gpus.count``; ``*`` for array items
and open maps).  The data path is what lets `schema_impact` find the YAML
documents a finding actually breaks.

A finding names the canonical place of the change (file + JSON Pointer of
the node that holds the keyword, after `$ref` resolution) and is
fingerprinted from rule id, file, pointer and the old/new values only: line
numbers move with every edit, fingerprints must not, so that a reviewer's
acknowledgement survives later commits of the same pull request.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from intentc.diff.schema_refs import (
    Json,
    Loc,
    Node,
    SchemaSet,
    canonical_json,
    effective,
    escape,
)
from intentc.diff.schema_prove import lower_ok, numeric_interval, upper_ok
from intentc.diff.schema_rules import BOUNDS, INTERVAL_SIDES, Level, Rule, rule

DataPath = tuple[str, ...]            # instance location pattern, "*" = any key / index

# Keywords that only annotate: changing them changes no document's validity.
ANNOTATIONS = frozenset({
    "title", "description", "examples", "$comment", "readOnly", "writeOnly", "$schema", "$id",
    "$anchor", "$dynamicAnchor", "$defs", "definitions", "deprecated", "$vocabulary",
    "contentEncoding", "contentMediaType",
})
# Keywords this module classifies itself; everything else falls to "keyword-changed".
HANDLED = frozenset({
    "$ref", "type", "enum", "const", "default", "pattern", "required", "properties",
    "additionalProperties", "patternProperties", "items", "prefixItems", "oneOf", "anyOf", "allOf",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
    "dependentRequired", "propertyNames", "not", "if", "then", "else",
}) | frozenset(BOUNDS)


class CheckKind(enum.Enum):
    """How to tell whether a document is affected by a finding."""

    PRESENT = "present"    # the value at the data path exists (a removed property is used)
    ABSENT = "absent"      # the parent object exists but lacks the key (new requirement, default applies)
    INVALID = "invalid"    # the value was valid under `base` and is invalid under `head`


@dataclass(frozen=True)
class Check:
    kind: CheckKind
    head: Json = None      # schema fragment (may be {"$ref": uri} into the head schemas)
    base: Json = None      # schema fragment into the base schemas, None = no base condition


@dataclass(frozen=True)
class Use:
    """One place a finding applies to: documents validated by `root`, at `data_path`,
    provided they matched the composition branches in `guards` in the base."""

    root: str
    data_path: DataPath
    guards: tuple[tuple[DataPath, str], ...] = ()   # (data path, base schema uri) each must validate


@dataclass(frozen=True, eq=False)
class SchemaFinding:
    rule: Rule
    schema: str            # file holding the changed node (head file; base file for removals)
    pointer: str           # JSON Pointer of that node inside `schema`
    side: str              # "head" | "base": which revision `schema`/`pointer` refer to
    old: Json
    new: Json
    message: str
    check: Check
    uses: tuple[Use, ...] = ()
    level: Level | None = None       # the verdict; None until settled (then the rule's own level applies)
    example: tuple[Json, ...] = ()   # a counter-example: a value the base accepts and the head rejects
    example_at: DataPath = ()        # ... at this instance location
    reason: str = ""                 # how the verdict was reached (proved / counter-example / not decided)

    @property
    def severity(self) -> Level:
        """The verdict when one was reached, else the rule's catalogue severity."""
        return self.level if self.level is not None else self.rule.level

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.rule.id, self.schema, self.pointer, self.old, self.new)


def fingerprint(rule_id: str, schema: str, pointer: str, old: Json, new: Json) -> str:
    """Stable across commits: no line numbers, no ordering accidents."""
    payload = "\x1f".join([rule_id, schema, pointer, canonical_json(old), canonical_json(new)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------

_JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


def _types(node: Node) -> frozenset[str] | None:
    t = node.keywords.get("type")
    if t is None:
        return None
    return frozenset([t] if isinstance(t, str) else t)


def _covers(types: frozenset[str] | None, t: str) -> bool:
    return types is None or t in types or (t == "integer" and "number" in types)


def _subset(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Every value of a type in `a` is accepted by `b`."""
    if a is None:
        return b is None
    return all(_covers(b, t) for t in a)


@dataclass(frozen=True)
class Lift:
    """The outermost node holding a combinator a finding is inside of.  A change inside
    an `anyOf`/`oneOf` branch breaks a document only if the whole combinator rejects it
    (another branch may accept it; a loosened `oneOf` branch may now overlap another),
    so such findings are settled on this node, with the finding at `data_path`'s end."""

    base: Node
    head: Node
    data_path: DataPath
    exclusive: bool          # a `oneOf` on the way: loosening a branch can break documents


@dataclass(frozen=True)
class Subject:
    """What a finding's verdict is decided on: the two schema nodes it was found at
    or, for a property added or removed, each side's schema for that property name."""

    base: Node
    head: Node
    name: str | None = None
    lift: Lift | None = None                 # inside a combinator branch: where the verdict is decided


@dataclass
class _Walk:
    base: SchemaSet
    head: SchemaSet
    root: str
    found: dict[str, SchemaFinding] = field(default_factory=dict)
    subjects: dict[str, Subject] = field(default_factory=dict)
    node: tuple[Node, Node] | None = None
    lift: Lift | None = None          # the combinator holder the current node is inside of
    next_lift: Lift | None = None     # set by `_composition` for the branch it compares next

    def emit(self, name: str, side: str, loc: Loc, old: Json, new: Json, message: str,
             check: Check, dpath: DataPath, guards: tuple[tuple[DataPath, str], ...],
             subject: Subject | None = None) -> None:
        r = rule(name)
        use = Use(self.root, dpath, guards)
        candidate = SchemaFinding(r, loc[0], loc[1], side, old, new, message, check, (use,))
        key = candidate.fingerprint
        prior = self.found.get(key)
        if key not in self.subjects and (subject is not None or self.node is not None):
            self.subjects[key] = subject if subject is not None else \
                Subject(*self.node, lift=self.lift)  # type: ignore[misc]
        if prior is None:
            self.found[key] = candidate
        elif use not in prior.uses:
            self.found[key] = SchemaFinding(r, prior.schema, prior.pointer, prior.side, prior.old, prior.new,
                                            prior.message, prior.check, prior.uses + (use,))

    def compare(self, braw: Json, hraw: Json, bloc: Loc, hloc: Loc, dpath: DataPath,
                guards: tuple[tuple[DataPath, str], ...], stack: frozenset[tuple[Loc, Loc]]) -> None:
        b, h = effective(self.base, braw, bloc), effective(self.head, hraw, hloc)
        lift, self.next_lift = self.next_lift or self.lift, None
        if (b.loc, h.loc) in stack:
            return                                  # a recursive schema: already being compared
        stack = stack | {(b.loc, h.loc)}
        where = ".".join(dpath) or "(document)"
        env = (dpath, guards)
        outer, self.node = self.node, (b, h)
        outer_lift, self.lift = self.lift, lift
        self._refs(b, h, hloc, where, env)
        self._type(b, h, where, env)
        self._values(b, h, where, env)
        self._intervals(b, h, where, env)
        self._bounds(b, h, where, env)
        self._keywords(b, h, where, env)
        self._pattern(b, h, where, env)
        self._object(b, h, where, dpath, guards, stack)
        self._arrays(b, h, dpath, guards, stack)
        self._composition(b, h, where, dpath, guards, stack)
        self._other(b, h, where, env)
        self.node, self.lift = outer, outer_lift

    # -- helpers ------------------------------------------------------------
    def _kw_loc(self, node: Node, kw: str) -> Loc:
        base_loc = node.origin.get(kw, node.loc)
        return (base_loc[0], f"{base_loc[1]}/{escape(kw)}")

    def _node_check(self, b: Node, h: Node) -> Check:
        return Check(CheckKind.INVALID, {"$ref": self.head.uri_of(h.loc)}, {"$ref": self.base.uri_of(b.loc)})

    # -- keyword families ---------------------------------------------------
    def _refs(self, b: Node, h: Node, written: Loc, where: str, env: tuple[DataPath, Any]) -> None:
        """`written`: where the head's (first) `$ref` is, before resolution."""
        if b.refs and h.refs and b.refs[0] != h.refs[0]:
            old, new = b.refs[0].rsplit("/", 1)[-1], h.refs[0].rsplit("/", 1)[-1]
            self.emit("ref-changed", "head", (written[0], f"{written[1]}/$ref"), b.refs[0], h.refs[0],
                      f"{where}: $ref now points at {new} instead of {old}",
                      self._node_check(b, h), *env)

    def _type(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        tb, th = _types(b), _types(h)
        if tb == th:
            return
        old, new = b.keywords.get("type"), h.keywords.get("type")
        loc = self._kw_loc(h, "type") if "type" in h.keywords else self._kw_loc(b, "type")
        side = "head" if "type" in h.keywords else "base"
        check = Check(CheckKind.INVALID, {"type": new} if new is not None else {},
                      {"type": old} if old is not None else None)
        if _subset(tb, th):
            name = "type-widened"
        elif _subset(th, tb):
            name = "type-narrowed"
        else:
            name = "type-changed"
        self.emit(name, side, loc, old, new, f"{where}: type {_show(old)} -> {_show(new)}", check, *env)

    def _values(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        eb, eh = b.keywords.get("enum"), h.keywords.get("enum")
        if isinstance(eb, list) and isinstance(eh, list):
            hset = {canonical_json(v) for v in eh}
            bset = {canonical_json(v) for v in eb}
            for v in sorted(eb, key=canonical_json):
                if canonical_json(v) not in hset:
                    self.emit("enum-value-removed", "head", self._kw_loc(h, "enum"), v, None,
                              f"{where}: value {_show(v)} is no longer allowed",
                              Check(CheckKind.INVALID, {"enum": eh}, {"enum": eb}), *env)
            for v in sorted(eh, key=canonical_json):
                if canonical_json(v) not in bset:
                    self.emit("enum-value-added", "head", self._kw_loc(h, "enum"), None, v,
                              f"{where}: value {_show(v)} is now allowed",
                              Check(CheckKind.INVALID, {"enum": eh}, {"enum": eb}), *env)
        elif eh is not None and eb is None:
            self.emit("enum-added", "head", self._kw_loc(h, "enum"), None, eh,
                      f"{where}: values restricted to {_show(eh)}",
                      Check(CheckKind.INVALID, {"enum": eh}), *env)
        elif eb is not None and eh is None:
            self.emit("enum-removed", "base", self._kw_loc(b, "enum"), eb, None,
                      f"{where}: enum restriction lifted", Check(CheckKind.INVALID, {}), *env)
        cb, ch = b.keywords.get("const", _MISSING), h.keywords.get("const", _MISSING)
        if ch is not _MISSING and (cb is _MISSING or canonical_json(cb) != canonical_json(ch)):
            self.emit("const-changed", "head", self._kw_loc(h, "const"), None if cb is _MISSING else cb, ch,
                      f"{where}: must now be {_show(ch)}", Check(CheckKind.INVALID, {"const": ch}), *env)
        elif cb is not _MISSING and ch is _MISSING:
            self.emit("const-removed", "base", self._kw_loc(b, "const"), cb, None,
                      f"{where}: const {_show(cb)} lifted", Check(CheckKind.INVALID, {}), *env)
        db, dh = b.keywords.get("default", _MISSING), h.keywords.get("default", _MISSING)
        absent = Check(CheckKind.ABSENT)
        if db is _MISSING and dh is not _MISSING:
            self.emit("default-added", "head", self._kw_loc(h, "default"), None, dh,
                      f"{where}: default {_show(dh)} added", absent, *env)
        elif db is not _MISSING and dh is _MISSING:
            self.emit("default-removed", "head", (h.loc[0], h.loc[1] + "/default"), db, None,
                      f"{where}: default {_show(db)} removed", absent, *env)
        elif db is not _MISSING and canonical_json(db) != canonical_json(dh):
            self.emit("default-changed", "head", self._kw_loc(h, "default"), db, dh,
                      f"{where}: default {_show(db)} -> {_show(dh)}", absent, *env)

    def _intervals(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        """minimum/exclusiveMinimum and maximum/exclusiveMaximum as the interval they describe:
        `exclusiveMaximum: 10` -> `maximum: 10` admits one more value, it tightens nothing."""
        integer = _types(b) == {"integer"} and _types(h) == {"integer"}
        lo_b, hi_b = numeric_interval(_numeric(b.keywords), integer)
        lo_h, hi_h = numeric_interval(_numeric(h.keywords), integer)
        for (side, inclusive, exclusive), vb, vh, ok in (
                (INTERVAL_SIDES[0], lo_b, lo_h, lower_ok), (INTERVAL_SIDES[1], hi_b, hi_h, upper_ok)):
            kb = {k: b.keywords[k] for k in (inclusive, exclusive) if _is_number(b.keywords.get(k))}
            kh = {k: h.keywords[k] for k in (inclusive, exclusive) if _is_number(h.keywords.get(k))}
            if kb == kh:
                continue
            tightened = not ok(vb, vh)
            if not tightened and ok(vh, vb):
                continue                                  # the same bound, spelt differently
            kw = _defining(kh or kb, exclusive)
            tight, loose, _ = BOUNDS[kw]
            rname = tight if tightened else loose
            if set(kb) == set(kh) == {kw}:
                old, new, text = kb[kw], kh[kw], f"{kw} {_show(kb[kw])} -> {_show(kh[kw])}"
            elif len(kb) <= 1 and len(kh) <= 1 and set(kb) | set(kh) == {kw}:
                old, new = kb.get(kw), kh.get(kw)
                text = f"{kw} {_show(old)} -> {_show(new)}"
            else:
                old, new = kb or None, kh or None
                text = f"{_describe(kb, side)} -> {_describe(kh, side)}"
            loc = self._kw_loc(h, kw) if kw in h.keywords else (h.loc[0], f"{h.loc[1]}/{kw}")
            self.emit(rname, "head", loc, old, new, f"{where}: {text}",
                      Check(CheckKind.INVALID, kh, kb or None), *env)

    def _keywords(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        """multipleOf, uniqueItems, dependentRequired, propertyNames, not, if/then/else."""
        mb, mh = b.keywords.get("multipleOf"), h.keywords.get("multipleOf")
        if mb != mh and _number_or_none(mb) and _number_or_none(mh):
            tightened = mh is not None and (mb is None or not _divides(mh, mb))
            loc = self._kw_loc(h, "multipleOf") if mh is not None else (h.loc[0], h.loc[1] + "/multipleOf")
            self.emit("multiple-of-tightened" if tightened else "multiple-of-loosened", "head", loc, mb, mh,
                      f"{where}: multipleOf {_show(mb)} -> {_show(mh)}",
                      Check(CheckKind.INVALID, {"multipleOf": mh} if mh is not None else {},
                            {"multipleOf": mb} if mb is not None else None), *env)
        ub, uh = b.keywords.get("uniqueItems") is True, h.keywords.get("uniqueItems") is True
        if ub != uh:
            loc = self._kw_loc(h, "uniqueItems") if "uniqueItems" in h.keywords \
                else (h.loc[0], h.loc[1] + "/uniqueItems")
            self.emit("unique-items-added" if uh else "unique-items-removed", "head", loc, ub, uh,
                      f"{where}: uniqueItems {_show(ub)} -> {_show(uh)}",
                      Check(CheckKind.INVALID, {"uniqueItems": uh}, {"uniqueItems": ub}), *env)
        db, dh = _props(b.keywords.get("dependentRequired")), _props(h.keywords.get("dependentRequired"))
        for key in sorted(set(db) | set(dh)):
            need_b, need_h = set(_strs(db.get(key))), set(_strs(dh.get(key)))
            if need_b == need_h:
                continue
            added = not need_h <= need_b
            loc = self._kw_loc(h, "dependentRequired") if dh else (h.loc[0], h.loc[1] + "/dependentRequired")
            self.emit("dependency-added" if added else "dependency-removed", "head", loc, {key: sorted(need_b)},
                      {key: sorted(need_h)}, f"{where}: with {key}, required {_show(sorted(need_b))} -> "
                      f"{_show(sorted(need_h))}",
                      Check(CheckKind.INVALID, {"dependentRequired": {key: sorted(need_h)}},
                            {"dependentRequired": {key: sorted(need_b)}}), *env)
        for kws, name in ((("propertyNames",), "property-names-changed"), (("not",), "not-changed"),
                          (("if", "then", "else"), "conditional-changed")):
            vb = {k: b.keywords[k] for k in kws if k in b.keywords}
            vh = {k: h.keywords[k] for k in kws if k in h.keywords}
            if canonical_json(vb) == canonical_json(vh):
                continue
            kw = next((k for k in kws if k in vh), kws[0])
            loc = self._kw_loc(h, kw) if kw in h.keywords else (h.loc[0], f"{h.loc[1]}/{kw}")
            old = vb.get(kws[0]) if len(kws) == 1 else (vb or None)
            new = vh.get(kws[0]) if len(kws) == 1 else (vh or None)
            self.emit(name, "head", loc, old, new, f"{where}: {'/'.join(kws)} {_show(old)} -> {_show(new)}",
                      self._node_check(b, h), *env)

    def _bounds(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        for kw, (tight, loose, larger_is_stricter) in BOUNDS.items():
            if kw in _NUMERIC:
                continue
            vb, vh = b.keywords.get(kw), h.keywords.get(kw)
            if vb == vh or not _number_or_none(vb) or not _number_or_none(vh):
                continue
            if vh is None:
                stricter = False
            elif vb is None:
                stricter = True
            else:
                stricter = (vh > vb) == larger_is_stricter
            loc = self._kw_loc(h, kw) if vh is not None else (h.loc[0], f"{h.loc[1]}/{kw}")
            check = Check(CheckKind.INVALID, {kw: vh} if vh is not None else {},
                          {kw: vb} if vb is not None else None)
            self.emit(tight if stricter else loose, "head", loc, vb, vh,
                      f"{where}: {kw} {_show(vb)} -> {_show(vh)}", check, *env)

    def _pattern(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        pb, ph = b.keywords.get("pattern"), h.keywords.get("pattern")
        if pb == ph:
            return
        check = Check(CheckKind.INVALID, {"pattern": ph} if ph is not None else {},
                      {"pattern": pb} if pb is not None else None)
        if pb is None:
            self.emit("pattern-added", "head", self._kw_loc(h, "pattern"), None, ph,
                      f"{where}: must now match {ph!r}", check, *env)
        elif ph is None:
            self.emit("pattern-removed", "head", (h.loc[0], h.loc[1] + "/pattern"), pb, None,
                      f"{where}: pattern {pb!r} lifted", check, *env)
        else:
            self.emit("pattern-changed", "head", self._kw_loc(h, "pattern"), pb, ph,
                      f"{where}: pattern {pb!r} -> {ph!r}", check, *env)

    def _object(self, b: Node, h: Node, where: str, dpath: DataPath,
                guards: tuple[tuple[DataPath, str], ...], stack: frozenset[tuple[Loc, Loc]]) -> None:
        pb = _props(b.keywords.get("properties"))
        ph = _props(h.keywords.get("properties"))
        rb = set(_strs(b.keywords.get("required")))
        rh = set(_strs(h.keywords.get("required")))
        for name in sorted(set(pb) | set(ph) | rb | rh):
            child = dpath + (name,)
            cwhere = ".".join(child)
            ob, oh = b.origin.get("properties", b.loc), h.origin.get("properties", h.loc)
            ploc_b = (ob[0], f"{ob[1]}/properties/{escape(name)}")
            ploc_h = (oh[0], f"{oh[1]}/properties/{escape(name)}")
            newly_required = name in rh and name not in rb
            if name in pb and name not in ph:
                deprecated = bool(effective(self.base, pb[name], ploc_b).keywords.get("deprecated"))
                self.emit("deprecated-property-removed" if deprecated else "property-removed", "base", ploc_b,
                          name, None, f"{cwhere}: property removed" + (" (it was deprecated)" if deprecated else ""),
                          Check(CheckKind.PRESENT), child, guards, Subject(b, h, name, self.lift))
            elif name in ph and name not in pb:
                if newly_required:
                    self.emit("required-property-added", "head", ploc_h, None, name,
                              f"{cwhere}: new required property", Check(CheckKind.ABSENT), child, guards)
                else:
                    self.emit("property-added", "head", ploc_h, None, name, f"{cwhere}: new optional property",
                              Check(CheckKind.PRESENT), child, guards, Subject(b, h, name, self.lift))
            elif newly_required and name not in pb:
                self.emit("required-property-added", "head", self._kw_loc(h, "required"), None, name,
                          f"{cwhere}: new required property", Check(CheckKind.ABSENT), child, guards)
            if newly_required and name in pb:
                self.emit("property-became-required", "head", self._kw_loc(h, "required"), None, name,
                          f"{cwhere}: now required", Check(CheckKind.ABSENT), child, guards)
            elif name in rb and name not in rh:
                self.emit("property-became-optional", "head", self._kw_loc(h, "required"), name, None,
                          f"{cwhere}: now optional", Check(CheckKind.PRESENT), child, guards)
            if name in pb and name in ph:
                db = bool(effective(self.base, pb[name], ploc_b).keywords.get("deprecated"))
                dh = bool(effective(self.head, ph[name], ploc_h).keywords.get("deprecated"))
                if dh and not db:
                    self.emit("property-deprecated", "head", ploc_h, False, True, f"{cwhere}: deprecated",
                              Check(CheckKind.PRESENT), child, guards)
                self.compare(pb[name], ph[name], ploc_b, ploc_h, child, guards, stack)
        self._additional(b, h, where, dpath, guards, stack, ph)

    def _additional(self, b: Node, h: Node, where: str, dpath: DataPath,
                    guards: tuple[tuple[DataPath, str], ...], stack: frozenset[tuple[Loc, Loc]],
                    ph: dict[str, Json]) -> None:
        ab, ah = b.keywords.get("additionalProperties", True), h.keywords.get("additionalProperties", True)
        closed_b, closed_h = ab is False, ah is False
        if closed_h and not closed_b:
            known = {"properties": {k: True for k in ph}, "additionalProperties": False}
            if isinstance(h.keywords.get("patternProperties"), dict):
                known["patternProperties"] = {k: True for k in h.keywords["patternProperties"]}
            self.emit("additional-properties-closed", "head", self._kw_loc(h, "additionalProperties"), ab, False,
                      f"{where}: unknown properties are now rejected",
                      Check(CheckKind.INVALID, known, None), dpath, guards)
        elif closed_b and not closed_h:
            self.emit("additional-properties-opened", "head",
                      (h.loc[0], h.loc[1] + "/additionalProperties"), False, ah,
                      f"{where}: unknown properties are now accepted", Check(CheckKind.INVALID, {}), dpath, guards)
        elif isinstance(ab, dict) or isinstance(ah, dict):
            self.compare(ab, ah, self._kw_loc(b, "additionalProperties"), self._kw_loc(h, "additionalProperties"),
                         dpath + ("*",), guards, stack)
        ppb, pph = b.keywords.get("patternProperties"), h.keywords.get("patternProperties")
        only = sorted(set(_props(ppb)) ^ set(_props(pph)))
        for pat in only:
            added = pat in _props(pph)
            loc = self._kw_loc(h, "patternProperties") if added else (h.loc[0], h.loc[1] + "/patternProperties")
            self.emit("keyword-changed", "head", (loc[0], f"{loc[1]}/{escape(pat)}") if added else loc,
                      None if added else {pat: _props(ppb)[pat]}, {pat: _props(pph)[pat]} if added else None,
                      f"{where}: patternProperties {pat!r} " + ("added" if added else "removed"),
                      self._node_check(b, h), dpath, guards)
        if isinstance(ppb, dict) and isinstance(pph, dict):
            for pat in sorted(set(ppb) & set(pph)):
                self.compare(ppb[pat], pph[pat], (self._kw_loc(b, "patternProperties")[0],
                                                  self._kw_loc(b, "patternProperties")[1] + "/" + escape(pat)),
                             (self._kw_loc(h, "patternProperties")[0],
                              self._kw_loc(h, "patternProperties")[1] + "/" + escape(pat)),
                             dpath + ("*",), guards, stack)

    def _arrays(self, b: Node, h: Node, dpath: DataPath, guards: tuple[tuple[DataPath, str], ...],
                stack: frozenset[tuple[Loc, Loc]]) -> None:
        ib, ih = b.keywords.get("items"), h.keywords.get("items")
        if ib is not None or ih is not None:
            self.compare(ib if ib is not None else True, ih if ih is not None else True,
                         self._kw_loc(b, "items"), self._kw_loc(h, "items"), dpath + ("*",), guards, stack)
        xb, xh = b.keywords.get("prefixItems"), h.keywords.get("prefixItems")
        if isinstance(xb, list) and isinstance(xh, list):
            for i in range(max(len(xb), len(xh))):
                lb, lh = self._kw_loc(b, "prefixItems"), self._kw_loc(h, "prefixItems")
                self.compare(xb[i] if i < len(xb) else True, xh[i] if i < len(xh) else True,
                             (lb[0], f"{lb[1]}/{i}"), (lh[0], f"{lh[1]}/{i}"), dpath + (str(i),), guards, stack)
        elif isinstance(xb, list) or isinstance(xh, list):
            loc = self._kw_loc(h, "prefixItems") if isinstance(xh, list) else (h.loc[0], h.loc[1] + "/prefixItems")
            self.emit("keyword-changed", "head", loc, xb, xh,
                      f"{'.'.join(dpath) or '(document)'}: prefixItems {_show(xb)} -> {_show(xh)}",
                      self._node_check(b, h), dpath, guards)

    def _composition(self, b: Node, h: Node, where: str, dpath: DataPath,
                     guards: tuple[tuple[DataPath, str], ...], stack: frozenset[tuple[Loc, Loc]]) -> None:
        for kw in ("allOf", "anyOf", "oneOf"):
            xb, xh = b.keywords.get(kw), h.keywords.get(kw)
            if not isinstance(xb, list) and not isinstance(xh, list):
                continue
            xb, xh = xb if isinstance(xb, list) else [], xh if isinstance(xh, list) else []
            lb, lh = self._kw_loc(b, kw), self._kw_loc(h, kw)
            pairs = _pair_branches(xb, xh)
            if pairs is None:
                self.emit("composition-changed", "head", lh, len(xb), len(xh),
                          f"{where}: {kw} has {len(xh)} branches instead of {len(xb)}",
                          self._node_check(b, h), dpath, guards)
                continue
            for i, j in pairs:
                bl, hl = (lb[0], f"{lb[1]}/{i}"), (lh[0], f"{lh[1]}/{j}")
                branch_guard = guards if kw == "allOf" else guards + ((dpath, self.base.uri_of(bl)),)
                holder = self.lift or Lift(b, h, dpath, False)
                self.next_lift = Lift(holder.base, holder.head, holder.data_path,
                                      holder.exclusive or kw == "oneOf")
                self.compare(xb[i], xh[j], bl, hl, dpath, branch_guard, stack)

    def _other(self, b: Node, h: Node, where: str, env: tuple[DataPath, Any]) -> None:
        for kw in sorted((set(b.keywords) | set(h.keywords)) - ANNOTATIONS - HANDLED):
            vb, vh = b.keywords.get(kw, _MISSING), h.keywords.get(kw, _MISSING)
            if vb is not _MISSING and vh is not _MISSING and canonical_json(vb) == canonical_json(vh):
                continue
            old = None if vb is _MISSING else vb
            new = None if vh is _MISSING else vh
            loc = self._kw_loc(h, kw) if vh is not _MISSING else (h.loc[0], f"{h.loc[1]}/{escape(kw)}")
            self.emit("keyword-changed", "head", loc, old, new, f"{where}: {kw} {_show(old)} -> {_show(new)}",
                      self._node_check(b, h), *env)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _show(v: Json) -> str:
    return "(none)" if v is None else canonical_json(v)


_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _is_number(v: Json) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numeric(keywords: Mapping[str, Json]) -> dict[str, Json]:
    return {k: keywords[k] for k in _NUMERIC if _is_number(keywords.get(k))}


def _defining(kws: Mapping[str, Json], exclusive: str) -> str:
    """The keyword that sets a side's bound: the exclusive one when it is at least as strict."""
    if len(kws) == 1:
        return next(iter(kws))
    inclusive = "minimum" if exclusive == "exclusiveMinimum" else "maximum"
    ve, vi = kws[exclusive], kws[inclusive]
    stricter = ve >= vi if exclusive == "exclusiveMinimum" else ve <= vi
    return exclusive if stricter else inclusive


def _describe(kws: Mapping[str, Json], side: str) -> str:
    return " and ".join(f"{k} {_show(v)}" for k, v in sorted(kws.items())) or f"(no {side} bound)"


def _divides(m: Json, n: Json) -> bool:
    """`n` is a whole multiple of `m` (every multiple of `n` is one of `m`)."""
    from fractions import Fraction
    try:
        return (Fraction(str(n)) / Fraction(str(m))).denominator == 1
    except (ZeroDivisionError, ValueError):
        return False


def _number_or_none(v: Json) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _props(v: Json) -> dict[str, Json]:
    return v if isinstance(v, dict) else {}


def _strs(v: Json) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _pair_branches(xb: list[Json], xh: list[Json]) -> list[tuple[int, int]] | None:
    """Identical branches pair up wherever they moved; the rest pair by
    position when the counts agree; otherwise the composition changed shape."""
    if len(xb) != len(xh):
        return None
    free_h = list(range(len(xh)))
    pairs: list[tuple[int, int]] = []
    rest_b: list[int] = []
    for i, br in enumerate(xb):
        cj = canonical_json(br)
        j = next((j for j in free_h if canonical_json(xh[j]) == cj), None)
        if j is None:
            rest_b.append(i)
        else:
            free_h.remove(j)
            pairs.append((i, j))
    pairs.extend(zip(rest_b, free_h))
    return sorted(pairs)


# --------------------------------------------------------------------------
# The walk over every schema of both revisions
# --------------------------------------------------------------------------

def changes(base: SchemaSet, head: SchemaSet) -> tuple[dict[str, SchemaFinding], dict[str, Subject]]:
    """Every classified change between two revisions of a schema directory, by
    fingerprint, before any verdict, and the subject each was found at (what
    `schema_verdict` settles it on).  The same path on both sides is the same schema."""
    found: dict[str, SchemaFinding] = {}
    subjects: dict[str, Subject] = {}
    for path in sorted(set(base.docs) | set(head.docs)):
        if path not in head.docs:
            f = SchemaFinding(rule("schema-removed"), path, "", "base", path, None,
                              f"schema {path} was removed", Check(CheckKind.PRESENT), (Use(path, ()),))
            found[f.fingerprint] = f
            continue
        if path not in base.docs:
            f = SchemaFinding(rule("schema-added"), path, "", "head", None, path,
                              f"new schema {path}", Check(CheckKind.PRESENT), ())
            found[f.fingerprint] = f
            continue
        walk = _Walk(base, head, path)
        walk.compare(base.docs[path], head.docs[path], (path, ""), (path, ""), (), (), frozenset())
        for key, subject in walk.subjects.items():
            subjects.setdefault(key, subject)
        for key, f in walk.found.items():
            prior = found.get(key)
            found[key] = f if prior is None else SchemaFinding(
                prior.rule, prior.schema, prior.pointer, prior.side, prior.old, prior.new, prior.message,
                prior.check, prior.uses + tuple(u for u in f.uses if u not in prior.uses))
    return found, subjects


def iter_uses(findings: list[SchemaFinding]) -> Iterator[tuple[SchemaFinding, Use]]:
    for f in findings:
        for u in f.uses:
            yield f, u
