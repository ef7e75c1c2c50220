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
from typing import Any, Mapping, Sequence

from intentc.daemon.reload.keys import declares
from intentc.daemon.reload.state import FileState, IntentRender, Snapshot
from intentc.ir import Intent, Program, Topology
from intentc.plan.model import Placement, Plan
from intentc.policy.catalogue import Policies
from intentc.render import crd_manifest, intent_manifests, priority_class_manifests, target_manifests, tenant_manifests
from intentc.render.capabilities import KubeVersion
from intentc.render.model import Choice, Manifest, Rendered
from intentc.render.output import to_yaml
from intentc.render.packed import BodyCodec
from intentc.render.targets import get_target

Change = tuple[str, FileState | None, FileState | None]     # file, state in the snapshot in force, state now


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
    # every intent's objects are kept packed (render/packed.py): ~150 bytes a Job, not ~6 KB
    codec: BodyCodec = field(default_factory=BodyCodec, compare=False, repr=False)

    def render(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot | None,
               changes: Sequence[Change] | None, topology: Topology | None) -> Render:
        """`changes` (the files edited since `previous`) is given when its plan was kept."""
        if previous is not None and previous.topology is not topology:
            previous = None           # a target may render the topology itself (flavors, cliques)
        if previous is not None and changes is not None and previous.plan is plan and previous.uris == uris:
            return self._edit(program, plan, uris, previous, changes, topology)
        return self._whole(program, plan, uris, previous, topology)

    def _setup(self, program: Program, plan: Plan, intents: Sequence[Intent] | None, previous: Snapshot | None,
               topology: Topology | None) -> tuple[list[Manifest], tuple[str, ...]]:
        """Tenants' objects, the CRD, priority classes (`intents`; None: the previous ones), the target's."""
        tgt = get_target(self.target)
        setup = tenant_manifests(program, self.commit, plan, self.policies, tgt.gpu_quota,
                                 tgt.tenant_gpu_ceiling(topology))
        setup.append(crd_manifest(self.kube_version, self.commit))
        if intents is None and previous is not None:
            setup.extend(m for m in previous.setup if m.ref.kind == "PriorityClass")
        else:
            setup.extend(priority_class_manifests(intents or (), self.commit))
        setup.extend(target_manifests(tgt, program, program.intents, topology, self.commit))
        old = ({m.ref: (m, t) for m, t in zip(previous.setup, previous.setup_texts, strict=True)}
               if previous is not None else {})
        texts = []
        for m in setup:                   # a few objects per tenant: reuse the YAML when the body is equal
            known = old.get(m.ref)
            texts.append(known[1] if known is not None and known[0].body == m.body else to_yaml(m.body))
        return setup, tuple(texts)

    def _one(self, intent: Intent, placement: Placement | None, wave: int, uris: Mapping[str, str | None],
             decided: tuple[Any, ...], topology: Topology | None) -> IntentRender:
        made, choice = intent_manifests(intent, placement, wave, self.kube_version, get_target(self.target), uris,
                                        self.commit, decided[0], self.policies, decided[1], topology)
        packed = tuple(m.packed(self.codec) for m in made)
        return IntentRender(intent, placement, wave, data_of(intent, uris), packed, choice, decided)

    def _edit(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot,
              changes: Sequence[Change], topology: Topology | None) -> Render:
        """Same plan, same URIs, same topology: only the changed files' intents can differ."""
        if any(declares(b, "tenants") or declares(a, "tenants") for _, b, a in changes):
            setup, setup_texts = self._setup(program, plan, None, previous, topology)
        else:
            setup, setup_texts = list(previous.setup), previous.setup_texts
        renders = dict(previous.intents)
        rerendered = []
        for _, _, now in changes:
            for intent in now.result.program.intents if now is not None else ():
                hit = renders.get(intent.name)
                if hit is not None and not hit.fits(intent, hit.placement, hit.wave, hit.decided):
                    renders[intent.name] = self._one(intent, hit.placement, hit.wave, uris, hit.decided, topology)
                    rerendered.append(intent.name)
        return self._finish(renders, setup, setup_texts, tuple(sorted(rerendered)), previous)

    def _whole(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot | None,
               topology: Topology | None) -> Render:
        """Every scheduled intent looked at; those whose inputs are equal reuse their render."""
        same_data = previous is not None and previous.uris == uris
        batch_of = {b.intent: b for b in plan.batches}
        strategy_of = {st.intent: st for st in plan.strategies}
        scheduled = {name for wave in plan.waves for name in wave}
        intents = [i for i in program.intents if i.name in scheduled]
        setup, setup_texts = self._setup(program, plan, intents, previous, topology)
        cache: Mapping[str, IntentRender] = previous.intents if previous is not None else {}
        renders: dict[str, IntentRender] = {}
        # Plan.wave_of / Plan.placement scan the plan: index once.
        waves = {name: i for i, names in enumerate(plan.waves) for name in names}
        placements = {p.intent: p for p in plan.placements}
        rerendered = []
        for intent in intents:
            wave, placement = waves[intent.name], placements.get(intent.name)
            decided = (batch_of.get(intent.name), strategy_of.get(intent.name))
            hit = cache.get(intent.name)
            if hit is None or not hit.fits(intent, placement, wave, decided) or (
                    not same_data and hit.data != data_of(intent, uris)):
                renders[intent.name] = self._one(intent, placement, wave, uris, decided, topology)
                rerendered.append(intent.name)
            else:
                renders[intent.name] = hit
        return self._finish(renders, setup, setup_texts, tuple(sorted(rerendered)), previous)

    def _finish(self, renders: dict[str, IntentRender], setup: list[Manifest], setup_texts: tuple[str, ...],
                rerendered: tuple[str, ...], previous: Snapshot | None) -> Render:
        # the same intents as before: every one not re-rendered is the previous render itself
        same = previous is not None and len(renders) == len(previous.intents) and all(
            n in previous.intents for n in rerendered)
        manifests = _patched(previous, setup, renders, rerendered) if same and previous is not None else None
        if manifests is None:
            everything = list(setup)
            for r in renders.values():
                everything.extend(r.manifests)
            manifests = sorted(everything, key=_sort_key)
        if same and previous is not None:
            choices = _patched_choices(previous, renders, rerendered)
        else:
            choices = sorted((r.choice for r in renders.values() if r.choice is not None), key=_intent_of)
        rendered = Rendered(tuple(manifests), str(self.kube_version), get_target(self.target).name, self.commit,
                            tuple(choices))
        return Render(rendered, renders, tuple(setup), setup_texts, rerendered)


