"""Which not-yet-started Jobs are pinned to nodes they can no longer get, and how to move them (pure).

Under the `device-plugin` target a Job's pod template pins its pods to the
planned node(s) (`kubernetes.io/hostname` in a node selector or a required
node affinity).  When the node becomes unusable — the fallback chain
tainted it `intentc.dev/gpu-observation`, or it is cordoned, NotReady or
gone — a Job whose pods have not started stays Pending for as long as the
node stays so: the scheduler keeps the pin and the node repels the pods.
The daemon moves such Jobs (docs/failure-fallback.md, "Moving stranded
Jobs"); this module answers its two questions from plain data, so they are
unit-tested without a cluster:

* `stranded(jobs, pods, nodes)` — the Jobs to move: intentc's, not
  finished, never started (no pod of theirs on a node, none ended, nothing
  counted as succeeded or failed: a Job that ran is the fallback chain's
  business, and one whose pods run is never touched), pinned to at least one
  node that `plan.live_occupancy.node_problem` calls unusable or that the
  cluster no longer has — the same judgement the live binder plans with, so
  the new binding avoids exactly those nodes;
* `waiting_pins(jobs, pods, moving)` — the GPUs that other created Jobs, not
  scheduled yet, are pinned to: the re-binding holds them, since the cluster
  shows only pods on nodes;
* `plan_move(stranded, live, rebound)` — given the Job re-bound on live
  occupancy by the existing binder (`reconcile/live_binding.LiveBinder.bind`,
  not a placement of our own), how to get it there:
  `MovePath.UPDATE` — a server-side apply of the re-bound Job in place,
  allowed only for a Job that is suspended and has never started
  (`spec.suspend` and no `status.startTime`: the API server's own rule for
  mutable scheduling directives, KEP-2926,
  pkg/registry/batch/job/strategy.go `AllowMutableSchedulingDirectives`);
  `MovePath.RECREATE` — delete it (propagation Background, so its Pending
  pods go with it; batch/v1 would orphan them by default) and create the
  re-bound Job under the same name: a started Job's pod template is
  immutable.  None when the binder found nowhere else (the pins would
  stay on an unusable node, or not change): the Job waits, and the next
  pass asks again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from intentc.objectmeta import GPU_INDICES_ANNOTATION, INTENT_LABEL, ObjectRef
from intentc.plan.live_occupancy import node_problem
from intentc.plan.model import NodeAllocation
from intentc.render.binding import HOSTNAME_LABEL
from intentc.render.fallback import FALLBACK_OF

STARTED_PHASES = frozenset({"Running", "Succeeded", "Failed"})


class MovePath(enum.Enum):
    """How a stranded Job is moved."""

    UPDATE = "updated"        # suspended and never started: its scheduling directives are mutable
    RECREATE = "recreated"    # anything else: deleted (Background) and created again


@dataclass(frozen=True, order=True)
class Stranded:
    """A Job pinned to nodes it cannot get, with why each of them is unusable."""

    ref: ObjectRef
    intent: str
    pinned: tuple[str, ...]
    unusable: tuple[tuple[str, str], ...]      # (node, why), sorted

    def why(self) -> str:
        return "; ".join(f"{node} {what}" for node, what in self.unusable)


@dataclass(frozen=True)
class Move:
    """What the reactor does to one stranded Job: `body` is the object to apply
    (UPDATE) or to create after the delete (RECREATE)."""

    ref: ObjectRef
    intent: str
    path: MovePath
    before: tuple[str, ...]
    after: tuple[str, ...]
    reason: str
    body: Mapping[str, Any]

    def message(self) -> str:
        how = ("scheduling directives updated in place (suspended, never started)"
               if self.path is MovePath.UPDATE else "deleted and created again (its pod template is immutable)")
        return (f"moved from {', '.join(self.before)} to {', '.join(self.after)} before it started: "
                f"{self.reason}; {how}")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _template_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return (((job.get("spec") or {}).get("template") or {}).get("spec")) or {}


def pinned_nodes(job: Mapping[str, Any]) -> tuple[str, ...]:
    """The nodes a Job's pods are held to by hostname, sorted; () when they are not held
    to hostnames (a product requirement, a preferred node only, no pin at all).  A node
    selector term without a hostname requirement lets the pods go anywhere it matches,
    so then nothing pins them."""
    spec = _template_spec(job)
    selected = (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL)
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    nodes: set[str] = set()
    for term in terms:
        values = [v for e in term.get("matchExpressions") or []
                  if e.get("key") == HOSTNAME_LABEL and e.get("operator") == "In" for v in e.get("values") or []]
        if not values:
            return (str(selected),) if selected else ()
        nodes.update(map(str, values))
    if selected:
        nodes = {str(selected)} if not terms or str(selected) in nodes else set()
    return tuple(sorted(nodes))


def _finished(job: Mapping[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and str(c.get("status")) == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    return any(o.get("uid") == uid and o.get("kind") == "Job" for o in _meta(pod).get("ownerReferences") or [])


def never_started(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    """True when nothing of the Job has run: not finished, nothing succeeded or failed,
    and none of its pods (`pods`: the Job's own) is on a node or past Pending."""
    status = job.get("status") or {}
    if _finished(job) or status.get("succeeded") or status.get("failed"):
        return False
    return not any((p.get("spec") or {}).get("nodeName") or (p.get("status") or {}).get("phase") in STARTED_PHASES
                   for p in pods)


def unusable_nodes(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Why each node the planner may not use is so (`live_occupancy.node_problem`)."""
    out: dict[str, str] = {}
    for node in nodes:
        problem = node_problem(node)
        if problem is not None:
            out[str(_meta(node).get("name"))] = problem
    return out


def stranded(jobs: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
             nodes: Iterable[Mapping[str, Any]]) -> list[Stranded]:
    """The Jobs to move, sorted (see the module's docstring for which)."""
    nodes = list(nodes)
    known = {str(_meta(n).get("name")) for n in nodes}
    bad = unusable_nodes(nodes)
    by_owner: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        for o in _meta(pod).get("ownerReferences") or []:
            if o.get("kind") == "Job" and o.get("uid"):
                by_owner.setdefault(str(o["uid"]), []).append(pod)
    out = []
    for job in jobs:
        meta = _meta(job)
        intent = (meta.get("labels") or {}).get(INTENT_LABEL)
        if not intent or meta.get("deletionTimestamp"):
            continue
        pinned = pinned_nodes(job)
        unusable = tuple(sorted((n, bad.get(n) or "is gone from the cluster") for n in pinned
                                if n in bad or n not in known))
        if not unusable:
            continue
        if never_started(job, by_owner.get(str(meta.get("uid") or ""), [])):
            out.append(Stranded(ObjectRef.of(job), str(intent), pinned, unusable))
    return sorted(out)


def _planned_gpus(job: Mapping[str, Any]) -> tuple[NodeAllocation, ...]:
    """The GPUs a Job's pod template says it was bound to (`intentc.dev/nodes` and
    `intentc.dev/gpu-indices`: "0,1" for one node, "a=0,1;b=2,3" for several)."""
    annotations = _meta((job.get("spec") or {}).get("template") or {}).get("annotations") or {}
    nodes = [n for n in str(annotations.get("intentc.dev/nodes") or "").split(",") if n]
    raw = str(annotations.get(GPU_INDICES_ANNOTATION) or "")
    if not nodes or not raw:
        return ()
    per_node = dict(p.split("=", 1) for p in raw.split(";") if "=" in p) if "=" in raw else {nodes[0]: raw}
    out = []
    for node in nodes:
        try:
            gpus = tuple(sorted(int(x) for x in per_node.get(node, "").split(",") if x))
        except ValueError:
            return ()
        if gpus:
            out.append(NodeAllocation(node, gpus))
    return tuple(out)


def waiting_pins(jobs: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], moving: Iterable[str]
                 ) -> dict[str, tuple[NodeAllocation, ...]]:
    """Per intent, the GPUs that its created, not yet scheduled Job is pinned to — except
    the intents of `moving`.  The cluster shows only pods on nodes, so the re-binding of a
    stranded Job holds these too: else it could pin it to GPUs another Pending Job waits
    for, and one of them would sit Pending while other GPUs are idle."""
    skip = set(moving)
    scheduled = {str(o.get("uid")) for p in pods if (p.get("spec") or {}).get("nodeName")
                 for o in _meta(p).get("ownerReferences") or [] if o.get("kind") == "Job"}
    out: dict[str, tuple[NodeAllocation, ...]] = {}
    for job in jobs:
        meta = _meta(job)
        intent = (meta.get("labels") or {}).get(INTENT_LABEL)
        if (not intent or intent in skip or _finished(job) or (job.get("spec") or {}).get("suspend")
                or str(meta.get("uid") or "") in scheduled or not pinned_nodes(job)):
            continue
        gpus = _planned_gpus(job)
        if gpus:
            out[str(intent)] = out.get(str(intent), ()) + gpus
    return out


def updatable(live: Mapping[str, Any]) -> bool:
    """The API server's rule for changing a Job's node affinity, node selector,
    tolerations, template labels and annotations and scheduling gates: suspended,
    and never started since (no `status.startTime`)."""
    return bool((live.get("spec") or {}).get("suspend")) and not (live.get("status") or {}).get("startTime")


def recreated(rebound: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The Job to create after the delete: the re-bound one, except that a fallback
    variant keeps the live `spec.suspend` (the daemon may have resumed it: a move
    changes where a Job runs, never whether; drift ignores that field of a variant)."""
    body = dict(rebound)
    if FALLBACK_OF in (_meta(rebound).get("annotations") or {}):
        body["spec"] = {**(rebound.get("spec") or {}), "suspend": bool((live.get("spec") or {}).get("suspend"))}
    return body


def plan_move(s: Stranded, live: Mapping[str, Any], rebound: Mapping[str, Any] | None) -> Move | None:
    """How to move `s` to the binding `rebound` (the re-bound Job), or None when that
    binding does not get it off the unusable nodes (the binder found no room: the
    Job waits rather than be moved to another place it cannot run)."""
    if rebound is None:
        return None
    after = pinned_nodes(rebound)
    gone = {n for n, _ in s.unusable}
    if after == s.pinned or gone & set(after):
        return None
    path = MovePath.UPDATE if updatable(live) else MovePath.RECREATE
    body = dict(rebound) if path is MovePath.UPDATE else recreated(rebound, live)
    return Move(s.ref, s.intent, path, s.pinned, after or ("any node of its product",), s.why(), body)


__all__ = ["Move", "MovePath", "Stranded", "never_started", "pinned_nodes", "plan_move", "recreated",
           "stranded", "unusable_nodes", "updatable", "waiting_pins"]
