"""Rendered Kubernetes objects as data: the contract renderer → writer / reconciler.

A `Manifest` is one desired object plus what the reconciler needs to order
and recognise it (its apply step, the intent it belongs to, its spec hash).
The body is a plain JSON-like mapping, exactly what is written to disk and
sent with server-side apply; nothing downstream re-renders it.  A process
that keeps every object of a large repository (the daemon's `Reloader`)
keeps it packed (`render/packed.py`); `Manifest.body` reads either form.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any, Mapping

from intentc.objectmeta import ObjectRef
from intentc.render.packed import BodyCodec, PackedBody

COMMIT_ANNOTATION = "intentc.dev/commit-sha"
SPEC_HASH_ANNOTATION = "intentc.dev/spec-hash"
# On an object compiled from a tree with uncommitted changes (`compile/apply --allow-dirty`):
# "sha256:<hex>" of the input files read.  Its commit stamp is then `dirty_stamp(HEAD)`.
CONTENT_DIGEST_ANNOTATION = "intentc.dev/content-digest"
STAMP_ANNOTATIONS = (COMMIT_ANNOTATION, SPEC_HASH_ANNOTATION, CONTENT_DIGEST_ANNOTATION)
# The commit stamp of a dirty tree: HEAD's SHA and this suffix.  It is never a commit SHA
# (40 hex digits), so drift, rollback and the daemon cannot take what no commit holds
# for the commit it was compiled from.
DIRTY_SUFFIX = "-dirty"


def dirty_stamp(sha: str) -> str:
    """The commit stamp of content compiled from a dirty working tree whose HEAD is `sha`."""
    return sha + DIRTY_SUFFIX


def dirty_base(stamp: str | None) -> str | None:
    """The HEAD SHA a dirty stamp was made on; None for a commit SHA (or no stamp)."""
    if stamp is None or not stamp.endswith(DIRTY_SUFFIX):
        return None
    return stamp[:-len(DIRTY_SUFFIX)]


def is_commit_stamp(stamp: str | None) -> bool:
    """Whether a commit stamp names a commit (not empty, not a dirty tree's stamp):
    what may be recorded as last known-good, rolled back to, quarantined or adopted."""
    return bool(stamp) and dirty_base(stamp) is None


def short_stamp(stamp: str) -> str:
    """A commit stamp as messages show it: 12 hex digits, and `-dirty` when it is one."""
    base = dirty_base(stamp)
    return stamp[:12] if base is None else base[:12] + DIRTY_SUFFIX
# Paths (comma-separated) an object hands to a controller once it exists, e.g. a
# Kueue Job's `spec.suspend`: drift does not judge them, a re-apply leaves them alone.
HANDED_OVER_ANNOTATION = "intentc.dev/handed-over"
# On an object `apply` bound on the live cluster differently from the compiled preview
# (reconcile/live_binding.py): the preview object's spec-hash.  Whoever compares with the
# preview (drift, the daemon, apply without live binding) treats it as that object, bound live.
PREVIEW_HASH_ANNOTATION = "intentc.dev/preview-spec-hash"
# On a Job's pod template: how long the plan lets the intent run (its `duration`, else its kind's
# default; `digraph.duration_seconds`), the time the plan's schedule is made of.  Read by whoever
# compares the cluster with the plan: the test bed's kwok stage holds each pod Running for it,
# scaled (benchmarks/bench_fidelity.py, tests/test_release_kube.py).
PLANNED_DURATION_ANNOTATION = "intentc.dev/planned-duration-seconds"
# On an object every intentc repository on a cluster applies alike (the Intent CRD): its
# commit stamp is whichever repository applied it last, so drift judges it by content only.
SHARED_ANNOTATION = "intentc.dev/shared"


class SetupStep(enum.IntEnum):
    """What must exist before any workload, in apply order (before wave 0)."""

    NAMESPACES = 0
    RBAC = 1
    QUOTAS = 2
    PRIORITY_CLASSES = 3


SETUP_STEPS = len(SetupStep)

# Kinds of the setup steps; every other kind belongs to its intent's wave.
SETUP_KINDS: dict[str, SetupStep] = {
    "Namespace": SetupStep.NAMESPACES,
    "CustomResourceDefinition": SetupStep.NAMESPACES,   # the Intent CRD (render/crd.py)
    "ServiceAccount": SetupStep.RBAC,
    "Role": SetupStep.RBAC,
    "RoleBinding": SetupStep.RBAC,
    "ClusterRole": SetupStep.RBAC,
    "ClusterRoleBinding": SetupStep.RBAC,
    "ResourceQuota": SetupStep.QUOTAS,
    "LimitRange": SetupStep.QUOTAS,
    "NetworkPolicy": SetupStep.QUOTAS,       # tenant-wide isolation, before any pod starts
    "PriorityClass": SetupStep.PRIORITY_CLASSES,
    # What render targets add: quotas and queues (kueue), device claims a pod refers to (dra).
    "ResourceFlavor": SetupStep.QUOTAS,
    "Topology": SetupStep.QUOTAS,
    "Cohort": SetupStep.QUOTAS,
    "ClusterQueue": SetupStep.QUOTAS,
    "LocalQueue": SetupStep.QUOTAS,
    "ResourceClaimTemplate": SetupStep.QUOTAS,
    "WorkloadPriorityClass": SetupStep.PRIORITY_CLASSES,
    # Organisation rules the cluster enforces (render/admission.py): in force before any workload.
    "ValidatingAdmissionPolicy": SetupStep.QUOTAS,
    "ValidatingAdmissionPolicyBinding": SetupStep.QUOTAS,
}


def wave_step(wave: int) -> int:
    return SETUP_STEPS + wave


def step_label(step: int) -> str:
    if step < SETUP_STEPS:
        return SetupStep(step).name.lower().replace("_", "-")
    return f"wave-{step - SETUP_STEPS}"


@dataclass(frozen=True, slots=True)
class Manifest:
    ref: ObjectRef
    step: int                      # SetupStep value, or wave_step(wave) for workloads
    # the complete object, stamped: a mapping, or packed (`packed`) where every object of
    # a repository is kept for long (the daemon); read it as `body` either way
    content: Mapping[str, Any] | PackedBody
    spec_hash: str
    intent: str | None = None
    tenant: str | None = None

    @property
    def body(self) -> Mapping[str, Any]:
        """The complete object (a fresh dictionary each time when packed)."""
        content = self.content
        return content.unpack() if isinstance(content, PackedBody) else content

    def packed(self, codec: BodyCodec) -> "Manifest":
        """The same object with its body packed (render/packed.py): compressed bytes instead of dictionaries.
        The commit stamp is kept aside, so the packed bytes of an unchanged object are the same
        at every commit."""
        if isinstance(self.content, PackedBody):
            return self
        return replace(self, content=codec.pack(self.content, aside=COMMIT_ANNOTATION, key=self.ref))

    def with_body(self, body: Mapping[str, Any]) -> "Manifest":
        return replace(self, content=body)

    @property
    def sort_key(self) -> tuple[int, str, str, str]:
        """The total apply order: step, then kind / namespace / name."""
        return (self.step, self.ref.kind, self.ref.namespace, self.ref.name)

    @property
    def commit(self) -> str:
        """The commit stamped on the object ("" when none); a packed body's without unpacking it."""
        content = self.content
        if isinstance(content, PackedBody):
            return content.annotation(COMMIT_ANNOTATION) or ""
        return str(content.get("metadata", {}).get("annotations", {}).get(COMMIT_ANNOTATION, ""))


@dataclass(frozen=True)
class Choice:
    """A render decision that depends on the target cluster, kept for the record
    (printed by `compile`, and stamped on the object as an annotation)."""

    intent: str
    decision: str
    reason: str


@dataclass(frozen=True)
class Rendered:
    manifests: tuple[Manifest, ...]     # in apply order (Manifest.sort_key)
    kube_version: str                   # "1.20"
    target: str                         # render target name, e.g. "device-plugin"
    commit: str
    choices: tuple[Choice, ...] = ()
    # Tenants left out because their intents have errors: nothing of theirs
    # is rendered, and the reconciler neither applies nor prunes what they
    # already run (intentc.pipeline.holdback).
    held_tenants: tuple[str, ...] = ()

    def by_ref(self) -> dict[ObjectRef, Manifest]:
        return {m.ref: m for m in self.manifests}
