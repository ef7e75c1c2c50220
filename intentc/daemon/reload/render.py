"""Incremental render: `intentc.render.render`, with per-intent results reused.

Every intent's manifests are cached with the inputs they were rendered from
(`IntentRender`); a reload renders again only the intents whose inputs
differ.  When the plan was kept (same object), the dataset URIs and the
topology are the same, only the intents of the changed files can differ, so
nothing else is even looked at.  Their new manifests are then patched into
the previous snapshot's apply order by binary search on the sort key (the
order is `Manifest.sort_key`): 100,000 objects need neither a loop nor a
sort for a one-file edit.  Anything that could move an object in that order
(a new object, a changed step) falls back to the full sort.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Collection, Mapping, Sequence

from intentc.daemon.reload.keys import declares
from intentc.daemon.reload.layered import Layered
from intentc.daemon.reload.state import FileState, IntentRender, Snapshot
from intentc.ir import Intent, Program, Topology
from intentc.plan.incremental import by_intent, patched_by_intent
from intentc.plan.model import Placement, Plan
from intentc.policy.catalogue import Policies, Requirement
from intentc.render import admission_manifests, crd_manifest, intent_manifests, priority_class_manifests, target_manifests, tenant_manifests
from intentc.render.capabilities import KubeVersion
from intentc.render.model import Choice, Manifest, Rendered
from intentc.render.output import to_yaml
from intentc.render.packed import BodyCodec
from intentc.render.targets import DEFAULT_TARGET, get_target

Change = tuple[str, FileState | None, FileState | None]
# what the plan decided for an intent without batch sizing or strategy: one tuple for all of them
UNDECIDED: tuple[Any, ...] = (None, None)     # file, state in the snapshot in force, state now


@dataclass(frozen=True)
class Render:
    rendered: Rendered
    intents: Mapping[str, IntentRender]
    setup: tuple[Manifest, ...]
    setup_texts: tuple[str, ...]
    rerendered: tuple[str, ...]


@dataclass(frozen=True)
class Renderer:
    """What is fixed for one `Reloader`: commit, Kubernetes version, target, tag rules."""

    commit: str
    kube_version: KubeVersion
    target: str
    policies: Policies
    # every intent's objects are kept packed (render/packed.py): a Job's few compressed bytes, not its dictionaries
    codec: BodyCodec = field(default_factory=BodyCodec, compare=False, repr=False)

    def render(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot | None,
               changes: Sequence[Change] | None, topology: Topology | None,
               moved: Collection[str] | None = None, waves: Mapping[str, int] | None = None,
               dropped: Collection[str] = ()) -> Render:
        """`changes` (the files edited since `previous`) is given when its plan was kept, or
        when the plan was patched incrementally (plan/incremental.py): then `moved` names the
        intents whose placement, batch, strategy or wave the patch changed, `waves` the
        waves of those it re-placed and `dropped` the intents it removed."""
        if previous is not None and previous.topology is not topology:
            previous = None           # a target may render the topology itself (flavors, cliques)
        if previous is not None and changes is not None and previous.uris == uris:
            if previous.plan is plan:
                return self._edit(program, plan, uris, previous, changes, topology)
            if moved is not None:
                return self._patched_plan(program, plan, uris, previous, changes, moved, topology, waves or {},
                                          dropped)
        return self._whole(program, plan, uris, previous, topology)

    def _setup(self, program: Program, plan: Plan, intents: Sequence[Intent] | None, previous: Snapshot | None,
               topology: Topology | None, deny: Collection[str] | None = None) -> tuple[list[Manifest], tuple[str, ...]]:
        """Tenants' objects, the CRD, priority classes (`intents`; None: the previous ones), the target's
        (`deny`: the tenants that get a default-deny policy, when known)."""
        tgt = get_target(self.target)
        setup = tenant_manifests(program, self.commit, plan, self.policies, tgt.gpu_quota,
                                 tgt.tenant_gpu_ceiling(topology), deny)
        setup.append(self._crd)
        setup.extend(admission_manifests(self.policies, self.commit))
        if intents is None and previous is not None:
            setup.extend(m for m in previous.setup if m.ref.kind == "PriorityClass")
        else:
            setup.extend(priority_class_manifests(intents or (), self.commit))
        setup.extend(target_manifests(tgt, program, program.intents, topology, self.commit))
        old = ({m.ref: (m, t) for m, t in zip(previous.setup, previous.setup_texts, strict=True)}
               if previous is not None else {})
        texts = []
        for k, m in enumerate(setup):     # a few objects per tenant: reuse the object and its YAML when equal
            known = old.get(m.ref)
            if known is not None and known[0].body == m.body:
                setup[k] = known[0]       # the same object: the apply order keeps it without a search
                texts.append(known[1])
            else:
                texts.append(to_yaml(m.body))
        return setup, tuple(texts)

    @cached_property
    def _crd(self) -> Manifest:
        """The Intent CRD: fixed per Kubernetes version and commit, and big (its schema):
        stamping it again would cost every reload the same, whatever its size."""
        return crd_manifest(self.kube_version, self.commit)

    def _one(self, intent: Intent, placement: Placement | None, wave: int, uris: Mapping[str, str | None],
             decided: tuple[Any, ...], topology: Topology | None) -> IntentRender:
        made, choice = intent_manifests(intent, placement, wave, self.kube_version, get_target(self.target), uris,
                                        self.commit, decided[0], self.policies, decided[1], topology)
        packed = tuple(m.packed(self.codec) for m in made)
        return IntentRender(intent, placement, wave, packed, choice, decided)

    def _edit(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot,
              changes: Sequence[Change], topology: Topology | None) -> Render:
        """Same plan, same URIs, same topology: only the changed files' intents can differ."""
        if any(declares(b, "tenants") or declares(a, "tenants") for _, b, a in changes):
            setup, setup_texts = self._setup(program, plan, None, previous, topology)
        else:
            setup, setup_texts = list(previous.setup), previous.setup_texts
        made: dict[str, IntentRender] = {}
        for _, _, now in changes:
            for intent in now.program.intents if now is not None else ():
                hit = previous.intents.get(intent.name)
                if hit is not None and not hit.fits(intent, hit.placement, hit.wave, hit.decided):
                    made[intent.name] = self._one(intent, hit.placement, hit.wave, uris, hit.decided, topology)
        renders = layered(previous.intents).patched(made)
        return self._finish(renders, setup, setup_texts, tuple(sorted(made)), previous)

    def _patched_plan(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot,
                      changes: Sequence[Change], moved: Collection[str], topology: Topology | None,
                      waves: Mapping[str, int], dropped: Collection[str]) -> Render:
        """An incrementally patched plan: the changed files' intents and the `moved` ones are
        looked at, with their placement, decisions and wave from the new plan, new intents
        rendered, `dropped` ones left out; the cluster-wide objects are made again (they
        read tenants' planned GPUs and the SLA classes in use)."""
        now = {i.name: i for _, _, a in changes for i in (a.program.intents if a is not None else ())}
        setup, setup_texts = self._patched_setup(program, plan, previous, changes, topology)
        made: dict[str, IntentRender] = {}
        for name in sorted(now.keys() | set(moved)):
            hit = previous.intents.get(name) if name not in dropped else None
            intent = now[name] if hit is None else now.get(name, hit.intent)
            wave = waves[name] if hit is None else waves.get(name, hit.wave)
            placement = by_intent(plan.placements, name)
            decided = (by_intent(plan.batches, name), by_intent(plan.strategies, name))
            if hit is None or not hit.fits(intent, placement, wave, decided):
                made[name] = self._one(intent, placement, wave, uris, decided, topology)
        renders = layered(previous.intents).patched(made, tuple(dropped))
        return self._finish(renders, setup, setup_texts, tuple(made), previous, tuple(dropped))

    def _patched_setup(self, program: Program, plan: Plan, previous: Snapshot, changes: Sequence[Change],
                       topology: Topology | None) -> tuple[list[Manifest], tuple[str, ...]]:
        """The cluster-wide objects for a patched plan.  The SLA classes in use (priority
        classes) and the tenants with a default-deny policy are read off the previous objects
        and patched from the changed files' intents; only an edit that may take one away (an
        intent with an SLA class or a default-deny tag rule removed or changed) reads every
        intent again, as does a target with cluster objects of its own (reading every intent
        for the denials grows with the repository).  Nothing changed (tenants, classes, denials,
        planned GPUs): the previous objects themselves."""
        if self.target != DEFAULT_TARGET:
            return self._setup(program, plan, program.intents, previous, topology)
        before = {i.name: i for _, b, _ in changes for i in (b.program.intents if b is not None else ())}
        after = {i.name: i for _, _, a in changes for i in (a.program.intents if a is not None else ())}
        in_use = {m.body["metadata"]["labels"].get("intentc.dev/sla") for m in previous.setup
                  if m.ref.kind == "PriorityClass"}
        denied = {m.tenant for m in previous.setup if m.ref.kind == "NetworkPolicy" and m.tenant}

        def denies(i: Intent) -> bool:
            return self.policies.requires(i, Requirement.DEFAULT_DENY_NETWORK) is not None
        denial_lost = False
        left: set[str] = set()          # SLA classes an edited or removed intent no longer uses
        for name, old in before.items():
            new = after.get(name)
            if old.constraints.sla and (new is None or new.constraints.sla != old.constraints.sla):
                left.add(old.constraints.sla)
            denial_lost |= denies(old) and (new is None or new.tenant != old.tenant or not denies(new))
        # a class another intent still uses is kept: the search stops at the first one (many share one)
        classes_lost = any(not any(i.constraints.sla == c for i in program.intents) for c in left & in_use)
        classes_gained = any(i.constraints.sla and i.constraints.sla not in in_use for i in after.values())
        intents = program.intents if classes_lost or classes_gained else None
        deny = None if denial_lost else denied | {i.tenant for i in after.values() if denies(i)}
        if intents is None and deny == denied and not any(declares(b, "tenants") or declares(a, "tenants")
                                                          for _, b, a in changes) and \
                [(s.tenant, s.allocated_gpus) for s in plan.tenants] == \
                [(s.tenant, s.allocated_gpus) for s in previous.plan.tenants]:
            return list(previous.setup), previous.setup_texts
        return self._setup(program, plan, intents, previous, topology, deny)

    def _whole(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot | None,
               topology: Topology | None) -> Render:
        """Every scheduled intent looked at; those whose inputs are equal reuse their render."""
        scheduled = {name for wave in plan.waves for name in wave}
        intents = [i for i in program.intents if i.name in scheduled]
        del scheduled
        setup, setup_texts = self._setup(program, plan, intents, previous, topology)
        renders, rerendered = self._renders(intents, plan, uris, previous, topology)
        # the per-intent indexes of `_renders` are gone before the apply order is sorted
        return self._finish(Layered(renders), setup, setup_texts, rerendered, previous)

    def _renders(self, intents: Sequence[Intent], plan: Plan, uris: Mapping[str, str | None],
                 previous: Snapshot | None, topology: Topology | None
                 ) -> tuple[dict[str, IntentRender], tuple[str, ...]]:
        """Each intent's render: the previous one where its inputs are equal, else a new one."""
        same_data = previous is not None and previous.uris == uris
        batch_of = {b.intent: b for b in plan.batches}
        strategy_of = {st.intent: st for st in plan.strategies}
        cache: Mapping[str, IntentRender] = previous.intents if previous is not None else {}
        renders: dict[str, IntentRender] = {}
        # Plan.wave_of / Plan.placement scan the plan: index once.
        waves = {name: i for i, names in enumerate(plan.waves) for name in names}
        placements = {p.intent: p for p in plan.placements}
        rerendered = []
        for intent in intents:
            wave, placement = waves[intent.name], placements.get(intent.name)
            batch, strategy = batch_of.get(intent.name), strategy_of.get(intent.name)
            decided = UNDECIDED if batch is None and strategy is None else (batch, strategy)
            hit = cache.get(intent.name)
            # a kept render was made with its snapshot's URIs (it is kept only while they agree)
            if hit is None or not hit.fits(intent, placement, wave, decided) or (
                    not same_data and previous is not None
                    and data_of(intent, previous.uris) != data_of(intent, uris)):
                renders[intent.name] = self._one(intent, placement, wave, uris, decided, topology)
                rerendered.append(intent.name)
            else:
                renders[intent.name] = hit
        return renders, tuple(sorted(rerendered))

    def _finish(self, renders: Mapping[str, IntentRender], setup: list[Manifest], setup_texts: tuple[str, ...],
                rerendered: tuple[str, ...], previous: Snapshot | None, dropped: tuple[str, ...] = ()) -> Render:
        # every intent not re-rendered (nor dropped) is the previous render itself
        same = previous is not None and len(renders) + len(dropped) == len(previous.intents) + sum(
            n not in previous.intents for n in rerendered)
        manifests = _patched(previous, setup, renders, rerendered, dropped) if same and previous is not None else None
        if manifests is None:
            everything = list(setup)
            for r in renders.values():
                everything.extend(r.manifests)
            manifests = sorted(everything, key=_sort_key)
        if same and previous is not None:
            choices = _patched_choices(previous, renders, rerendered, dropped)
        else:
            choices = sorted((r.choice for r in renders.values() if r.choice is not None), key=_intent_of)
        rendered = Rendered(tuple(manifests), str(self.kube_version), get_target(self.target).name, self.commit,
                            tuple(choices))
        return Render(rendered, renders, tuple(setup), setup_texts, rerendered)


