"""What the reactor knows between turns, and the elector's message to it.

Plain data, written only by the reactor thread (`loop.py`), so no lock:
the one other reader, `/readyz` on the HTTP thread, reads `desired` and
`busy`, each assigned whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from intentc.daemon.source import Desired
from intentc.drift.detect import History
from intentc.drift.managed import Managed
from intentc.reconcile.inventory import Inventory


@dataclass
class ReactorState:
    """What the reactor knows; only the reactor thread writes it."""

    desired: Desired | None = None
    history: History | None = None
    head: str | None = None
    inventory: Inventory | None = None
    managed: Managed | None = None      # every target's objects, and intentc's own plumbing
    busy: str = ""                      # "" | "rollout" | "rollback"
    attempted: set[str] = field(default_factory=set)
    pending: Desired | None = None      # local mode: a plan that arrived during a rollout


@dataclass(frozen=True)
class Leadership:
    """The elector: this replica started (True) or stopped (False) leading."""

    leading: bool

