"""Binding a plan to the live cluster at apply time: the whole plan, then each release again.

`apply` compiles the preview (the same bytes CI wrote) and hands the
reconciler a `LiveBinder`.  The binder reads the cluster (Nodes and
running Pods, `intentc.kube.cluster_state`), turns it into an `Occupancy`
(`intentc.plan.live_occupancy`) and binds:

* `whole()` — every intent on what is free when the apply starts
  (`apply --no-wait` creates every wave from this);
* `bind(names, live, running)` — the intents released together, just
  before they are created (`apply --wait`, reconcile/release.py): the pods
  of other intents that still run hold their GPUs, and so do the intents
  this apply released earlier that have not ended (their pods may not be
  scheduled yet: the cluster alone does not show them); among the intents
  released together, one whose preview GPUs an earlier-starting sibling
  takes is re-planned too (both created on one node, one would sit Pending
  while another node is idle).  Their own pods (from an earlier apply) hold
  nothing.  `bind_wave(n, live)` binds a whole wave so.

Only intents whose preview GPUs the cluster cannot give now are re-planned
(`intentc.plan.rebind`), around the GPUs the others keep; the preview plan
is rendered with only those bindings swapped in, so the same objects come
out in the same steps and only node pins / GPU annotations / batch follow
the live plan.  An object bound differently from the preview carries the
preview's spec-hash in `intentc.dev/preview-spec-hash`, so later applies,
the daemon and drift recognise it.  What already runs from the preview's
content stays where it runs (a Job always: its pod template is immutable,
re-binding would delete and re-run it).

When the cluster has none of the topology's nodes (a bare API server, or
nodes not joined yet) there is nothing to bind to: the preview is applied
as it is, with a note, and its pods wait Pending for their nodes.  So it
is when the caller may not list Nodes and Pods (a namespaced role).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from intentc import ir
from intentc.kube.cluster_state import ClusterState
from intentc.kube.errors import AccessDenied, NotFound
from intentc.objectmeta import ObjectRef
from intentc.plan.cluster_nodes import with_cluster_nodes
from intentc.plan.live_occupancy import occupancy
from intentc.plan.model import Busy, NodeAllocation, Occupancy, Plan
from intentc.plan.planner import make_plan
from intentc.plan.rebind import BindingChange, Blocked, blocked, changes, holding, merged, unfit, wave_program
from intentc.policy import BUILTIN, Policies
from intentc.render import render
from intentc.render.capabilities import KubeVersion
from intentc.render.model import PREVIEW_HASH_ANNOTATION, SETUP_STEPS, SPEC_HASH_ANNOTATION, Manifest, Rendered
from intentc.render.stamp import content_digest_of, with_content_digest
from intentc.topology.load import LoadedTopology

IMMUTABLE_TEMPLATE_KINDS = frozenset({"Job"})


@dataclass(frozen=True)
class Binding:
    """Objects bound on live state, and how they differ from the preview."""

    manifests: tuple[Manifest, ...]             # the bound objects (the whole plan's, or one wave's)
    changes: tuple[BindingChange, ...] = ()
    blocked: tuple[Blocked, ...] = ()           # intents that cannot be placed now
    kept: Mapping[ObjectRef, str] = field(default_factory=dict)   # existing Jobs left as created, and why
    notes: tuple[str, ...] = ()                 # what the cluster leaves out, one line per node / pod
    remarks: tuple[str, ...] = ()               # intents left as previewed although they moved, and why
    live: bool = True                           # False: no topology node on the cluster, the preview as is
    plan: Plan | None = None                    # the plan the manifests were rendered from


def _hash(body: Mapping[str, Any] | None, key: str) -> str | None:
    return ((body or {}).get("metadata", {}).get("annotations") or {}).get(key)


def _nodes(body: Mapping[str, Any]) -> str:
    """The planned nodes a workload's pod template names ("" for none)."""
    return str(_hash((body.get("spec") or {}).get("template") or {}, "intentc.dev/nodes") or "")


def _marked(m: Manifest, preview_hash: str) -> Manifest:
    """`m` carrying the spec-hash of the preview object it stands for (not part of its own hash)."""
    meta = dict(m.body.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), PREVIEW_HASH_ANNOTATION: preview_hash}
    return m.with_body({**m.body, "metadata": meta})


