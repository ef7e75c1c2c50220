"""Which base documents (YAML and DSL) a schema finding actually affects, and where.

The base revision's documents are the ones a schema change can break (they
were written against the base schemas).  Each finding carries the instance
locations it governs (`Use.data_path`) and a `Check`; a document counts when
the check holds at one of those locations:

* PRESENT  - the value exists (a removed property is still used),
* ABSENT   - the parent object lacks the key (a new requirement, or a default
             that now silently applies / changed / disappeared),
* INVALID  - the value passed the base keyword and fails the head one.

Positions come from PyYAML's C composer, which keeps line/column marks and
is fast.  DSL (`.intent`) files describe the same documents: they are parsed
and lowered to the YAML document shape (the `convert --to yaml` printer), and
each value keeps the DSL position it was written at, so a schema change
counts and points at DSL intents exactly like YAML ones.

A document *breaks* when it is valid under its base schema and invalid under
the head schema as a whole; a finding that affects a breaking document is
breaking whatever its rule's default severity.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from intentc.diff.schema_diff import CheckKind, DataPath, SchemaFinding, Use
from intentc.diff.schema_refs import Json, SchemaSet, canonical_json, effective
from intentc.frontend.sources import DSL_SUFFIXES

Path_ = tuple[str | int, ...]
YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Affected:
    file: str
    line: int
    column: int
    kind: str
    name: str
    at: str             # the instance location, e.g. "spec.constraints.duration"
    breaks: bool = False  # the whole document was valid under the base schema and is invalid under the head


@dataclass(frozen=True)
class Document:
    file: str
    kind: str
    name: str
    data: Json
    positions: Mapping[Path_, tuple[int, int]]


def load_documents(files: Mapping[str, str]) -> list[Document]:
    """intentc documents (apiVersion intentc.dev/...) of YAML and DSL files, with the
    position of every value.  Unparseable files are skipped: `intentc check` is the
    place that reports them."""
    docs: list[Document] = []
    for path in sorted(files):
        if path.endswith(DSL_SUFFIXES):
            docs.extend(dsl_documents(path, files[path]))
            continue
        if not path.endswith((".yaml", ".yml")):
            continue
        try:
            nodes = list(yaml.compose_all(files[path], Loader=YamlLoader))
        except yaml.YAMLError:
            continue
        for node in nodes:
            if node is None:
                continue
            try:
                data = YamlLoader("").construct_document(node)
            except yaml.YAMLError:
                continue
            if not (isinstance(data, dict) and str(data.get("apiVersion", "")).startswith("intentc.dev/")
                    and isinstance(data.get("kind"), str)):
                continue
            positions: dict[Path_, tuple[int, int]] = {}
            node_marks(node, (), positions)
            meta = data.get("metadata")
            name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
            docs.append(Document(path, data["kind"], name, data, positions))
    return docs


def dsl_documents(path: str, text: str) -> list[Document]:
    """The documents a DSL file lowers to, in the YAML document shape, positioned in the DSL text."""
    import json

    from intentc.frontend.dsl import parse
    from intentc.frontend.sources import SourceFile
    from intentc.frontend.yaml_emit import documents

    program, diags = parse(SourceFile(path, text))
    if any(d.is_error for d in diags):
        return []
    decls = [*program.tenants, *program.datasets, *program.intents, *program.topologies]
    out: list[Document] = []
    for decl, (kind, doc) in zip(decls, documents(program)):
        data = json.loads(json.dumps(doc))
        positions: dict[Path_, tuple[int, int]] = {}
        _ir_marks(decl, (), positions)
        _ir_marks(decl, ("spec",), positions)
        out.append(Document(path, kind, getattr(decl, "name", ""), data, positions))
    return out


def _ir_marks(obj: Any, path: Path_, out: dict[Path_, tuple[int, int]]) -> None:
    """IR spans as document positions: a node's span for its path, its field spans for its keys."""
    span = getattr(obj, "span", None)
    if span is not None and getattr(span, "line", 0) > 0:
        out.setdefault(path, (span.line, span.column))
    spans = getattr(obj, "spans", None)
    for key, sp in getattr(spans, "items", ()):
        if sp.line > 0:
            out.setdefault(path + (key,), (sp.line, sp.column))
    if not dataclasses.is_dataclass(obj) or not path:
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and hasattr(value, "span"):
            _ir_marks(value, path + (f.name,), out)


