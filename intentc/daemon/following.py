"""How the reactor follows its source (a branch, or a working tree): pure decisions.

Next to `branch.py` (what a new branch head means), the smaller choices the
reactor (`loop.py`) makes while following, each from plain facts:

* `follower_adopts`: a replica that does not lead applies nothing; it takes
  what the cluster runs (the inventory's commit, else its last known good)
  as the plan in force, so its watches and detection are warm;
* `on_reload`: a recompiled working tree is rolled out, kept until the
  rollout in flight is done, or ignored when its objects did not change;
* `on_leading`: what a replica that just won the Lease does first (it
  decides afresh: the old leader may have applied since);
* `wait_seconds`: how long the reactor may block on its queue before a
  poll or a resync is due;
* `poll_delay`: when to poll the branch next: every `--interval` while the
  remote answers, backing off exponentially (with a cap and jitter) while it
  does not.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from intentc.reconcile.inventory import Inventory
from intentc.render.model import Manifest

IDLE_TURN = 1.0       # the reactor turns at least this often (its liveness beat)
SHORTEST_WAIT = 0.05  # ... and never spins when a deadline has passed
POLL_BACKOFF_CAP = 300.0   # an unreachable remote is tried at least every 5 minutes (or every --interval)


def follower_adopts(inventory: Inventory, in_force: str | None) -> str | None:
    """The commit a follower takes as in force, or None: it holds that one already
    (or the cluster records none)."""
    commit = inventory.applied_commit or inventory.last_known_good     # a dirty tree's apply is no commit
    return commit if commit and in_force != commit else None


class OnReload(enum.Enum):
    NOTHING = "nothing"       # no plan, or the same objects as the plan in force
    PEND = "pend"             # a rollout is in flight: roll this one out when it is done
    ROLL_OUT = "roll-out"


def on_reload(new: Sequence[Manifest] | None, in_force: Sequence[Manifest] | None, busy: str) -> OnReload:
    """`new`: the recompiled objects (None: nothing to roll out); `in_force`: the plan's."""
    if new is None or (in_force is not None and in_force == new):
        return OnReload.NOTHING
    return OnReload.PEND if busy else OnReload.ROLL_OUT


@dataclass(frozen=True, slots=True)
class OnLeading:
    roll_out: bool = False    # local mode: roll the plan in force out again
    poll: bool = False        # git mode: first what the branch wants (a rollout suspends heals) ...
    resync: bool = False      # ... then drift


def on_leading(*, local: bool, polling: bool, in_force: bool, busy: bool) -> OnLeading:
    """`local`: following a working tree; `polling`: following a branch (neither: not
    started yet); `in_force`: a plan is in force; `busy`: a rollout or rollback is in flight."""
    if local:
        return OnLeading(roll_out=in_force and not busy)
    return OnLeading(poll=polling and not busy, resync=True)


def poll_delay(interval: float, failures: int, jitter: float) -> float:
    """Seconds until the next poll after `failures` failed fetches in a row (0: the last one
    worked).  Failing, the delay doubles per failure up to `POLL_BACKOFF_CAP` (or `interval`,
    when that is longer): a remote that is down, or a Git host rate-limiting us, is not
    hammered every few seconds by every replica.  `jitter` (uniform in [0, 1)) spreads the
    delay over its upper half, so replicas and daemons of several targets that lost the
    remote together do not come back in lockstep.  The in-force state is untouched by a
    failed fetch: nothing is applied or pruned until a fetch works again."""
    if failures <= 0:
        return interval
    ceiling = max(POLL_BACKOFF_CAP, interval)
    base = min(ceiling, interval * 2.0 ** min(failures, 32))
    return base / 2 + base / 2 * min(max(jitter, 0.0), 1.0)


def wait_seconds(now: float, next_poll: float, next_resync: float, polling: bool) -> float:
    """How long to wait for the queue: until the next poll or resync, within bounds."""
    due = min(next_poll if polling else next_resync, next_resync)
    return min(max(SHORTEST_WAIT, due - now), IDLE_TURN)
