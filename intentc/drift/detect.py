"""Drift detection: `(desired, live, inventory, history) -> findings`, and nothing else.

This function is pure on purpose (kopf's split between *detecting* and
*reacting*): it reads plain dicts and returns values, never calls the API
server, never sleeps, never reads the clock.  The daemon, `intentc drift`
and the benchmarks all feed it data they fetched themselves, and only the
reactor (`intentc.daemon`, `intentc.drift.rollback`) acts on the result.

Classes (one object can be in two, e.g. stale *and* modified):

* `in-sync`   — desired, present, nothing below differs;
* `modified`  — a field intentc sets has another value, changed by another
  field manager (named, from `managedFields`), with `path: desired -> live`;
* `missing`   — desired but absent from the cluster;
* `orphan`    — labelled `managed-by: intentc` but neither desired nor in
  the inventory (created by hand, or by a lost apply); or in this target's
  own inventory but no longer desired (an apply without `--prune`, or a
  prune cut off midway, left it running);
* `stale`     — applied from a commit older than the one whose plan changed
  it (its spec-hash is not the desired one), or from a dirty tree
  (`<sha>-dirty`, `apply --allow-dirty`) whose content is not the desired one;
* `foreign`   — its `commit-sha` is not in the repository's history.

A dirty tree's stamp is never taken for a commit: its object is judged by
its content (same spec hash: in sync) and by whether its base SHA is known.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from intentc.reconcile.fields import FieldDiff, diff_fields, ignored_paths, latest_writer, managed_fields
from intentc.render.model import (COMMIT_ANNOTATION, CONTENT_DIGEST_ANNOTATION, PREVIEW_HASH_ANNOTATION,
                                  SHARED_ANNOTATION, SPEC_HASH_ANNOTATION, dirty_base)
from intentc.objectmeta import INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL, ObjectRef
from intentc.render.stamp import spec_hash

FIELD_MANAGER = "intentc"
UNKNOWN_MANAGER = "<unknown>"


class DriftClass(enum.Enum):
    IN_SYNC = "in-sync"
    MODIFIED = "modified"
    MISSING = "missing"
    ORPHAN = "orphan"
    STALE = "stale"
    FOREIGN = "foreign"


DRIFT_CLASSES = tuple(DriftClass)


@dataclass(frozen=True)
class History:
    """The commits of the followed branch, newest first (what `git log` lists),
    and the repository's commits that are not behind the checked-out one (`newer`:
    after checking out an older commit, the branch head is one of them).

    Only the order matters here; the git module produces it."""

    commits: tuple[str, ...]
    newer: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pos", {sha: i for i, sha in enumerate(self.commits)})
        object.__setattr__(self, "_newer", frozenset(self.newer))

    def knows(self, sha: str) -> bool:
        return sha in self._pos  # type: ignore[attr-defined]

    def is_newer(self, sha: str) -> bool:
        """In the repository, but not behind the checked-out commit."""
        return sha in self._newer  # type: ignore[attr-defined]

    def older(self, a: str, b: str) -> bool:
        """True when `a` was committed before `b` (both known)."""
        pos: dict[str, int] = self._pos  # type: ignore[attr-defined]
        return pos[a] > pos[b]


@dataclass(frozen=True)
class Change:
    """A field intentc sets, changed by `manager`."""

    path: str
    desired: Any
    live: Any
    manager: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "desired": self.desired, "live": self.live, "manager": self.manager}


@dataclass(frozen=True)
class Finding:
    ref: ObjectRef
    drift: DriftClass
    message: str
    intent: str | None = None
    tenant: str | None = None
    changes: tuple[Change, ...] = ()
    live_commit: str | None = None
    desired_commit: str | None = None

    @property
    def managers(self) -> tuple[str, ...]:
        return tuple(sorted({c.manager for c in self.changes}))

    @property
    def sort_key(self) -> tuple[str, str, str, str, str]:
        r = self.ref
        return (r.kind, r.namespace, r.name, r.api_version, self.drift.value)

    def to_json(self) -> dict[str, Any]:
        return {"object": self.ref.to_json(), "class": self.drift.value, "message": self.message,
                "intent": self.intent, "tenant": self.tenant,
                "managers": list(self.managers), "changes": [c.to_json() for c in self.changes],
                "live_commit": self.live_commit, "desired_commit": self.desired_commit}


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]       # sorted; in-sync objects included

    @property
    def drifted(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.drift is not DriftClass.IN_SYNC)

    @property
    def has_drift(self) -> bool:
        return bool(self.drifted)

    def counts(self) -> dict[DriftClass, int]:
        """Objects per class (every class present, zeros included)."""
        seen: Counter[DriftClass] = Counter()
        for cls in DRIFT_CLASSES:
            seen[cls] = len({f.ref for f in self.findings if f.drift is cls})
        return dict(seen)

    def to_json(self) -> dict[str, Any]:
        return {"in_sync": not self.has_drift,
                "counts": {c.value: n for c, n in self.counts().items()},
                "findings": [f.to_json() for f in self.drifted]}


# --------------------------------------------------------------------------

def _meta(body: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = body.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _annotation(body: Mapping[str, Any], key: str) -> str | None:
    value = (_meta(body).get("annotations") or {}).get(key)
    return str(value) if value else None


def _label(body: Mapping[str, Any], key: str) -> str | None:
    value = (_meta(body).get("labels") or {}).get(key)
    return str(value) if value else None


def _desired_hash(body: Mapping[str, Any]) -> str:
    return _annotation(body, SPEC_HASH_ANNOTATION) or spec_hash(body)


def last_updater(live: Mapping[str, Any], manager: str = FIELD_MANAGER) -> str:
    """Who most recently wrote the object other than intentc: the culprit for
    a field that was removed (a removed field has no owner left to name)."""
    return latest_writer(live, manager) or UNKNOWN_MANAGER


def modifications(desired: Mapping[str, Any], live: Mapping[str, Any],
                  manager: str = FIELD_MANAGER) -> tuple[Change, ...]:
    """Fields intentc sets whose live value somebody changed: values, not managers.

    When the live object carries the desired spec-hash, intentc applied
    exactly this content, so *every* difference is somebody's edit — even
    when `managedFields` still names intentc as the field's owner (a write
    through a subresource such as `scale` need not move ownership).  When
    it does not (a newer commit changed the object), a difference only
    counts if another manager owns that field now; fields still owned by
    intentc simply hold the previous commit's value (that is `stale`).
    `managedFields` only names who changed a field, never whether it did."""
    applied_this = _annotation(live, SPEC_HASH_ANNOTATION) == _desired_hash(desired)
    has_trie = bool(managed_fields(live))
    changes = []
    for d in diff_fields(desired, live, ignored_paths(desired)):
        others = tuple(o for o in d.owners if o != manager)
        if not applied_this and not others:
            continue
        if others:
            who = ", ".join(others)
        else:
            who = last_updater(live, manager) if has_trie else UNKNOWN_MANAGER
        changes.append(Change(d.path, d.desired, d.live, who))
    return tuple(changes)


def _provenance(ref: ObjectRef, desired: Mapping[str, Any], live: Mapping[str, Any],
                history: History | None) -> Finding | None:
    live_commit = _annotation(live, COMMIT_ANNOTATION)
    want_commit = _annotation(desired, COMMIT_ANNOTATION)
    # an object apply bound on the live cluster carries the preview's hash it stands for
    same_spec = _desired_hash(desired) in (_annotation(live, SPEC_HASH_ANNOTATION),
                                           _annotation(live, PREVIEW_HASH_ANNOTATION))
    intent, tenant = _owner(desired)

    def finding(cls: DriftClass, why: str) -> Finding:
        return Finding(ref, cls, why, intent, tenant, live_commit=live_commit, desired_commit=want_commit)

    base = dirty_base(live_commit)
    if base is not None:
        # applied from a dirty tree (`apply --allow-dirty`): no commit holds it, so the commit
        # order says nothing of it; its content does
        if same_spec:
            return None
        digest = _annotation(live, CONTENT_DIGEST_ANNOTATION)
        what = f"applied from a dirty tree of {base[:12]}" + (f" (content {digest[:19]})" if digest else "")
        if history is not None and not history.knows(base) and not history.is_newer(base):
            return finding(DriftClass.FOREIGN, f"{what}, whose commit is not in the repository's history")
        return finding(DriftClass.STALE, f"{what}, not from a commit: uncommitted changes differ from the desired spec")
    if history is not None and live_commit is not None and history.is_newer(live_commit):
        if same_spec:
            return None
        head = history.commits[0][:12] if history.commits else "?"
        return finding(DriftClass.STALE, f"applied from {live_commit[:12]}, newer than the checked-out commit "
                                         f"{head} (check out the branch head to compare with it)")
    if history is not None and (live_commit is None or not history.knows(live_commit)):
        why = (f"applied from commit {live_commit[:12]}, which is not in the repository's history"
               if live_commit else f"carries no {COMMIT_ANNOTATION} annotation")
        return finding(DriftClass.FOREIGN, why)
    if same_spec:
        return None
    if live_commit and want_commit and history is not None and history.knows(want_commit):
        if history.older(live_commit, want_commit):
            why = f"applied from {live_commit[:12]}, older than {want_commit[:12]} whose plan changed it"
        elif live_commit == want_commit:
            why = f"rendered differently from the same commit {live_commit[:12]} (topology or target changed)"
        else:
            why = f"applied from {live_commit[:12]}, newer than the desired commit {want_commit[:12]}"
    else:
        why = "spec-hash differs from the desired one: the object was applied from another plan"
    return finding(DriftClass.STALE, why)


def _owner(body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(intent, tenant) from the object's labels: what the policies are keyed by."""
    return _label(body, INTENT_LABEL), _label(body, TENANT_LABEL)