def node_marks(node: yaml.Node, path: Path_, out: dict[Path_, tuple[int, int]]) -> None:
    out.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.setdefault(path + (key.value,), (key.start_mark.line + 1, key.start_mark.column + 1))
                node_marks(value, path + (key.value,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            node_marks(item, path + (i,), out)


def kind_roots(schemas: SchemaSet) -> dict[str, str]:
    """Document kind -> the schema file that validates it (from `properties.kind.const`/`enum`)."""
    roots: dict[str, str] = {}
    for path, doc in schemas.docs.items():
        props = doc.get("properties") if isinstance(doc, dict) else None
        if not isinstance(props, dict) or "kind" not in props:
            continue
        kind = effective(schemas, props["kind"], (path, "/properties/kind")).keywords
        for k in [kind["const"]] if "const" in kind else kind.get("enum", []) or []:
            if isinstance(k, str):
                roots.setdefault(k, path)
    return roots


class _Validators:
    """Validators for schema fragments, built once per fragment and side."""

    def __init__(self, schemas: SchemaSet) -> None:
        self.registry: Registry = Registry().with_resources(
            (schemas.uris[p], Resource.from_contents(doc, default_specification=DRAFT202012))
            for p, doc in schemas.docs.items() if isinstance(doc, (dict, bool)))
        self.cache: dict[str, Draft202012Validator] = {}

    def valid(self, fragment: Json, value: Json) -> bool:
        key = canonical_json(fragment)
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = Draft202012Validator(fragment, registry=self.registry)
        try:
            return bool(v.is_valid(value))
        except (Unresolvable, SchemaError, re.error):
            return True     # a broken head schema is not decidable here: count nothing rather than guess


def _locate(data: Json, pattern: DataPath, prefix: Path_ = ()) -> Iterator[tuple[Path_, Json]]:
    if not pattern:
        yield prefix, data
        return
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(data, dict):
            for k in sorted(data, key=str):
                yield from _locate(data[k], rest, prefix + (k,))
        elif isinstance(data, list):
            for i, v in enumerate(data):
                yield from _locate(v, rest, prefix + (i,))
    elif isinstance(data, dict) and head in data:
        yield from _locate(data[head], rest, prefix + (head,))


def _value_at(data: Json, path: Path_) -> Json:
    for tok in path:
        data = data[tok]
    return data


def _matches(f: SchemaFinding, use: Use, doc: Document, base_v: _Validators,
             head_v: _Validators) -> Iterator[Path_]:
    check = f.check
    if check.kind is CheckKind.ABSENT:
        if not use.data_path:
            return
        parent, key = use.data_path[:-1], use.data_path[-1]
        hits: Iterator[tuple[Path_, Json]] = (
            (p + (key,), None) for p, v in _locate(doc.data, parent)
            if isinstance(v, dict) and key != "*" and key not in v)
    else:
        hits = _locate(doc.data, use.data_path)
    for path, value in hits:
        if not all(base_v.valid({"$ref": uri}, _value_at(doc.data, path[:len(gp)]))
                   for gp, uri in use.guards):
            continue
        if check.kind is CheckKind.INVALID:
            if check.base is not None and not base_v.valid(check.base, value):
                continue
            if head_v.valid(check.head, value):
                continue
        yield path


def affected_documents(findings: list[SchemaFinding], base: SchemaSet, head: SchemaSet,
                       documents: list[Document]) -> dict[str, tuple[Affected, ...]]:
    """Finding fingerprint -> the base documents it affects, in file order."""
    roots = kind_roots(base)
    base_v, head_v = _Validators(base), _Validators(head)
    by_root: dict[str, list[Document]] = {}
    for d in documents:
        if d.kind in roots:
            by_root.setdefault(roots[d.kind], []).append(d)
    out: dict[str, tuple[Affected, ...]] = {}
    breaks: dict[int, bool] = {}

    def broken(doc: Document, root: str) -> bool:
        if id(doc) not in breaks:
            before = base_v.valid({"$ref": base.uri_of((root, ""))}, doc.data)
            after = root in head.docs and head_v.valid({"$ref": head.uri_of((root, ""))}, doc.data)
            breaks[id(doc)] = before and not after
        return breaks[id(doc)]

    for f in findings:
        seen: dict[tuple[str, int, int, str], Affected] = {}
        for use in f.uses:
            for doc in by_root.get(use.root, []):
                for path in _matches(f, use, doc, base_v, head_v):
                    line, col = _position(doc, path)
                    at = ".".join(str(t) for t in path) or "(document)"
                    seen.setdefault((doc.file, line, col, at), Affected(doc.file, line, col, doc.kind, doc.name, at,
                                                                        broken(doc, use.root)))
        out[f.fingerprint] = tuple(seen[k] for k in sorted(seen))
    return out


def _position(doc: Document, path: Path_) -> tuple[int, int]:
    """The value's own position, else its nearest written ancestor (an absent key)."""
    for n in range(len(path), -1, -1):
        pos = doc.positions.get(path[:n])
        if pos is not None:
            return pos
    return (1, 1)
