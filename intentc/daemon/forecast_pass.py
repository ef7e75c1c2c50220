"""The live forecast, kept current by the daemon: Intent objects' status and two gauges (docs/crd.md).

The decision is `intentc.forecast`, pure: the plan in force (the commit's
preview, `Desired.preview`), the cluster as the API server shows it and
the wall clock, passed in.  This pass reads the cluster for it — the same
four LISTs as `intentc status` (`kube/forecast_state.py`: Nodes, unfinished
Pods, intentc's Jobs, Kueue Workloads), never the daemon's own records of
what it applied — at most once per `interval` (and at once for a new
commit), and at most a tenth of the time (a forecast that took 3 s waits
30 s), so a fleet whose informers fire every second does not re-plan every
second.  It acts through what is already there:

* the per-intent documents go to the Intent mirror (`mirror.py`), which
  writes them with the rest of the status through the status subresource,
  and only when they changed;
* `intentc_intent_eta_timestamp_seconds{tenant,intent}` (expected end, Unix
  time) and `intentc_schedule_lag_seconds{tenant}` (how far behind plan its
  furthest-behind unfinished intent is) are set from the same forecast.

A read that fails keeps the last forecast and counts `intentc_errors_total{step="forecast"}`.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.source import Desired
from intentc.forecast.core import on_cluster
from intentc.forecast.model import Forecast
from intentc.forecast.text import status_of
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.kube.forecast_state import ForecastState, read_forecast_state

log = logging.getLogger("intentc.daemon")
Statuses = dict[tuple[str, str], dict[str, Any]]      # (tenant, intent) -> the status's `forecast`


def decide(desired: Desired, state: ForecastState, now: float, seed: int = 0,
           only_topology_nodes: bool = False) -> Forecast | None:
    """The forecast of the plan in force on what the cluster shows (pure); None without a plan."""
    preview = desired.preview
    if preview is None:
        return None
    return on_cluster(desired.program, preview.plan, preview.topology, state.nodes, state.pods, state.jobs,
                      state.workloads, now, seed, preview.policies, only_topology_nodes)


def statuses(made: Forecast) -> Statuses:
    tenants = {f.intent: f.tenant for f in made.intents}
    return {(tenants[f.intent], f.intent): status_of(f, made.epoch) for f in made.intents}


class ForecastPass:
    def __init__(self, client: KubeClient, metrics: DaemonMetrics, interval: float = 30.0, seed: int = 0,
                 only_topology_nodes: bool = False, wall: Callable[[], float] = time.time) -> None:
        self.client = client
        self.metrics = metrics
        self.interval = interval
        self.seed = seed
        self.only_topology_nodes = only_topology_nodes
        self.wall = wall
        self.last: Statuses = {}
        self.made: Forecast | None = None
        self._at: float | None = None
        self._commit: str | None = None
        self._cost = 0.0                        # seconds the last forecast took
        self.drifting: set[tuple[str, str]] = set()

    def run(self, desired: Desired) -> Statuses:
        """The forecast documents per (tenant, intent): made again when due, else the last ones."""
        now = self.wall()
        # a plan so large that one forecast takes long is forecast less often: at most a tenth
        # of the reactor's time goes to it
        wait = max(self.interval, 10 * self._cost)
        if self._commit == desired.commit and self._at is not None and now - self._at < wait:
            return self.last
        try:
            state = read_forecast_state(self.client)
        except KubeError as e:
            self.metrics.errors.labels("forecast").inc()
            log.warning("cannot read the cluster for the forecast: %s", e.message)
            return self.last
        now = self.wall()
        made = decide(desired, state, now, self.seed, self.only_topology_nodes)
        self._at, self._commit, self._cost = now, desired.commit, max(self.wall() - now, 0.0)
        if made is None:
            self.made, self.last = None, {}
            return self.last
        self.made, self.last = made, statuses(made)
        self.metrics.set_forecast(
            {(f.tenant, f.intent): None if f.eta_end_s is None else made.epoch + f.eta_end_s for f in made.intents},
            made.lag())
        late = {(f.tenant, f.intent): f.reason for f in made.intents if f.drift}
        for (tenant, intent), reason in sorted(late.items()):
            if (tenant, intent) not in self.drifting:       # said once, as configuration drift is
                log.warning("schedule drift: %s/%s %s", tenant, intent, reason)
        self.drifting = set(late)
        return self.last

