"""The shape an inventory document must have before anything reads it.

The inventory ConfigMap is the memory prune and rollback act on, and anyone
who may edit ConfigMaps in `intentc-system` can write it.  A document that
parses as JSON but has the wrong shape (`objects: "x"`, an entry without a
name, `lastKnownGood: "abc"`) must end in one clear "inventory is
unreadable" error (exit 2), never in a traceback or in acting on garbage.
Checked with the same JSON Schema machinery as intent files: jsonschema-rs
says yes or no fast (15,000 objects), jsonschema explains a no.

Inflation is capped too: the gzipped form is at most 1 MiB (a ConfigMap),
and `INFLATE_LIMIT` bounds what it may expand to, so a gzip bomb written
into `binaryData` costs at most that much memory.
"""

from __future__ import annotations

import functools
import json
import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_fast: Any
try:  # compiled validator: yes/no without Python per node; jsonschema explains why not
    import jsonschema_rs as _fast
except ImportError:  # pragma: no cover - only where the wheel is missing
    _fast = None

# 15,000 objects (what one 1 MiB ConfigMap holds gzipped) take about 5 MiB of
# JSON; four times that leaves room and still bounds a bomb.  The limit holds
# per document: the index and each shard (inventory.py) are inflated apart.
INFLATE_LIMIT = 20 * 1024 * 1024
FORMAT = "intentc.dev/inventory/v1"
SHARD_FORMAT = "intentc.dev/inventory-shard/v1"

_TEXT = {"type": "string", "maxLength": 4096}
_OPT_TEXT = {"type": ["string", "null"], "maxLength": 4096}
_OBJECTS: dict[str, Any] = {"type": "array", "items": {
    "type": "object",
    "required": ["version", "kind", "name"],
    "properties": {
        "group": _TEXT, "version": {**_TEXT, "minLength": 1}, "kind": {**_TEXT, "minLength": 1},
        "namespace": _TEXT, "name": {**_TEXT, "minLength": 1},
        "step": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
        "specHash": _TEXT, "commit": _TEXT, "intent": _OPT_TEXT, "tenant": _OPT_TEXT,
        "state": {"enum": ["applied", "pending"]},
        "desired": {"type": "boolean"}, "adopted": {"type": "boolean"},
    }}}
SHARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["format", "objects"],
    "properties": {"format": {"const": SHARD_FORMAT}, "target": _OPT_TEXT, "objects": _OBJECTS},
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["format", "objects"],
    "properties": {
        "format": {"const": FORMAT},
        "target": _OPT_TEXT,
        "commit": _OPT_TEXT,
        "lastKnownGood": {"oneOf": [
            {"type": "null"},
            {"type": "object", "required": ["commit"],
             "properties": {"commit": _TEXT, "at": _OPT_TEXT}}]},
        "objects": _OBJECTS,
        "shards": {"type": "array", "items": {          # objects kept in other ConfigMaps (inventory.py)
            "type": "object",
            "required": ["name", "objects", "sha256"],
            "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 253},
                           "objects": {"type": "integer", "minimum": 0},
                           "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}}},
        "history": {"type": "array", "items": {
            "type": "object",
            "required": ["commit", "startedAt"],
            "properties": {
                "commit": _TEXT, "startedAt": _TEXT, "finishedAt": _OPT_TEXT,
                "result": {"enum": ["running", "succeeded", "failed", "interrupted"]},
                "health": _TEXT, "message": {"type": "string"},
                "counts": {"type": "object",
                           "additionalProperties": {"type": "integer", "minimum": 0}},
            }}},
    },
}


@functools.cache
def _slow(format: str) -> Draft202012Validator:
    """jsonschema, imported only to explain a no: it was half of every command's import time."""
    from jsonschema import Draft202012Validator
    return Draft202012Validator(SCHEMA if format == FORMAT else SHARD_SCHEMA)


_QUICK = ({FORMAT: _fast.Draft202012Validator(SCHEMA), SHARD_FORMAT: _fast.Draft202012Validator(SHARD_SCHEMA)}
          if _fast is not None else None)


def _where(path: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) or "(document)"


def parse(text: str) -> dict[str, Any]:
    """The inventory document in `text`, checked; ValueError says what is wrong and where."""
    return _parse(text, FORMAT, "an intentc inventory document")


def parse_shard(text: str) -> dict[str, Any]:
    """One shard's document (the objects of a sharded inventory), checked."""
    return _parse(text, SHARD_FORMAT, "an intentc inventory shard")


def _parse(text: str, format: str, what_it_is: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != format:
        raise ValueError(f"not {what_it_is}")
    if _QUICK is not None and _QUICK[format].is_valid(doc):
        return doc
    error = next(iter(sorted(_slow(format).iter_errors(doc), key=lambda e: list(e.absolute_path))), None)
    if error is None:
        return doc
    what = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    raise ValueError(f"inventory{_where(error.absolute_path)}: {what}")


def inflate(packed: bytes) -> str:
    """Gunzip at most `INFLATE_LIMIT` bytes; more is refused, not inflated."""
    z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        raw = z.decompress(packed, INFLATE_LIMIT + 1)
        if len(raw) > INFLATE_LIMIT:
            raise ValueError(f"inflates past the {INFLATE_LIMIT // (1024 * 1024)} MiB limit")
        if not z.eof:
            raise ValueError("gzip stream is truncated")
        return raw.decode("utf-8")
    except zlib.error as e:
        raise ValueError(f"not gzip: {e}") from None
    except UnicodeDecodeError:
        raise ValueError("inflated bytes are not UTF-8") from None
