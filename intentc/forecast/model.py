"""The forecast as data: what the cluster was seen doing, and what each intent is expected to do.

Two halves, both frozen and ordered so a forecast is stable bytes:

* the *observation* (`Observation`): what the API server said at one
  moment — each intent's Job (created, held by Kueue or admitted, started,
  completed, failed, the GPUs its pods hold), each node's usability, the GPUs
  pods outside this program hold.  It is read by `observe.py` from objects
  and never from intentc's own bookkeeping, so the forecast describes the
  cluster and not what intentc believes it asked for;
* the *forecast* (`Forecast`): per intent a phase, the plan's times, the
  times the cluster gave it so far, and an ETA for the rest.

Times in the forecast are plan time (integer seconds after the plan's
epoch, as `intentc plan` prints them); the epoch itself is a Unix time, so
a caller can print either.  Times in the observation are Unix seconds as the
API server stamps them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from intentc.plan.model import Busy


class Phase(str, enum.Enum):
    """Where an intent is in its life on the cluster.

    Finer than the mirror's phase (`daemon/phase.py`) where it matters for a
    forecast: a Job Kueue still holds suspended (Queued) waits for quota, one
    it admitted (Admitted) waits only for its pods to start, and an intent
    whose dependency failed (Blocked) will not run at all until someone acts.
    """

    QUEUED = "Queued"           # not created yet, or created and held suspended (Kueue has not admitted it)
    ADMITTED = "Admitted"       # created and let go (unsuspended / Kueue admitted), no pod Running yet
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    BLOCKED = "Blocked"         # cannot run: a dependency failed, or the live cluster can never hold it


@dataclass(frozen=True, slots=True)
class JobObservation:
    """One intent's workload as the API server shows it (a gang's Jobs folded into one).

    `started` is the Job's `status.startTime` (the job controller's word for
    when it let the pods go); `running` says a pod of it is Running now,
    which is what separates Admitted from Running: a Job can have a start
    time while its pods sit Pending on a node that went away.
    """

    intent: str
    created: float                      # Unix time of the Job's creationTimestamp
    suspended: bool = False             # spec.suspend: held (by Kueue, or a fallback variant not resumed)
    admitted: bool | None = None        # its Kueue Workload is admitted; None: no Workload (not under Kueue)
    started: float | None = None
    running: bool = False
    completed: float | None = None      # the Complete condition / status.completionTime
    failed: float | None = None         # when the Failed condition was set
    failure: str = ""                   # the Failed condition's reason (BackoffLimitExceeded, DeadlineExceeded ...)
    gpus: tuple[Busy, ...] = ()         # the GPUs its Running pods hold, per node


@dataclass(frozen=True, slots=True)
class NodeObservation:
    """A node of the cluster and why the planner may not use it (None: usable).

    The reasons are those of live planning (`plan/live_occupancy.py`): cordoned,
    NotReady, a taint intentc's pods do not tolerate — the GPU-observation
    taint the fallback chain sets included."""

    name: str
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """The cluster at one moment, as far as the forecast reads it.

    `nodes` lists every node the cluster has: a planned node missing from it
    is gone.  `epoch` is the Unix time of plan time 0 — when the first of the
    program's Jobs was created (the moment `apply` released the first wave);
    None when nothing is created yet, and the plan then starts now."""

    jobs: tuple[JobObservation, ...] = ()        # sorted by intent
    nodes: tuple[NodeObservation, ...] = ()      # sorted by name
    foreign: tuple[Busy, ...] = ()               # GPUs held by pods that are not this program's, for good
    notes: tuple[str, ...] = ()                  # why a node or GPUs were left alone
    epoch: float | None = None

    def job(self, intent: str) -> JobObservation | None:
        return next((j for j in self.jobs if j.intent == intent), None)


@dataclass(frozen=True, slots=True)
class IntentForecast:
    """One intent: the plan's times, the cluster's so far, and the expected rest (plan time).

    `behind_s` is how far the intent is behind its plan: its expected (or
    actual) end minus the planned end, or the start's difference for an
    open-ended `serve` intent; negative when ahead, None when there is no
    expectation (Blocked).  `drift` marks schedule drift: it runs past its
    planned end, so its end is no longer known and is taken as `now`; the
    intents that wait for it name it in `delayed_by` and carry the delay.
    """

    intent: str
    tenant: str
    phase: Phase
    reason: str = ""
    planned_start_s: int | None = None
    planned_end_s: int | None = None
    actual_start_s: int | None = None
    actual_end_s: int | None = None
    eta_start_s: int | None = None
    eta_end_s: int | None = None
    behind_s: int | None = None
    drift: bool = False
    delayed_by: tuple[str, ...] = ()             # overrunning intents it waits for, at any depth
    pushed: tuple[str, ...] = ()                 # for an overrunning intent: the intents it delays
    planned_nodes: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()                  # where it runs, ran, or is now expected to run


@dataclass(frozen=True, slots=True)
class Forecast:
    """Every intent of the plan, sorted by name, as of `now_s` (plan time)."""

    epoch: float
    now_s: int
    intents: tuple[IntentForecast, ...]
    notes: tuple[str, ...] = ()

    def of(self, intent: str) -> IntentForecast | None:
        return next((f for f in self.intents if f.intent == intent), None)

    def lag(self) -> dict[str, int]:
        """Per tenant, how far behind plan its furthest-behind intent is (0 when none is behind):
        the schedule-lag figure a tenant watches."""
        out: dict[str, int] = {}
        for f in self.intents:
            behind = max(f.behind_s or 0, 0) if f.phase is not Phase.SUCCEEDED else 0
            out[f.tenant] = max(out.get(f.tenant, 0), behind)
        return dict(sorted(out.items()))