def layered(renders: Mapping[str, IntentRender]) -> Layered[str, IntentRender]:
    """The renders of a snapshot as a `Layered` mapping (every snapshot the Renderer makes
    holds one; another mapping is copied once)."""
    return renders if isinstance(renders, Layered) else Layered(dict(renders))


def data_of(intent: Intent, uris: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted((r.name, uris.get(r.name)) for r in intent.consumes + intent.produces))


def _sort_key(m: Manifest) -> tuple[int, str, str, str]:
    return (m.step, m.ref.kind, m.ref.namespace, m.ref.name)


def _intent_of(c: Choice) -> str:
    return c.intent


def _patched(previous: Snapshot, setup: Sequence[Manifest], renders: Mapping[str, IntentRender],
             rerendered: Sequence[str], dropped: Sequence[str] = ()) -> list[Manifest] | None:
    """The previous apply order with the new objects in the old ones' places; an object
    added, dropped or re-stepped (its wave moved) is inserted or deleted by binary search
    on its sort key.  None when the setup objects differ in number, or an old object is
    not where its key says (keys are unique: the full sort would place them alike)."""
    if len(setup) != len(previous.setup):
        return None
    swaps = list(zip(previous.setup, setup))
    added: list[Manifest] = []
    removed: list[Manifest] = []
    for name in rerendered:
        old = previous.intents.get(name)
        new = renders[name].manifests
        if old is not None and len(old.manifests) == len(new) and all(
                a.ref == b.ref and a.step == b.step for a, b in zip(old.manifests, new)):
            swaps.extend(zip(old.manifests, new))
        else:
            removed.extend(old.manifests if old is not None else ())
            added.extend(new)
    for name in dropped:
        removed.extend(previous.intents[name].manifests)
    ordered = previous.rendered.manifests
    out = list(ordered)
    gaps = []
    for old_m, new_m in (*swaps, *((m, None) for m in removed)):
        if old_m is new_m:
            continue
        if new_m is not None and (old_m.ref != new_m.ref or old_m.step != new_m.step):
            return None
        key = _sort_key(old_m)
        i = bisect_left(ordered, key, key=_sort_key)
        while i < len(ordered) and ordered[i] is not old_m and _sort_key(ordered[i]) == key:
            i += 1                                   # equal keys: find that very object
        if i == len(ordered) or ordered[i] is not old_m:
            return None
        if new_m is None:
            gaps.append(i)
        else:
            out[i] = new_m
    for i in sorted(gaps, reverse=True):
        del out[i]
    for m in added:
        out.insert(bisect_left(out, _sort_key(m), key=_sort_key), m)
    return out


def _patched_choices(previous: Snapshot, renders: Mapping[str, IntentRender], rerendered: Sequence[str],
                     dropped: Sequence[str] = ()) -> list[Choice]:
    """The previous choices (sorted by intent) with the re-rendered intents' swapped in
    and the dropped ones' left out."""
    changes: dict[str, Choice | None] = {n: renders[n].choice for n in rerendered}
    changes.update({n: None for n in dropped})
    return list(patched_by_intent(tuple(previous.rendered.choices), changes))