def data_of(intent: Intent, uris: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted((r.name, uris.get(r.name)) for r in intent.consumes + intent.produces))


def _sort_key(m: Manifest) -> tuple[int, str, str, str]:
    return (m.step, m.ref.kind, m.ref.namespace, m.ref.name)


def _intent_of(c: Choice) -> str:
    return c.intent


def _patched(previous: Snapshot, setup: Sequence[Manifest], renders: Mapping[str, IntentRender],
             rerendered: Sequence[str]) -> list[Manifest] | None:
    """The previous apply order with the new objects in the old ones' places, or
    None when the edit moved something (an object added, dropped or re-stepped).
    The intents are those of `previous`; only `rerendered` ones have new renders."""
    if len(setup) != len(previous.setup):
        return None
    swaps = list(zip(previous.setup, setup))
    for name in rerendered:
        old = previous.intents[name]
        if len(old.manifests) != len(renders[name].manifests):
            return None
        swaps.extend(zip(old.manifests, renders[name].manifests))
    ordered = previous.rendered.manifests
    out = list(ordered)
    for old_m, new_m in swaps:
        if old_m is new_m:
            continue
        if old_m.ref != new_m.ref or old_m.step != new_m.step:
            return None
        key = _sort_key(old_m)
        i = bisect_left(ordered, key, key=_sort_key)
        while i < len(ordered) and ordered[i] is not old_m and _sort_key(ordered[i]) == key:
            i += 1                                   # equal keys: find that very object
        if i == len(ordered) or ordered[i] is not old_m:
            return None
        out[i] = new_m
    return out


def _patched_choices(previous: Snapshot, renders: Mapping[str, IntentRender], rerendered: Sequence[str]
                     ) -> list[Choice]:
    """The previous choices (sorted by intent) with the re-rendered intents' swapped in
    (the intents are those of `previous`)."""
    out = list(previous.rendered.choices)
    for name in rerendered:
        new = renders[name].choice
        i = bisect_left(out, name, key=_intent_of)
        present = i < len(out) and out[i].intent == name
        if new is None:
            if present:
                del out[i]
        elif present:
            out[i] = new
        else:
            out.insert(i, new)
    return out
