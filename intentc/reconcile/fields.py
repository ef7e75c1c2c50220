"""Field-level comparison of a desired object with a live one, using `managedFields`.

Server-side apply records, per field manager, the set of fields it owns
(`metadata.managedFields[].fieldsV1`, the "FieldsV1" trie: `f:<name>` for a
map key, `k:<json>` for a list item identified by its merge keys, `v:<json>`
for a member of a set of scalars, `.` for the node itself).  That trie is
what lets drift be attributed: when another manager changes a field intentc
applied, ownership moves to that manager, so the *new owner* of a field
whose live value differs from the desired one is who changed it.

Only paths present in the desired object are walked, which is why fields
set only by others (API-server defaults, an HPA, an operator's status) are
never drift: intentc never asked for them.  Everything here is pure, and
takes JSON-shaped data: plain dicts, lists and scalars (what the renderer
builds and what the API server returns).

This is the one reader of `managedFields`: the reconciler's repair decision
and `--dry-run` diff (`reconcile/diff.py`: `project_fields`, `owned_fields`)
and drift detection (`drift/detect.py`: `diff_fields`, `latest_writer`)
both read the trie here, so the two cannot disagree on who owns a field.
It sits in the reconciler, the lower of the two packages that need it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Mapping

from intentc.ir.quantity import parse_quantity
from intentc.render.model import (COMMIT_ANNOTATION, CONTENT_DIGEST_ANNOTATION, HANDED_OVER_ANNOTATION,
                                  SPEC_HASH_ANNOTATION)

ABSENT: Any = None   # how a missing live field is shown (JSON null)

# Never compared as fields: status is the cluster's, the stamp annotations are
# provenance (judged by `drift.detect` on their own).
PROVENANCE_PATHS = frozenset({
    "status",
    f'metadata.annotations["{COMMIT_ANNOTATION}"]',
    f'metadata.annotations["{SPEC_HASH_ANNOTATION}"]',
    f'metadata.annotations["{CONTENT_DIGEST_ANNOTATION}"]',
})
# A fallback variant (render/fallback.py) is rendered suspended and resumed by the daemon
# when its predecessor fails: its `spec.suspend` is the controller's to toggle, not drift.
FALLBACK_OF_ANNOTATION = "intentc.dev/fallback-of"
CONTROLLER_PATHS = frozenset({"spec.suspend"})


def handed_over(desired: Mapping[str, Any]) -> frozenset[str]:
    text = (desired.get("metadata", {}).get("annotations") or {}).get(HANDED_OVER_ANNOTATION, "")
    return frozenset(p.strip() for p in str(text).split(",") if p.strip())


def ignored_paths(desired: Mapping[str, Any]) -> frozenset[str]:
    """What drift never compares on `desired`: provenance, what it handed over (to Kueue),
    and a fallback variant's suspend."""
    annotations = (desired.get("metadata") or {}).get("annotations") or {}
    variant = CONTROLLER_PATHS if FALLBACK_OF_ANNOTATION in annotations else frozenset()
    return PROVENANCE_PATHS | handed_over(desired) | variant