class LiveBinder:
    def __init__(self, program: ir.Program, topology: LoadedTopology, preview: Plan, rendered: Rendered,
                 kube_version: KubeVersion, read: Callable[[], ClusterState], policies: Policies = BUILTIN,
                 seed: int = 0, cluster_nodes: bool = True) -> None:
        self.program = program
        self.topology = topology
        # GPU nodes of the cluster the file does not list are planned onto too (plan/cluster_nodes.py)
        self.cluster_nodes = cluster_nodes
        self._live = topology           # the topology of the last read: the file's, plus the cluster's
        self.preview = preview
        self.rendered = rendered
        self.kube_version = kube_version
        self.read = read
        self.policies = policies
        self.seed = seed
        self._preview_by_ref = rendered.by_ref()
        self._tenants = [t.name for t in program.tenants]
        # intent -> the GPUs this binder last bound it to (held while it runs: `bind`'s `running`)
        self._bound: dict[str, tuple[NodeAllocation, ...]] = {}

    def _state(self) -> tuple[ClusterState, str | None]:
        """The cluster's nodes and pods, or why they cannot be read: without the right to
        list them (a namespaced role) apply binds as previewed, it does not fail."""
        try:
            state = self.read()
        except (AccessDenied, NotFound) as e:
            return ClusterState((), ()), (f"cannot read the cluster's nodes and pods ({e.message}): "
                                          f"applied as previewed")
        return state, self._absent(state)

    def _absent(self, state: ClusterState) -> str | None:
        """Why there is nothing to bind to, or None."""
        names = {str((n.get("metadata") or {}).get("name")) for n in state.nodes}
        wanted = [n.name for n in self.topology.topology.nodes if n.gpu_count]
        if wanted and not names & set(wanted):
            return (f"the cluster has none of the topology's {len(wanted)} GPU nodes: applied as previewed "
                    f"(pods wait Pending until those nodes join)")
        return None

    def _occupancy(self, state: ClusterState, names: Sequence[str] | None = None
                   ) -> tuple[Occupancy, tuple[str, ...]]:
        """What is taken on the cluster as read, on the file's topology plus (unless
        `cluster_nodes` is off) the cluster's GPU nodes it does not list."""
        added: tuple[str, ...] = ()
        self._live = self.topology
        if self.cluster_nodes:
            self._live, added = with_cluster_nodes(self.topology, state.nodes)
        occupied, notes = occupancy(self._live.topology, state.nodes, state.pods, self._tenants, names)
        return occupied, added + notes

    def _render(self, plan: Plan) -> Rendered:
        # a dirty tree's objects keep their content digest when bound again (render/stamp.py)
        return with_content_digest(
            render(self.program, plan, self.rendered.commit, self.kube_version, self.rendered.target,
                   self._live.topology, self.policies, hold=self.rendered.held_tenants),
            content_digest_of(self.rendered))

    def _rebind(self, names: Sequence[str], occupied: Occupancy, notes: tuple[str, ...], together: bool = False
                ) -> tuple[Plan, tuple[Blocked, ...]]:
        """The preview with those of `names` whose GPUs are not free now re-planned (alone,
        around the GPUs the others keep), and what of them cannot be placed; `together`:
        `names` are created at the same moment (not `whole`, which ignores reuse over time)."""
        moving = unfit(self.preview, names, occupied, together)
        plan, stuck = self.preview, tuple[Blocked, ...]()
        if moving:
            around = holding(occupied, self.preview, [n for n in names if n not in set(moving)])
            fresh, _ = make_plan(wave_program(self.program, moving), self._live, self.seed, around, self.policies)
            stuck = blocked(fresh, moving, now=together)
            plan = merged(self.preview, fresh, [n for n in moving if n not in {b.intent for b in stuck}])
        return dataclasses.replace(plan, basis="live", basis_notes=notes), stuck

    def whole(self, live: Mapping[ObjectRef, Mapping[str, Any] | None]) -> Binding:
        """Every wave bound on what the cluster has free now; `live`: objects on the cluster.
        Intents re-planned here are planned as if they all started now (no reuse over time)."""
        state, absent = self._state()
        if absent:
            return Binding(self.rendered.manifests, notes=(absent,), live=False, plan=self.preview)
        occupied, notes = self._occupancy(state)
        scheduled = [n for wave in self.preview.waves for n in wave]
        plan, stuck = self._rebind(scheduled, occupied, notes)
        bound = self._render(plan) if plan.placements is not self.preview.placements else self.rendered
        same, odd = self._same_objects(bound.manifests, self.rendered.manifests)
        manifests, kept = self._choose(same, live, occupied)
        return Binding(manifests, self._changes(plan, scheduled, manifests, occupied, notes), stuck, kept,
                       notes, odd, plan=plan)

    def bind_wave(self, wave: int, live: Mapping[ObjectRef, Mapping[str, Any] | None]) -> Binding:
        """Wave `wave` bound on what the cluster has free now (the whole wave released at once)."""
        names = tuple(sorted(self.preview.waves[wave])) if wave < len(self.preview.waves) else ()
        return self.bind(names, live)

    def bind(self, names: Sequence[str], live: Mapping[ObjectRef, Mapping[str, Any] | None],
             running: Sequence[str] = (), moving: frozenset[ObjectRef] = frozenset(),
             held: Mapping[str, tuple[NodeAllocation, ...]] | None = None) -> Binding:
        """The intents `names`, released now, bound on what the cluster has free now: those
        whose preview GPUs are taken — by the cluster, by an intent of `running` (released
        earlier by this apply and not ended: its pods may not be scheduled yet, so the
        cluster does not show them) or by an intent released with them that the plan starts
        first — re-planned together.  `live`: their objects as they are on the cluster.
        `moving`: existing Jobs the caller moves (the daemon, off an unusable node before
        they started: daemon/stranding.py), so they get the live binding, not kept as created;
        `held`: GPUs that other intents' created Jobs are pinned to, their pods not scheduled
        yet (the cluster does not show them), held like those of `running`."""
        wanted = frozenset(names)
        names = tuple(sorted(wanted))
        previewed = tuple(m for m in self.rendered.manifests if m.intent in wanted and m.step >= SETUP_STEPS)
        state, absent = self._state()
        if absent:
            return Binding(previewed, notes=(absent,), live=False, plan=self.preview)
        occupied, notes = self._occupancy(state, names)
        held = dict(held or {})
        occupied, notes = self._with_running(occupied, notes, [n for n in {*running, *held} if n not in wanted],
                                             held)
        plan, stuck = self._rebind(names, occupied, notes, together=True)
        placed = {p.intent: p for p in plan.placements if p.intent in wanted}
        self._bound.update({n: p.allocations for n, p in placed.items()
                            if n not in {b.intent for b in stuck}})
        if plan.placements is self.preview.placements:
            return Binding(previewed, notes=notes, plan=plan)
        everything = self._render(plan).manifests
        earlier = sorted({m.intent for m in everything if m.step < SETUP_STEPS and m.intent in wanted
                          and m.spec_hash != getattr(self._preview_by_ref.get(m.ref), "spec_hash", None)})
        if earlier:
            # the binding lives in objects of an earlier step (dra's claim templates), applied already
            return Binding(previewed, notes=notes, plan=plan,
                           remarks=(f"the live binding of {', '.join(map(str, earlier))} changes objects applied "
                                    f"before the waves; applied as previewed (apply --no-wait binds them all at "
                                    f"the start)",))
        same, odd = self._same_objects(tuple(m for m in everything if m.intent in wanted and m.step >= SETUP_STEPS),
                                       previewed)
        manifests, kept = self._choose(same, live, occupied, moving)
        waiting = tuple(b for b in stuck if any(live.get(m.ref) is None for m in previewed if m.intent == b.intent))
        return Binding(manifests, self._changes(plan, names, manifests, occupied, notes), waiting, kept,
                       notes, odd, plan=plan)

    def _with_running(self, occupied: Occupancy, notes: tuple[str, ...], running: Sequence[str],
                      held: Mapping[str, tuple[NodeAllocation, ...]] | None = None
                      ) -> tuple[Occupancy, tuple[str, ...]]:
        """`occupied` plus the GPUs of the intents still running, as this apply bound them
        (the preview's where it did not move them), or as `held` says their created Jobs
        are pinned."""
        placed = {p.intent: p for p in self.preview.placements}
        taken: dict[str, set[int]] = {}
        for b in occupied.busy:
            taken.setdefault(b.node, set()).update(b.gpus)
        extra: list[str] = []
        for name in sorted(running):
            pinned = (held or {}).get(name)
            allocations = pinned or self._bound.get(name) or (placed[name].allocations if name in placed else ())
            why = "created, its pods not scheduled yet" if pinned else "released by this apply, still running"
            for a in allocations:
                new = sorted(set(a.gpus) - taken.setdefault(a.node, set()))
                if new and a.node not in occupied.unavailable:
                    taken[a.node].update(new)
                    extra.append(f"{a.node}: GPU {','.join(map(str, new))} taken (intent {name}, {why})")
        if not extra:
            return occupied, notes
        busy = tuple(Busy(node, tuple(sorted(gpus))) for node, gpus in sorted(taken.items()) if gpus)
        return Occupancy(busy, occupied.unavailable), notes + tuple(extra)

    @staticmethod
    def _same_objects(bound: Sequence[Manifest], previewed: Sequence[Manifest]
                      ) -> tuple[tuple[Manifest, ...], tuple[str, ...]]:
        """`bound`, except that an intent whose live binding makes other objects than the
        preview's (another GPU product sizes the batch so that a fallback variant comes or
        goes) keeps its preview objects: the set of objects is the compiled one."""
        refs: dict[tuple[str | None, bool], set[ObjectRef]] = {}
        for m in bound:
            refs.setdefault((m.intent, True), set()).add(m.ref)
        for m in previewed:
            refs.setdefault((m.intent, False), set()).add(m.ref)
        odd = {i for i, _ in refs if refs.get((i, True), set()) != refs.get((i, False), set())}
        out = sorted([m for m in bound if m.intent not in odd] + [m for m in previewed if m.intent in odd],
                     key=lambda m: m.sort_key)
        return tuple(out), tuple(f"{i}: the live binding makes other objects than the preview; applied as "
                                 f"previewed (its pods may wait for the preview's GPUs)" for i in sorted(map(str, odd)))

    def _changes(self, plan: Plan, names: Sequence[str], manifests: Sequence[Manifest], occupied: Occupancy,
                 notes: tuple[str, ...]) -> tuple[BindingChange, ...]:
        """The binding changes that reach the cluster (not those of Jobs kept as created)."""
        rebound = {m.intent for m in manifests if m.ref not in self._preview_by_ref
                   or m.content is not self._preview_by_ref[m.ref].content}
        return tuple(c for c in changes(self.preview, plan, names, occupied, notes) if c.intent in rebound)

    def _choose(self, bound: Sequence[Manifest], live: Mapping[ObjectRef, Mapping[str, Any] | None],
                occupied: Occupancy, moving: frozenset[ObjectRef] = frozenset()
                ) -> tuple[tuple[Manifest, ...], dict[ObjectRef, str]]:
        """Per object: the preview's manifest where the binding did not move, the bound one
        (marked with the preview's hash) where it did.  What already runs from the preview's
        content stays where it is: a Job always (its pod template is immutable), a Deployment
        unless one of its nodes is unavailable now; a Job of `moving` is not kept (the
        caller deletes and re-creates it, or updates it while it is suspended)."""
        out: list[Manifest] = []
        kept: dict[ObjectRef, str] = {}
        for m in bound:
            before = self._preview_by_ref.get(m.ref)
            if before is None or m.spec_hash == before.spec_hash:
                out.append(before or m)
                continue
            body = live.get(m.ref)
            have = _hash(body, SPEC_HASH_ANNOTATION)
            same_content = before.spec_hash in (have, _hash(body, PREVIEW_HASH_ANNOTATION))
            if body is not None and have != m.spec_hash and same_content and m.ref not in moving:
                nodes = _nodes(body)
                if m.ref.kind in IMMUTABLE_TEMPLATE_KINDS or not set(nodes.split(",")) & occupied.unavailable:
                    out.append(before)
                    now = _nodes(m.body)
                    kept[m.ref] = (f"runs bound to {nodes or 'its nodes'} since it was created; kept there"
                                   + (f" (the live plan would now choose {now})" if now else ""))
                    continue
            out.append(_marked(m, before.spec_hash))
        return tuple(out), kept

def describe(b: Binding) -> list[str]:
    """Lines for the apply report: where the live binding differs from the preview, and why."""
    lines = [f"live binding differs from the preview: {c.text()}" for c in b.changes]
    lines += [f"kept: {ref}: {why}" for ref, why in sorted(b.kept.items())]
    return lines + list(b.remarks)


__all__ = ["Binding", "LiveBinder", "PREVIEW_HASH_ANNOTATION", "describe"]
