"""The order in which intents are offered to the cluster.

First by SLA class (P0 before P1 ...; an intent without one is P2, the
middle of the range).  Within a class, weighted fair share between tenants:
the next intent comes from the tenant with the lowest allocated/weight
ratio so far, ties to the tenant name; within a tenant, the caller's `first`
key (the schedule passes the longest chain of work the intent holds up,
longest first: list scheduling for makespan), then earlier waves, then
smaller gangs first, then by intent name.  Ratios are compared exactly
(as integers), and nothing depends on the order declarations appear in the
files.

Smaller gangs first is the count-maximising rule: when a class does not fit,
the plan refuses the fewest intents of it, and the tenant still pays for
every GPU in fair share, so no tenant gains by splitting work.  An intent
that must win over its tenant's smaller ones says so with a higher SLA class.

Allocation counts carry over from one SLA class to the next, so a tenant
that got a lot of P0 capacity waits its turn in P1.  In a plan over time
(`schedule.py`) the counts start, at each instant, from the GPUs each tenant
holds at that instant, so fair share holds at every instant, not only
across the plan.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from intentc import ir

DEFAULT_SLA = ir.SlaClass.P2
DEFAULT_TIER = ir.Tier.SILVER


# an SLA class name -> its rank: a dict, as an enum lookup per intent shows at 100,000 intents
_RANKS = {c.value: c.rank for c in ir.SlaClass}


def sla_rank(intent: ir.Intent) -> int:
    """The rank of the intent's SLA class; P2 where it has none or an unknown one."""
    sla = intent.constraints.sla
    return _RANKS.get(sla, DEFAULT_SLA.rank) if sla else DEFAULT_SLA.rank


_SLA_NAMES = tuple(c.value for c in sorted(ir.SlaClass, key=lambda c: c.rank))


def sla_name(intent: ir.Intent) -> str:
    """"P0".."P3": one string object per class, not one per placement (the plan keeps them)."""
    rank = sla_rank(intent)
    return _SLA_NAMES[rank] if 0 <= rank < len(_SLA_NAMES) else f"P{rank}"


def tenant_weight(tenant: ir.Tenant | None) -> int:
    """An explicit positive weight, else the tier's default (gold 4, silver 2, bronze 1)."""
    if tenant is not None and tenant.weight is not None and tenant.weight > 0:
        return tenant.weight
    try:
        tier = ir.Tier(tenant.tier) if tenant is not None and tenant.tier else DEFAULT_TIER
    except ValueError:
        tier = DEFAULT_TIER
    return tier.default_weight


@dataclass(frozen=True)
class TenantTerms:
    weight: int
    quota_gpus: int | None


class FairShare:
    """Tracks GPUs allocated per tenant and hands out intents in admission order."""

    def __init__(self, terms: Mapping[str, TenantTerms], allocated: Mapping[str, int] | None = None) -> None:
        self.terms = dict(terms)
        self.allocated: dict[str, int] = {t: (allocated or {}).get(t, 0) for t in self.terms}
        # allocated/weight compared exactly as integers: allocated * (L / weight), L = lcm of weights
        lcm = math.lcm(*(t.weight for t in self.terms.values())) if self.terms else 1
        self._scale = {t: lcm // terms.weight for t, terms in self.terms.items()}
        self._charges = 0           # how many charges so far: the next tenant changes only after one

    def charge(self, tenant: str, gpus: int) -> None:
        self.allocated[tenant] = self.allocated.get(tenant, 0) + gpus
        self._charges += 1

    def over_quota(self, tenant: str, gpus: int) -> bool:
        quota = self.terms[tenant].quota_gpus
        return quota is not None and self.allocated.get(tenant, 0) + gpus > quota

    def _share(self, tenant: str) -> int:
        return self.allocated.get(tenant, 0) * self._scale[tenant]

    def order(self, intents: Sequence[ir.Intent], wave_of: Mapping[str, int],
              rank_of: Mapping[str, int] | None = None,
              first: Mapping[str, int] | None = None,
              keys: Mapping[str, tuple[int, int, int, str]] | None = None) -> Iterator[ir.Intent]:
        """Yield intents in admission order; call `charge` between yields to steer it.
        (`rank_of`: SLA ranks by intent name, when the caller has them already; `keys`: the
        order inside a tenant by intent name, as `queue_keys` makes it, likewise.)"""
        classes: dict[int, dict[str, list[ir.Intent]]] = {}
        for intent in intents:
            rank = rank_of[intent.name] if rank_of is not None else sla_rank(intent)
            classes.setdefault(rank, {}).setdefault(intent.tenant, []).append(intent)
        if keys is None:
            keys = queue_keys(intents, wave_of, first)
        for rank in sorted(classes):
            queues = {t: deque(sorted(q, key=lambda i: keys[i.name]))
                      for t, q in sorted(classes[rank].items())}
            allocated, scale = self.allocated, self._scale
            tenant, seen = None, -1
            while queues:
                # the least-served tenant stays the least served until a charge or its queue runs
                # out (an intent that waits is not charged): recomputed only then
                if tenant is None or seen != self._charges:
                    tenant = min(queues, key=lambda t: (allocated.get(t, 0) * scale[t], t))   # as `_share`
                    seen = self._charges
                queue = queues[tenant]
                intent = queue.popleft()
                if not queue:
                    del queues[tenant]
                    tenant = None
                yield intent


def queue_keys(intents: Sequence[ir.Intent], wave_of: Mapping[str, int],
               first: Mapping[str, int] | None = None) -> dict[str, tuple[int, int, int, str]]:
    """The order inside one tenant's queue: the caller's `first` key, wave, smaller gangs, name."""
    lead = first or {}
    late = len(wave_of) + 1
    return {i.name: (lead.get(i.name, 0), wave_of.get(i.name, late), i.gpu_count, i.name) for i in intents}
