"""The scheduling plan as data: what the planner produces and the renderer consumes.

This is the contract between `intentc.plan` (placement) and
`intentc.render` / `intentc.reconcile`; both sides import only these
classes.  Everything is frozen and ordered, so `plan.json` is byte-stable.

Times are *plan time*: seconds after the plan starts (when its first wave
is applied), not wall-clock, so a plan stays the same bytes whenever it is
made.  `None` as an end means open-ended (a `serve` intent, or GPUs held
by something outside the plan with no known end).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NodeAllocation:
    """The GPUs one gang member gets on one node."""

    node: str
    gpus: tuple[int, ...]               # GPU indices on the node, ascending
    numa_nodes: tuple[int, ...] = ()    # NUMA nodes of those GPUs (from the topo matrix)
    nics: tuple[str, ...] = ()          # NICs closest to those GPUs (e.g. "mlx5_0")
    link: str = "unknown"               # weakest link inside this set: "NV18", "PIX", "SYS", ...


@dataclass(frozen=True, slots=True)
class Placement:
    intent: str
    tenant: str
    allocations: tuple[NodeAllocation, ...]        # sorted by node name
    domains: tuple[tuple[str, str | None], ...]    # (level, shared domain or None if spread), outermost first
    interconnect: str = "nvlink"        # what carries the gang's collectives: "nvlink" | "pcie" | "network" | "none"
    start_s: int = 0                    # plan time the intent starts (its GPUs are reserved from then)
    end_s: int | None = 0               # plan time it ends and frees its GPUs; None: open-ended (serve)
    ready_s: int = 0                    # when its dependencies allowed it to start; start_s > ready_s: queued
    sla: str = "P2"                     # the SLA class it was admitted in

    @property
    def queued_s(self) -> int:
        """How long it waits for GPUs (or its tenant's quota) after it could have started."""
        return self.start_s - self.ready_s

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(a.node for a in self.allocations)

    @property
    def gpu_count(self) -> int:
        return sum(len(a.gpus) for a in self.allocations)


@dataclass(frozen=True, slots=True)
class Unplaced:
    intent: str
    tenant: str
    reason: str                         # "no-product" | "quota" | "no-domain" | "fragmentation" | "capacity" | "dependency"
    message: str


@dataclass(frozen=True, slots=True)
class TenantShare:
    tenant: str
    weight: int
    quota_gpus: int | None
    requested_gpus: int
    allocated_gpus: int                 # the most GPUs the tenant holds at any one instant
    gpu_seconds: int = 0                # GPU-time of its finite intents (open-ended ones not counted)


@dataclass(frozen=True, slots=True)
class Metrics:
    gpus_total: int
    gpus_allocated: int                 # the most GPUs held at any one instant
    idle_gpus_on_used_nodes: int        # fragmentation, at plan time 0
    jobs_spanning_nvlink_domains: int
    jain_fairness: float                # weighted Jain index over tenants
    makespan_s: int                     # when the last finite intent ends
    critical_path: tuple[str, ...] = ()  # over the intents that run only
    critical_path_s: int = 0            # the lower bound the dependencies alone set
    queued: int = 0                     # intents that wait for GPUs after they are ready
    gpu_seconds: int = 0                # GPU-time of all finite intents
    refused_path: tuple[str, ...] = ()  # the longest chain of refused intents, listed apart
    refused_path_s: int = 0


@dataclass(frozen=True, slots=True)
class Busy:
    """GPUs of a node the plan must not use, from plan time 0 until `until_s`.

    Input to `make_plan` (e.g. GPUs held by pods this target does not own,
    read from a live cluster by the caller): plain data, so the planner
    stays pure.  `until_s` None: held for the whole plan.
    """

    node: str
    gpus: tuple[int, ...]
    until_s: int | None = None
    # the tenant whose work holds them (a running intent a re-plan keeps): counted against
    # its quota and its exclusive-domain rules as long as they are held; None: foreign
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class Occupancy:
    """What is already taken before the plan starts: busy GPUs and whole nodes
    that must not be used (cordoned, NotReady, tainted ...)."""

    busy: tuple[Busy, ...] = ()
    unavailable: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class BatchSizing:
    """The concrete batch of a `batch: auto` intent for the GPUs it was given (plan/batch_size.py)."""

    intent: str
    size: int                           # what INTENTC_BATCH carries
    max: int | None                     # the intent's `auto(max N)`
    estimate: int | None                # the rule's value before clamping; None: not estimated
    derivation: str                     # the computation, step by step


@dataclass(frozen=True, slots=True)
class Strategy:
    """The batching decision for a placed GPU intent (intentc/ir/tolerance.py, plan/strategy.py)."""

    intent: str
    strategy: str                       # latency | throughput | elastic
    fragmentation: float                # share of the chosen domain's GPUs free on partly used nodes
    domain: str                         # the chosen domain, "level name"
    precisions: tuple[str, ...]         # allowed precisions, widest first


@dataclass(frozen=True, slots=True)
class Plan:
    topology: str
    waves: tuple[tuple[str, ...], ...]  # intent names per wave, sorted
    placements: tuple[Placement, ...]   # sorted by intent name; CPU-only intents have no allocations
    unplaced: tuple[Unplaced, ...]
    tenants: tuple[TenantShare, ...]
    metrics: Metrics
    seed: int = 0
    # "preview": planned on the empty topology (no cluster given); "live": on what a
    # cluster had free when it was read, `basis_notes` saying what was left alone and why.
    basis: str = "preview"
    basis_notes: tuple[str, ...] = ()
    batches: tuple[BatchSizing, ...] = ()   # sorted by intent name; one per placed `batch: auto` intent
    strategies: tuple[Strategy, ...] = ()   # sorted by intent name; one per placed GPU intent

    def placement(self, intent: str) -> Placement | None:
        return next((p for p in self.placements if p.intent == intent), None)

    def batch(self, intent: str) -> BatchSizing | None:
        return next((b for b in self.batches if b.intent == intent), None)

    def strategy(self, intent: str) -> Strategy | None:
        return next((s for s in self.strategies if s.intent == intent), None)

    def wave_of(self, intent: str) -> int:
        for i, wave in enumerate(self.waves):
            if intent in wave:
                return i
        raise KeyError(intent)
