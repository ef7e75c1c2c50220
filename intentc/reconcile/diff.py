"""Pairing desired with live objects and deciding what to do with each (pure).

The spec-hash annotation on the live object says which desired spec it was
last applied from.  A different hash means "update" (git moved).  An equal
hash is "unchanged" only when every field intentc sets still holds the
desired value — compared by value, whoever the `managedFields` say owns it
(a `kubectl scale` or `kubectl edit` is a difference even where ownership
did not move); otherwise the object is "repaired": applied again, taking
the changed fields back (git is the source of truth).  The comparison runs
on the objects one LIST per kind returned, so an apply with nothing to do
still sends no write.  The field diff is for people (`--dry-run`, update
reports): live is first cut down to the fields intentc owns (its
`managedFields` entry, read by `reconcile/fields.py`), so server defaults
and other managers' fields do not show up, and fields intentc stopped
setting do.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from intentc.reconcile.fields import FieldDiff, diff_fields, ignored_paths, owned_fields, project_fields
from intentc.render.model import PREVIEW_HASH_ANNOTATION, SPEC_HASH_ANNOTATION, Manifest
from intentc.objectmeta import MANAGED_BY, MANAGED_BY_LABEL, ObjectRef
from intentc.render.stamp import unstamped


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    REPAIR = "repair"        # git did not move, the cluster did: take the changed fields back
    REPLACE = "replace"      # an immutable field changed: delete, then create
    UNCHANGED = "unchanged"
    PRUNE = "prune"
    ORPHAN = "orphan"        # no longer desired, kept because --prune was not given


@dataclass(frozen=True)
class Pair:
    ref: ObjectRef
    desired: Manifest | None
    live: Mapping[str, Any] | None
    in_inventory: bool


def live_hash(live: Mapping[str, Any] | None) -> str | None:
    if live is None:
        return None
    return ((live.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)


def is_managed(live: Mapping[str, Any] | None) -> bool:
    return live is not None and ((live.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def pair(desired: Sequence[Manifest], live: Mapping[ObjectRef, Mapping[str, Any]],
         inventory: Iterable[ObjectRef]) -> list[Pair]:
    """Desired objects (apply order) followed by inventory objects no longer desired."""
    known = set(inventory)
    wanted = {m.ref for m in desired}
    pairs = [Pair(m.ref, m, live.get(m.ref), m.ref in known) for m in desired]
    pairs += [Pair(ref, None, live.get(ref), True) for ref in sorted(known - wanted)]
    return pairs


def drifted(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[FieldDiff]:
    """Fields intentc sets whose live value differs (by value; owners only name who)."""
    return diff_fields(desired, live, ignored_paths(desired))


def decide(p: Pair) -> Action:
    if p.desired is None:
        return Action.PRUNE
    if p.live is None:
        return Action.CREATE
    if live_hash(p.live) == p.desired.spec_hash:
        return Action.REPAIR if drifted(p.desired.body, p.live) else Action.UNCHANGED
    if bound_live(p.live) == p.desired.spec_hash:
        # this very content, bound on the live cluster by an earlier apply: the preview's
        # node pins are not put back over it (a Job would be deleted and run again)
        return Action.UNCHANGED
    return Action.UPDATE


def bound_live(live: Mapping[str, Any] | None) -> str | None:
    """The preview spec-hash of an object `apply` bound on the live cluster, else None."""
    return ((live or {}).get("metadata", {}).get("annotations") or {}).get(PREVIEW_HASH_ANNOTATION)


def repair_diff(desired: Mapping[str, Any], live: Mapping[str, Any], manager: str = "intentc") -> tuple[str, ...]:
    """What a repair takes back, one line per field: `~ path: live -> desired (changed by M)`."""
    lines = []
    for d in drifted(desired, live):
        who = ", ".join(o for o in d.owners if o != manager) or "an unrecorded write"
        lines.append(f"~ {d.path}: {_short(d.live)} -> {_short(d.desired)} (changed by {who})")
    return tuple(lines)


# --------------------------------------------------------------------------
# Field diff
# --------------------------------------------------------------------------

def project_like(value: Any, shape: Any) -> Any:
    """`value` cut down to the keys `shape` has (used when intentc owns nothing yet)."""
    if isinstance(value, dict) and isinstance(shape, dict):
        return {k: project_like(value[k], shape[k]) for k in shape if k in value}
    if isinstance(value, list) and isinstance(shape, list):
        return [project_like(v, s) for v, s in zip(value, shape)] + value[len(shape):]
    return value


def _merge(a: Any, b: Any) -> Any:
    """`a`, plus the keys only `b` has (recursively; lists element-wise when aligned)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {**{k: v for k, v in b.items() if k not in a}, **{k: _merge(v, b[k]) if k in b else v for k, v in a.items()}}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_merge(x, y) for x, y in zip(a, b)]
    return a


def live_view(live: Mapping[str, Any], desired: Mapping[str, Any], manager: str) -> dict[str, Any]:
    """Live as comparable to desired: the live values at every path desired sets,
    plus the fields `manager` still owns that desired no longer sets (so a
    removal shows as one), without server defaults or other managers' extras."""
    view = project_like(dict(live), dict(desired))
    for owned in owned_fields(live, manager):
        view = _merge(view, project_fields(dict(live), owned))
    return unstamped(view)


def _dotted(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def field_diff(desired: Mapping[str, Any], live: Mapping[str, Any] | None, manager: str = "intentc") -> tuple[str, ...]:
    """Changes from live (as intentc last applied it) to desired, one line each:
    `~ path: old -> new`, `+ path: new`, `- path: old`."""
    if live is None:
        return ()
    want = unstamped(desired)
    have = live_view(live, want, manager)
    from deepdiff import DeepDiff   # slow to import; only a dry run or a report needs it
    tree = DeepDiff(have, want, view="tree")
    lines = []
    for kind, levels in tree.items():
        for level in levels:
            path = _dotted(level.path(output_format="list"))
            if kind in ("values_changed", "type_changes"):
                lines.append(f"~ {path}: {_short(level.t1)} -> {_short(level.t2)}")
            elif kind.endswith("_added"):
                lines.append(f"+ {path}: {_short(level.t2)}")
            elif kind.endswith("_removed"):
                lines.append(f"- {path}: {_short(level.t1)}")
    return tuple(sorted(lines, key=lambda s: s[2:]))
