"""One side's JSON Schemas, addressable by file and URI, with `$ref`s folded in.

Schemas refer to each other by relative references and `$id` URIs
("common.schema.json#/$defs/name"); the schema diff walks both revisions
through those references, so it needs to resolve them without a network and
to know, for every keyword, in which file and at which JSON Pointer it was
written (that place is what a finding names and fingerprints).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urldefrag, urljoin

Json = Any
Loc = tuple[str, str]                 # (schema file, JSON Pointer)
MAX_REF_CHAIN = 32


def canonical_json(value: Json) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


# --------------------------------------------------------------------------
# One side's schemas, with $ref resolution across files
# --------------------------------------------------------------------------

@dataclass
class SchemaSet:
    """The parsed schema files of one revision, addressable by file and by URI."""

    docs: dict[str, Json]
    uris: dict[str, str] = field(default_factory=dict)     # file -> base URI
    files: dict[str, str] = field(default_factory=dict)    # base URI -> file

    @classmethod
    def of(cls, docs: Mapping[str, Json]) -> "SchemaSet":
        s = cls(dict(sorted(docs.items())))
        for path, doc in s.docs.items():
            uri = doc.get("$id") if isinstance(doc, dict) and isinstance(doc.get("$id"), str) else None
            uri = urldefrag(uri or "file:///" + path)[0]
            s.uris[path] = uri
            s.files[uri] = path
        return s

    def uri_of(self, loc: Loc) -> str:
        return f"{self.uris[loc[0]]}#{loc[1]}"

    def node(self, loc: Loc) -> Json:
        cur = self.docs.get(loc[0])
        for tok in loc[1].split("/")[1:] if loc[1] else []:
            tok = unescape(tok)
            if isinstance(cur, dict) and tok in cur:
                cur = cur[tok]
            elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
                cur = cur[int(tok)]
            else:
                return None
        return cur

    def resolve(self, ref: str, at: Loc) -> Loc | None:
        absolute = urljoin(self.uris.get(at[0], "file:///" + at[0]), ref)
        uri, frag = urldefrag(absolute)
        path = self.files.get(uri)
        if path is None:
            return None
        if frag and not frag.startswith("/"):
            anchored = self._anchor(path, frag)
            return anchored
        loc = (path, frag)
        return loc if self.node(loc) is not None else None

    def _anchor(self, path: str, name: str) -> Loc | None:
        def walk(node: Json, ptr: str) -> Loc | None:
            if isinstance(node, dict):
                if node.get("$anchor") == name:
                    return (path, ptr)
                for k in sorted(node):
                    hit = walk(node[k], f"{ptr}/{escape(k)}")
                    if hit:
                        return hit
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    hit = walk(v, f"{ptr}/{i}")
                    if hit:
                        return hit
            return None
        return walk(self.docs[path], "")


@dataclass(frozen=True)
class Node:
    """A schema node with its `$ref`s folded in: each keyword remembers where it was written."""

    keywords: dict[str, Json]
    origin: dict[str, Loc]
    loc: Loc                  # where the bulk of the node lives (the last `$ref` target)
    refs: tuple[str, ...]     # absolute URIs of the `$ref` chain, outermost first


def effective(schemas: SchemaSet, raw: Json, loc: Loc) -> Node:
    """Fold a `$ref` chain into one keyword map.  Keywords next to a `$ref`
    override the target's (in practice they are descriptions and examples)."""
    keywords: dict[str, Json] = {}
    origin: dict[str, Loc] = {}
    refs: list[str] = []
    node, here = _as_dict(raw), loc
    for _ in range(MAX_REF_CHAIN):
        for k, v in node.items():
            if k != "$ref" and k not in keywords:
                keywords[k], origin[k] = v, here
        ref = node.get("$ref")
        if not isinstance(ref, str):
            break
        target = schemas.resolve(ref, here)
        refs.append(urljoin(schemas.uris.get(here[0], ""), ref))
        if target is None:
            keywords.setdefault("$ref", ref)
            origin.setdefault("$ref", here)
            break
        node, here = _as_dict(schemas.node(target)), target
    return Node(keywords, origin, here, tuple(refs))


def _as_dict(node: Json) -> dict[str, Json]:
    if node is True or node is None:
        return {}
    if node is False:
        return {"not": {}}
    return node if isinstance(node, dict) else {}