def _describe(changes: Sequence[Change]) -> str:
    managers = sorted({c.manager for c in changes})
    paths = ", ".join(c.path for c in changes[:3]) + (", …" if len(changes) > 3 else "")
    return f"{len(changes)} field(s) changed by {', '.join(managers)}: {paths}"


def _index(bodies: Iterable[Mapping[str, Any]]) -> dict[ObjectRef, Mapping[str, Any]]:
    return {ObjectRef.of(b): b for b in bodies}


def detect(desired: Iterable[Mapping[str, Any]], live: Iterable[Mapping[str, Any]],
           inventory: Iterable[ObjectRef] = (), history: History | None = None,
           manager: str = FIELD_MANAGER, exclude: Iterable[ObjectRef] = (),
           own: Iterable[ObjectRef] = ()) -> Report:
    """Compare what should run with what runs.  Pure: same input, same report.

    `live` holds the cluster objects the caller fetched: the desired ones
    that exist and everything labelled `managed-by: intentc`.  `inventory`
    is what the applies of every target recorded as managed, `own` what this
    target's did: an object in `own` that is no longer desired is an orphan
    (prune it), one only in another target's inventory is that target's.
    `history` enables `stale` ordering and `foreign`; without it (no git
    repository at hand) provenance is judged by spec-hash alone.
    """
    have = {_loose(r): (r, b) for r, b in _index(live).items()}
    managed = {_loose(r) for r in inventory}
    ours = {_loose(r) for r in own}
    skip = {_loose(r) for r in exclude}
    findings: list[Finding] = []
    wanted: set[tuple[str, str, str, str]] = set()
    seen: set[ObjectRef] = set()
    # one desired body at a time: the daemon keeps its objects packed (render/packed.py)
    # and unpacks each as it is compared, never all 100,000 at once
    for body in desired:
        ref = ObjectRef.of(body)
        if ref in seen:           # a rendered set never holds an object twice; judged once
            continue
        seen.add(ref)
        wanted.add(_loose(ref))
        hit = have.get(_loose(ref))
        intent, tenant = _owner(body)
        if hit is None:
            findings.append(Finding(ref, DriftClass.MISSING, "desired but not on the cluster", intent, tenant,
                                    desired_commit=_annotation(body, COMMIT_ANNOTATION)))
            continue
        live_body = hit[1]
        found: list[Finding] = []
        # a cluster-wide object all repositories apply alike carries the last applier's commit; so does
        # one an inventory records (PriorityClasses, DeviceClasses): targets on one cluster own it jointly
        shared = _annotation(body, SHARED_ANNOTATION) is not None or (not ref.namespace and _loose(ref) in managed)
        prov = _provenance(ref, body, live_body, None if shared else history)
        if prov is not None:
            found.append(prov)
        changes = modifications(body, live_body, manager)
        if changes:
            found.append(Finding(ref, DriftClass.MODIFIED, _describe(changes), intent, tenant, changes,
                                 live_commit=_annotation(live_body, COMMIT_ANNOTATION),
                                 desired_commit=_annotation(body, COMMIT_ANNOTATION)))
        findings.extend(found or [Finding(ref, DriftClass.IN_SYNC, "in sync", intent, tenant)])
    for key, (ref, body) in have.items():
        if key in wanted or key in skip:
            continue
        if _label(body, MANAGED_BY_LABEL) != MANAGED_BY:
            continue        # never intentc's, or taken out of its hands by removing the label
        if key in ours:
            findings.append(Finding(ref, DriftClass.ORPHAN,
                                    "in the inventory but no longer desired (an apply without --prune, or an "
                                    "interrupted prune, left it): `intentc apply --prune` deletes it",
                                    *_owner(body), live_commit=_annotation(body, COMMIT_ANNOTATION)))
            continue
        if key in managed:
            continue
        findings.append(Finding(ref, DriftClass.ORPHAN,
                                "labelled as managed by intentc, but neither desired nor in the inventory",
                                *_owner(body), live_commit=_annotation(body, COMMIT_ANNOTATION)))
    return Report(tuple(sorted(findings, key=lambda f: f.sort_key)))


def _loose(ref: ObjectRef) -> tuple[str, str, str, str]:
    return (ref.group, ref.kind, ref.namespace, ref.name)


__all__ = [
    "DRIFT_CLASSES",
    "FIELD_MANAGER",
    "UNKNOWN_MANAGER",
    "Change",
    "DriftClass",
    "FieldDiff",
    "Finding",
    "History",
    "Report",
    "detect",
    "modifications",
]
