"""Which YAML documents a schema finding actually affects, and where.

The base revision's documents are the ones a schema change can break (they
were written against the base schemas).  Each finding carries the instance
locations it governs (`Use.data_path`) and a `Check`; a document counts when
the check holds at one of those locations:

* PRESENT  - the value exists (a removed property is still used),
* ABSENT   - the parent object lacks the key (a new requirement, or a default
             that now silently applies / changed / disappeared),
* INVALID  - the value passed the base keyword and fails the head one.

Positions come from PyYAML's C composer, which keeps line/column marks and
is fast; the DSL surface has no JSON Schema, so only YAML documents count.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Document:
    file: str
    kind: str
    name: str
    data: Json
    positions: Mapping[Path_, tuple[int, int]]


def load_documents(files: Mapping[str, str]) -> list[Document]:
    """intentc YAML documents (apiVersion intentc.dev/...) with the position of every value.
    Unparseable files are skipped: `intentc check` is the place that reports them."""
    docs: list[Document] = []
    for path in sorted(files):
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
    for f in findings:
        seen: dict[tuple[str, int, int, str], Affected] = {}
        for use in f.uses:
            for doc in by_root.get(use.root, []):
                for path in _matches(f, use, doc, base_v, head_v):
                    line, col = _position(doc, path)
                    at = ".".join(str(t) for t in path) or "(document)"
                    seen.setdefault((doc.file, line, col, at), Affected(doc.file, line, col, doc.kind, doc.name, at))
        out[f.fingerprint] = tuple(seen[k] for k in sorted(seen))
    return out


def _position(doc: Document, path: Path_) -> tuple[int, int]:
    """The value's own position, else its nearest written ancestor (an absent key)."""
    for n in range(len(path), -1, -1):
        pos = doc.positions.get(path[:n])
        if pos is not None:
            return pos
    return (1, 1)
