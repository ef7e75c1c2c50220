"""Re-binding intents on live state, and saying where it differs from the preview (pure).

The plan CI makes (`compile`, `plan` without a cluster) is a *preview*: it
binds every wave at once on the empty topology, hours before a later wave
starts.  `apply --wait` re-plans the intents it releases together just
before creating them (reconcile/release.py): those intents alone (what came
before has run or still runs, and then holds its GPUs as the live
`Occupancy` says), planned on what the cluster has free now.  This module holds the pure steps of that:

* `unfit` — the intents whose preview GPUs the cluster cannot give now (node
  unavailable, GPUs held; with `together`, also GPUs that another intent
  released at the same moment takes, which the plan starts first): only
  those are re-planned, everything that still
  fits keeps the preview's binding (the plan CI reviewed; nothing moves
  without a reason);
* `holding` — the occupancy plus the GPUs the kept intents will take;
* `wave_program` — the intents to re-plan as a program of their own (their
  `after` / data edges point at intents that are done, so they are dropped);
* `merged` — the preview plan with the wave's intents bound as the fresh
  plan binds them, everything else (waves, times, other intents) untouched,
  so rendering it yields the same objects with the wave's new binding;
* `changes` — per intent whose binding moved, from where to where and why
  (the node is cordoned / NotReady / tainted / gone, its GPUs are held by
  pods this target does not own), read from the occupancy notes;
* `blocked` — the intents that cannot be placed now (with `now`, also those
  the fresh plan can place only after others of them), with the planner's
  reason: they then wait instead of being forced onto busy GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from intentc import ir
from intentc.plan.model import Busy, NodeAllocation, Occupancy, Plan


@dataclass(frozen=True)
class BindingChange:
    """An intent bound somewhere else than the preview said."""

    intent: str
    preview: tuple[NodeAllocation, ...]
    live: tuple[NodeAllocation, ...]
    reasons: tuple[str, ...]

    def text(self) -> str:
        return f"{self.intent}: preview {where(self.preview)} -> live {where(self.live)} ({'; '.join(self.reasons)})"


@dataclass(frozen=True)
class Blocked:
    """An intent of the wave that the live cluster cannot hold now."""

    intent: str
    reason: str          # the planner's refusal class: capacity, fragmentation, no-domain, ...
    message: str

    def text(self) -> str:
        return f"{self.intent} does not fit now ({self.reason}): {self.message}"


def where(allocations: Iterable[NodeAllocation]) -> str:
    """"hgx-001 GPU 0-3" / "a GPU 0,1 + b GPU 0,1" / "no GPUs"."""
    parts = [f"{a.node} GPU {_ints(a.gpus)}" for a in allocations]
    return " + ".join(parts) or "no GPUs"


def _ints(xs: tuple[int, ...]) -> str:
    if xs and list(xs) == list(range(xs[0], xs[0] + len(xs))) and len(xs) > 2:
        return f"{xs[0]}-{xs[-1]}"
    return ",".join(map(str, xs))


def _fits(allocations: Iterable[NodeAllocation], occupied: Occupancy, busy: dict[str, set[int]]) -> bool:
    return all(a.node not in occupied.unavailable and not busy.get(a.node, set()) & set(a.gpus) for a in allocations)


def unfit(preview: Plan, intents: Iterable[str], occupied: Occupancy, together: bool = False) -> tuple[str, ...]:
    """The intents of `intents` whose preview GPUs are not all free now, sorted.  With
    `together` (they are created at the same moment), also those whose GPUs another of
    them takes that the plan starts first: the plan runs them one after the other there,
    the cluster would run one and leave the other Pending."""
    busy: dict[str, set[int]] = {}
    for b in occupied.busy:
        busy.setdefault(b.node, set()).update(b.gpus)
    placed = {p.intent: p for p in preview.placements}     # Plan.placement is a scan: 2,000 intents, 2,000 scans
    if not together:
        return tuple(sorted(n for n in set(intents)
                            if (p := placed.get(n)) is not None and not _fits(p.allocations, occupied, busy)))
    out = []
    for p in sorted((placed[n] for n in set(intents) if n in placed), key=lambda p: (p.start_s, p.intent)):
        if not _fits(p.allocations, occupied, busy):
            out.append(p.intent)
            continue
        for a in p.allocations:
            busy.setdefault(a.node, set()).update(a.gpus)
    return tuple(sorted(out))


def holding(occupied: Occupancy, preview: Plan, kept: Iterable[str]) -> Occupancy:
    """`occupied` plus the preview GPUs of the `kept` intents, held for the whole re-plan."""
    taken: dict[str, set[int]] = {}
    for b in occupied.busy:
        taken.setdefault(b.node, set()).update(b.gpus)
    placed = {p.intent: p for p in preview.placements}
    for name in kept:
        p = placed.get(name)
        for a in p.allocations if p is not None else ():
            taken.setdefault(a.node, set()).update(a.gpus)
    return Occupancy(tuple(Busy(node, tuple(sorted(gpus))) for node, gpus in sorted(taken.items()) if gpus),
                     occupied.unavailable)


def wave_program(program: ir.Program, intents: Iterable[str]) -> ir.Program:
    """The given intents as a program of their own: the same tenants and datasets, the
    intents without their `after` / `consumes` edges (what they wait for has run)."""
    names = set(intents)
    push = ir.TriggerKind.PUSH.value
    kept = tuple(replace(i, consumes=(),
                         trigger=replace(i.trigger, kind=push, after=()) if i.trigger.after else i.trigger)
                 for i in program.intents if i.name in names)
    return replace(program, intents=kept)


def merged(preview: Plan, fresh: Plan, intents: Iterable[str]) -> Plan:
    """`preview` with `intents` bound as `fresh` binds them (times and waves stay the
    preview's).  An intent `fresh` could not place keeps its preview binding: the caller
    waits for it (`blocked`) rather than render it elsewhere."""
    names = set(intents)
    moved = {p.intent: p for p in fresh.placements if p.intent in names}
    placements = tuple(replace(p, allocations=moved[p.intent].allocations, domains=moved[p.intent].domains,
                               interconnect=moved[p.intent].interconnect) if p.intent in moved else p
                       for p in preview.placements)
    batches = tuple(fresh.batch(b.intent) or b if b.intent in moved else b for b in preview.batches)
    strategies = tuple(fresh.strategy(s.intent) or s if s.intent in moved else s for s in preview.strategies)
    return replace(preview, placements=placements, batches=batches, strategies=strategies)


def _by_node(notes: Iterable[str]) -> dict[str, list[str]]:
    """Occupancy notes ("NODE: what") by node."""
    out: dict[str, list[str]] = {}
    for note in notes:
        node, sep, what = note.partition(": ")
        if sep:
            out.setdefault(node, []).append(what)
    return out


def _reasons(before: tuple[NodeAllocation, ...], occupied: Occupancy, notes: dict[str, list[str]]) -> list[str]:
    busy = {b.node: set(b.gpus) for b in occupied.busy}
    out: list[str] = []
    for a in before:
        if a.node in occupied.unavailable:
            out += [f"{a.node} {what}" for what in notes.get(a.node, ["unavailable"])]
        elif busy.get(a.node, set()) & set(a.gpus):
            out += [f"{a.node} {what}" for what in notes.get(a.node, []) if what.startswith("GPU ")] or \
                   [f"{a.node} GPU {_ints(tuple(sorted(busy[a.node] & set(a.gpus))))} busy"]
    return out


def changes(preview: Plan, bound: Plan, intents: Iterable[str], occupied: Occupancy,
            notes: Iterable[str]) -> tuple[BindingChange, ...]:
    """Per intent of `intents` whose GPUs in `bound` differ from `preview`, and why."""
    by_node = _by_node(notes)
    before = {p.intent: p for p in preview.placements}
    after = {p.intent: p for p in bound.placements}
    out = []
    for name in sorted(set(intents)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None or _gpus(a.allocations) == _gpus(b.allocations):
            continue
        reasons = _reasons(a.allocations, occupied, by_node) or [
            "the preview's GPUs are free, but the live plan of this wave chose others "
            "(GPUs it would have used are taken elsewhere)"]
        out.append(BindingChange(name, a.allocations, b.allocations, tuple(reasons)))
    return tuple(out)


def _gpus(allocations: tuple[NodeAllocation, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((a.node, a.gpus) for a in allocations)


def blocked(fresh: Plan, intents: Iterable[str], now: bool = False) -> tuple[Blocked, ...]:
    """The intents of `intents` the fresh plan could not place; with `now` (they are created
    at once), also those it could place only later, behind others of them."""
    names = set(intents)
    out = [Blocked(u.intent, u.reason, u.message) for u in fresh.unplaced if u.intent in names]
    if now:
        out += [Blocked(p.intent, "capacity", f"fits only after +{p.start_s}s, behind other intents released now "
                                              f"(the live plan queues it)")
                for p in fresh.placements if p.intent in names and p.start_s > 0]
    return tuple(sorted(out, key=lambda b: b.intent))
