"""Spec digests and the commit stamp.

The spec hash covers everything intentc decides about an object except the
two stamp annotations themselves, so an object whose content did not change
keeps its hash across commits — that is what lets `apply` skip it and
leave its (older) commit-sha in place.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from typing import Any, Mapping

from intentc.render.model import (COMMIT_ANNOTATION, CONTENT_DIGEST_ANNOTATION, SPEC_HASH_ANNOTATION,
                                  STAMP_ANNOTATIONS, Rendered)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def unstamped(body: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy without the stamp annotations (and without an annotation
    map that held only them)."""
    out = copy.deepcopy(dict(body))
    meta = out.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        ann = {k: v for k, v in meta["annotations"].items() if k not in STAMP_ANNOTATIONS}
        if ann:
            meta["annotations"] = ann
        else:
            del meta["annotations"]
    return out


def _has_stamps(body: Mapping[str, Any]) -> bool:
    ann = (body.get("metadata") or {}).get("annotations") or {}
    return any(k in ann for k in STAMP_ANNOTATIONS)


def spec_hash(body: Mapping[str, Any]) -> str:
    """sha256 (hex) of the normalized object without its stamps."""
    plain = unstamped(body) if _has_stamps(body) else body
    return hashlib.sha256(canonical_json(plain).encode("utf-8")).hexdigest()


def stamp(body: Mapping[str, Any], commit: str) -> tuple[dict[str, Any], str]:
    """The object with commit-sha and spec-hash annotations added, and the hash.
    Only the metadata level is copied: rendered bodies are never mutated after."""
    digest = spec_hash(body)
    out = dict(body)
    meta = dict(out.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COMMIT_ANNOTATION: commit,
                           SPEC_HASH_ANNOTATION: digest}
    out["metadata"] = meta
    return out, digest


def with_content_digest(rendered: Rendered, digest: str | None) -> Rendered:
    """Every object with the content digest of the dirty tree it was compiled from
    (`CONTENT_DIGEST_ANNOTATION`) beside its `<sha>-dirty` commit stamp; `rendered`
    itself when `digest` is None (a commit).  The spec hashes stay: the digest is a
    stamp, so an object whose content is the commit's is still recognised as it."""
    if digest is None:
        return rendered
    manifests = []
    for m in rendered.manifests:
        body = dict(m.body)
        meta = dict(body.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), CONTENT_DIGEST_ANNOTATION: digest}
        body["metadata"] = meta
        manifests.append(m.with_body(body))
    return replace(rendered, manifests=tuple(manifests))


def content_digest_of(rendered: Rendered) -> str | None:
    """The content digest `with_content_digest` put on `rendered`, if any: what a
    re-render of the same objects (apply's live binding) must carry too."""
    for m in rendered.manifests:
        found = (m.body.get("metadata", {}).get("annotations") or {}).get(CONTENT_DIGEST_ANNOTATION)
        return str(found) if found is not None else None
    return None
