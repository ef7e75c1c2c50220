"""What the daemon does when the branch it follows points at a commit.

A pure decision (kopf's rule: detection decides, only the reactor acts).
The reactor gathers the facts (the branch head, the inventory on the
cluster, the quarantine, which heads it already tried) and `decide_head`
says what to do; `loop.py` then compiles, applies or adopts.

The rules, in order:

1. A quarantined head is never applied: it was rolled back, and stays out
   until a newer commit clears it.  The daemon keeps what runs.
2. A head the inventory says is applied already is adopted, not re-applied
   (a restarted daemon, or `intentc apply` run by hand).
3. A head tried once by this daemon is not tried again by itself.
4. A head whose last rollout failed (recorded by any daemon or by hand) is
   not retried by itself either: a human looks first.
5. Anything else is rolled out.

"Adopt" means: take that commit as the plan in force and watch its
objects, without applying it (it is on the cluster already).  When nothing
is in force yet, rules 1 and 4 adopt what the cluster runs, so drift is
still watched.
"""

from __future__ import annotations

import enum
from collections.abc import Set
from dataclasses import dataclass

from intentc.drift.quarantine import Quarantine
from intentc.reconcile.inventory import Inventory


class Step(enum.Enum):
    NOTHING = "nothing"         # seen before: no change
    HOLD = "hold"               # quarantined: keep what runs
    ADOPT = "adopt"             # applied already
    SKIP_FAILED = "skip-failed"
    ROLL_OUT = "roll-out"


@dataclass(frozen=True)
class HeadDecision:
    step: Step
    adopt: str | None = None    # commit to take as in force without applying it
    warning: str = ""           # to log once, when the decision is new


def decide_head(head: str, *, previous_head: str | None, in_force: str | None, inventory: Inventory,
                quarantine: Quarantine, attempted: Set[str]) -> HeadDecision:
    if head in quarantine:
        entry = quarantine.get(head)
        warning = "" if previous_head == head else (
            f"head {head[:12]} is quarantined ({entry.reason if entry else ''}); waiting for a newer commit")
        return HeadDecision(Step.HOLD, None if in_force else inventory.applied_commit or inventory.last_known_good,
                            warning)
    if inventory.applied_commit == head:
        return HeadDecision(Step.ADOPT, None if in_force == head else head)
    if head in attempted:
        return HeadDecision(Step.NOTHING)
    last = inventory.last
    if last is not None and last.commit == head and last.result == "failed":
        return HeadDecision(Step.SKIP_FAILED, None if in_force else head,
                            f"commit {head[:12]} failed its last rollout ({last.message}); not applying it again")
    return HeadDecision(Step.ROLL_OUT)