def without_handed_over(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The body to re-apply to an existing object: without the fields it handed over."""
    paths = handed_over(body)
    return _without(body, paths) if paths else body


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_MISSING = object()

# A manager's node in the FieldsV1 trie at the current path (None: owns nothing below).
Nodes = Mapping[str, Mapping[str, Any] | None]
# A field path as a linked list, innermost last: (parent, key or formatted segment, formatted?).
Path = tuple[Any, str, bool] | None


@dataclass(frozen=True)
class FieldDiff:
    """One desired leaf (or atomic list) whose live value differs."""

    path: str
    desired: Any
    live: Any                      # ABSENT when the live object lacks the field
    owners: tuple[str, ...]        # managers owning the live field, sorted


@lru_cache(maxsize=4096)
def key_segment(key: str) -> str:
    return f".{key}" if _PLAIN_KEY.match(key) else f'["{key}"]'


def _item_segment(keys: Mapping[str, Any]) -> str:
    inner = ",".join(f"{k}={v}" for k, v in sorted(keys.items()))
    return f"[{inner}]"


def same_value(desired: Any, live: Any) -> bool:
    """Equality as the API server sees it: numbers by value, quantities by
    value (`"0.5"` is stored as `"500m"`), everything else exactly."""
    if type(desired) is type(live) and desired == live:     # the common case, first
        return True
    if isinstance(desired, bool) or isinstance(live, bool):
        return False
    if desired == live:
        return True
    if isinstance(desired, (int, float)) and isinstance(live, (int, float)):
        return float(desired) == float(live)
    if isinstance(desired, (str, int)) and isinstance(live, (str, int)):
        a, b = parse_quantity(str(desired)), parse_quantity(str(live))
        return a is not None and a == b
    if isinstance(desired, list) and isinstance(live, list):
        return len(desired) == len(live) and all(same_value(d, v) for d, v in zip(desired, live, strict=True))
    if isinstance(desired, dict) and isinstance(live, dict):
        return desired.keys() == live.keys() and all(same_value(desired[k], live[k]) for k in desired)
    return False


def _child(nodes: Nodes, key: str) -> dict[str, Mapping[str, Any] | None]:
    """The managers that own something at `key`, with their sub-trie (managers
    owning nothing there are dropped: most paths have one or two owners)."""
    out: dict[str, Mapping[str, Any] | None] = {}
    for manager, node in nodes.items():
        sub = node.get(key) if node is not None else None
        if type(sub) is dict:
            out[manager] = sub
    return out


def _owners(nodes: Nodes) -> tuple[str, ...]:
    return tuple(sorted(m for m, n in nodes.items() if n is not None))


_UNREADABLE = object()


@lru_cache(maxsize=8192)
def _decode(key: str) -> Any:
    """The JSON of a `k:` / `v:` trie key; the same few keys recur on every object."""
    try:
        return json.loads(key[2:])
    except ValueError:
        return _UNREADABLE


def _decoded(node: Mapping[str, Any] | None, prefix: str) -> Iterator[tuple[str, Any]]:
    if node is None:
        return
    for key in node:
        if key.startswith(prefix):
            value = _decode(key)
            if value is not _UNREADABLE:
                yield key, value


def _key_matches(item_keys: Mapping[str, Any], desired_item: Mapping[str, Any]) -> bool:
    """A `k:` entry names a desired item when every key the desired item sets
    agrees (keys it leaves out were defaulted by the server, e.g. `protocol`)."""
    shared = [k for k in item_keys if k in desired_item]
    return bool(shared) and all(same_value(desired_item[k], item_keys[k]) for k in shared)


def _find_live(live: list[Any], keys: Mapping[str, Any]) -> Any:
    for item in live:
        if type(item) is dict and all(k in item and same_value(item[k], v) for k, v in keys.items()):
            return item
    return _MISSING


def _walk_keyed(path: Path, desired: list[Any], live: list[Any], nodes: Nodes,
                out: list[FieldDiff]) -> bool:
    """Lists of maps with merge keys (containers by name, ports by port and
    protocol).  Returns False when neither the trie nor a `name` field gives
    keys to match every item on; the caller then compares the list whole."""
    if not all(type(d) is dict for d in desired):
        return False
    entries = sorted((k, v) for n in nodes.values() for k, v in _decoded(n, "k:") if isinstance(v, dict))
    matched: list[tuple[Mapping[str, Any], str, Mapping[str, Any]]] = []
    for item in desired:
        found = next(((tk, kv) for tk, kv in entries if _key_matches(kv, item)), None)
        if found is not None:
            matched.append((item, found[0], found[1]))
        elif "name" in item:
            matched.append((item, "", {"name": item["name"]}))
        else:
            return False
    for item, trie_key, keys in matched:
        live_item = _find_live(live, keys)
        sub = _child(nodes, trie_key) if trie_key else {m: None for m in nodes}
        seg = (path, _item_segment(keys), True)
        if live_item is _MISSING:
            out.append(FieldDiff(render_path(seg), dict(item), ABSENT, ()))
        else:
            _walk(seg, item, live_item, sub, out)
    return True


def _walk_set(path: Path, desired: list[Any], live: list[Any], nodes: Nodes,
              out: list[FieldDiff]) -> None:
    owners_of: dict[str, list[str]] = {}
    for manager, node in nodes.items():
        for _key, value in _decoded(node, "v:"):
            owners_of.setdefault(json.dumps(value, sort_keys=True), []).append(manager)
    for value in desired:
        if not any(same_value(value, v) for v in live):
            owners = tuple(sorted(owners_of.get(json.dumps(value, sort_keys=True), [])))
            out.append(FieldDiff(f"{render_path(path)}[{value}]", value, ABSENT, owners))


def render_path(path: Path) -> str:
    """`(((None, "spec", False), "replicas", False)` -> `spec.replicas`."""
    parts: list[str] = []
    while path is not None:
        path, text, formatted = path
        parts.append(text if formatted else key_segment(text))
    return "".join(reversed(parts)).removeprefix(".")


def _walk(path: Path, desired: Any, live: Any, nodes: Nodes, out: list[FieldDiff]) -> None:
    # The hot loop of detection (10,000 objects): JSON bodies are plain dicts
    # and lists, so `type(...) is` checks (an ABC isinstance costs more than
    # the rest of a step), and paths are linked tuples rendered only for a diff.
    if type(desired) is dict:
        if type(live) is not dict:
            out.append(FieldDiff(render_path(path), dict(desired), ABSENT if live is _MISSING else live,
                                 _owners(nodes)))
            return
        for key, want in desired.items():
            sub_live = live.get(key, _MISSING)
            sub_nodes = _child(nodes, "f:" + key)
            if sub_live is _MISSING:
                out.append(FieldDiff(render_path((path, key, False)), want, ABSENT, _owners(sub_nodes)))
                continue
            _walk((path, key, False), want, sub_live, sub_nodes, out)
        return
    if type(desired) is list and type(live) is list:
        if any(True for n in nodes.values() for _ in _decoded(n, "v:")):
            _walk_set(path, desired, live, nodes, out)
            return
        if desired and _walk_keyed(path, desired, live, nodes, out):
            return
    if not same_value(desired, live):
        out.append(FieldDiff(render_path(path), desired, ABSENT if live is _MISSING else live, _owners(nodes)))


# --------------------------------------------------------------------------
# Reading `metadata.managedFields`
# --------------------------------------------------------------------------

def managed_fields(live: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The `metadata.managedFields` entries of `live` (none when it has none)."""
    meta = live.get("metadata")
    return list((meta.get("managedFields") if isinstance(meta, dict) else None) or ())


def field_sets(live: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Manager name -> its FieldsV1 trie, merged over operations (an `Apply`
    and an `Update` entry of one manager own fields together)."""
    merged: dict[str, dict[str, Any]] = {}
    for entry in managed_fields(live):
        manager = str(entry.get("manager", ""))
        trie = entry.get("fieldsV1") or {}
        merged[manager] = _merge_tries(merged.get(manager, {}), trie)
    return merged


def _merge_tries(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge_tries(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def owned_fields(live: Mapping[str, Any], manager: str, operation: str = "Apply") -> list[Mapping[str, Any]]:
    """The FieldsV1 tries `manager` holds through `operation` (its server-side applies),
    one per entry, in the order the API server lists them."""
    return [entry.get("fieldsV1") or {} for entry in managed_fields(live)
            if entry.get("manager") == manager and entry.get("operation") == operation]


def latest_writer(live: Mapping[str, Any], other_than: str) -> str | None:
    """The manager of the most recent entry not `other_than`'s ("" when that entry
    names none), or None when there is no such entry."""
    entries = [e for e in managed_fields(live) if e.get("manager") != other_than]
    if not entries:
        return None
    latest = max(entries, key=lambda e: (str(e.get("time") or ""), str(e.get("manager"))))
    return str(latest.get("manager") or "")


def _matches(item: Any, key: Mapping[str, Any]) -> bool:
    return isinstance(item, dict) and all(item.get(k) == v for k, v in key.items())


def project_fields(value: Any, fields: Mapping[str, Any]) -> Any:
    """The part of `value` named by a managedFields `fieldsV1` tree."""
    if not fields:
        return value
    if isinstance(value, dict):
        return {k[2:]: project_fields(value[k[2:]], sub)
                for k, sub in fields.items() if k.startswith("f:") and k[2:] in value}
    if isinstance(value, list):
        keyed = [(key, fields[k]) for k, key in _decoded(fields, "k:")]
        values = [v for _, v in _decoded(fields, "v:")]
        out = []
        for item in value:
            for key, sub in keyed:
                if _matches(item, key):
                    out.append({**key, **project_fields(item, sub)})
                    break
            else:
                if item in values:
                    out.append(item)
        return out
    return value


# --------------------------------------------------------------------------
# Desired against live, field by field
# --------------------------------------------------------------------------

def diff_fields(desired: Mapping[str, Any], live: Mapping[str, Any],
                skip: frozenset[str] = frozenset()) -> list[FieldDiff]:
    """Every desired leaf whose live value differs, with the live owners.

    `skip` holds top-level paths never compared (e.g. `status`, the stamp
    annotations: they are provenance, judged separately)."""
    want, have = _without(desired, skip), _without(live, skip)
    if _contained(want, have):
        return []          # nothing differs: no need to know who owns what
    nodes: dict[str, Mapping[str, Any] | None] = dict(field_sets(live))
    out: list[FieldDiff] = []
    _walk(None, want, have, nodes, out)
    return sorted(out, key=lambda d: d.path)


def _contained(desired: Any, live: Any) -> bool:
    """A cheap, stricter version of `_walk` without ownership: True only when
    `_walk` would report no difference at all.  Most objects on a cluster have
    not drifted, and this check costs a fraction of the owner-tracking walk.

    It is stricter where `_walk` is lenient: lists of uniquely named maps
    must match item by item in order (`_walk` matches them by merge key), and
    every other list must be equal as a whole (`_walk` compares sets by
    membership).  A property test checks the implication."""
    if type(desired) is dict:
        if type(live) is not dict:
            return False
        for key, want in desired.items():
            have = live.get(key, _MISSING)
            if have is _MISSING or not _contained(want, have):
                return False
        return True
    if (type(desired) is list and desired and all(type(d) is dict and "name" in d for d in desired)
            and len({str(d["name"]) for d in desired}) == len(desired)):     # `_walk` matches by name
        return (type(live) is list and len(live) == len(desired)
                and all(type(h) is dict and h.get("name") == d["name"] and _contained(d, h)
                        for d, h in zip(desired, live)))
    return same_value(desired, live)


def _without(body: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    """A shallow-enough copy without the skipped paths (`a`, or `a.b["c"]` style)."""
    out: dict[str, Any] = dict(body)
    for path in skip:
        parts = _split(path)
        _drop(out, parts)
    return out


@lru_cache(maxsize=64)
def _split(path: str) -> tuple[str, ...]:
    """`metadata.annotations["a.b/c"]` -> ["metadata", "annotations", "a.b/c"]."""
    return tuple(quoted or plain for quoted, plain in re.findall(r'\["([^"]+)"\]|([^.\[\]"]+)', path))


def _drop(node: dict[str, Any], parts: tuple[str, ...]) -> None:
    head, rest = parts[0], parts[1:]
    if head not in node:
        return
    if not rest:
        del node[head]
        return
    child = node[head]
    if isinstance(child, dict):
        node[head] = dict(child)
        _drop(node[head], rest)
