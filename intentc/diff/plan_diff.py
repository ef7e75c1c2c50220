"""What a change does to the plan on one topology: placements, capacity, fair share.

Both sides are planned on the *same* topology (the file given with
--topology), so every difference here is caused by the intents, not by
the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentc.plan.model import NodeAllocation, Placement, Plan


@dataclass(frozen=True)
class PlacementMove:
    intent: str
    old: str                    # "node-a[0-3]" (see `describe`)
    new: str


@dataclass(frozen=True)
class CapacityChange:
    intent: str
    placeable: bool             # False: placeable in the base, not in the head
    reason: str                 # the planner's reason ("capacity", "quota", ...) or "" when now placeable
    message: str


@dataclass(frozen=True)
class ShareChange:
    tenant: str
    old_allocated: int
    new_allocated: int
    old_requested: int
    new_requested: int
    old_weight: int
    new_weight: int


@dataclass(frozen=True)
class BatchChange:
    """The planner's `batch: auto` size changed (plan/batch_size.py): another placement, or other inputs."""

    intent: str
    old: int
    new: int
    derivation: str             # the head's


@dataclass(frozen=True)
class PlanDiff:
    topology: str
    moved: tuple[PlacementMove, ...] = ()
    capacity: tuple[CapacityChange, ...] = ()
    shares: tuple[ShareChange, ...] = ()
    batches: tuple[BatchChange, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.moved or self.capacity or self.shares or self.batches)


def _ranges(gpus: tuple[int, ...]) -> str:
    parts: list[str] = []
    start = prev = None
    for g in gpus:
        if start is not None and prev is not None and g == prev + 1:
            prev = g
            continue
        if start is not None:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = g
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def describe(allocations: tuple[NodeAllocation, ...]) -> str:
    return " + ".join(f"{a.node}[{_ranges(a.gpus)}]" for a in allocations) or "(no GPUs)"


def _where(p: Placement) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((a.node, a.gpus) for a in p.allocations)


def diff_plans(base: Plan, head: Plan) -> PlanDiff:
    moved = []
    # by name, once (`Plan.placement` scans the placements: per intent, that is quadratic)
    base_placed = {p.intent: p for p in base.placements}
    head_placed = {p.intent for p in head.placements}
    for hp in head.placements:
        bp = base_placed.get(hp.intent)
        if bp is not None and hp.allocations and _where(bp) != _where(hp):
            moved.append(PlacementMove(hp.intent, describe(bp.allocations), describe(hp.allocations)))
    base_unplaced = {u.intent: u for u in base.unplaced}
    head_unplaced = {u.intent: u for u in head.unplaced}
    capacity = [CapacityChange(u.intent, False, u.reason, u.message)
                for name, u in sorted(head_unplaced.items())
                if name not in base_unplaced and name in base_placed]
    capacity += [CapacityChange(name, True, "", "placeable again")
                 for name in sorted(base_unplaced) if name not in head_unplaced and name in head_placed]
    base_shares = {t.tenant: t for t in base.tenants}
    shares = []
    for t in head.tenants:
        b = base_shares.get(t.tenant)
        if b is None:
            continue
        if (b.allocated_gpus, b.requested_gpus, b.weight) != (t.allocated_gpus, t.requested_gpus, t.weight):
            shares.append(ShareChange(t.tenant, b.allocated_gpus, t.allocated_gpus, b.requested_gpus,
                                      t.requested_gpus, b.weight, t.weight))
    base_batches = {b.intent: b for b in base.batches}
    batches = [BatchChange(b.intent, base_batches[b.intent].size, b.size, b.derivation) for b in head.batches
               if b.intent in base_batches and base_batches[b.intent].size != b.size]
    return PlanDiff(head.topology, tuple(sorted(moved, key=lambda m: m.intent)),
                    tuple(sorted(capacity, key=lambda c: (c.placeable, c.intent))),
                    tuple(sorted(shares, key=lambda s: s.tenant)), tuple(batches))
