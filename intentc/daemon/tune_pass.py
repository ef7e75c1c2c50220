"""Batch recommendations, kept current by the daemon: Intent objects' status and a gauge (docs/sizing.md).

Off unless the daemon is given a Prometheus server (`--prometheus-url`).
The rule is `intentc.tune.recommend`, pure; this pass acts for it: at most
once per `sampleInterval` (and at most a tenth of the reactor's time, as the
forecast), it sends each serving intent's three queries
(`intentc.tune.queries`) to Prometheus, adds the observation to the
intent's window and recommends from the window.  It only publishes:

* the per-intent document (`batchRecommendation`) goes to the Intent mirror
  (`mirror.py`), which writes it with the rest of the status;
* `intentc_batch_recommended{tenant,intent}` carries the batch.

It never changes a workload: changing a live Deployment behind git's back
would be drift the daemon itself then heals.  `intentc tune` writes the
recommendation into the intent files; the new commit rolls it out.

The window belongs to the batch the workload runs: when a new commit
changes it (or the plan re-sizes a `batch: auto` intent), the observations
made at the old batch are forgotten, so a breach at the old size does not
keep shrinking the new one.  It runs on the leader only, because the mirror
does.  A query that fails ends the round (Prometheus down would otherwise
cost every intent a timeout), keeps the last recommendations and counts
`intentc_errors_total{step="tune"}`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any, Callable

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.source import Desired
from intentc.ir import Program
from intentc.tune.observe import observe
from intentc.tune.prometheus import Prometheus, PrometheusError
from intentc.tune.queries import TuneConfig
from intentc.tune.recommend import Observation, recommend
from intentc.tune.subjects import status_document, tunables

log = logging.getLogger("intentc.daemon")
Key = tuple[str, str]                                   # (tenant, intent)
Statuses = dict[Key, dict[str, Any]]                    # -> the status's `batchRecommendation`


class TunePass:
    def __init__(self, prometheus: Prometheus, config: TuneConfig, metrics: DaemonMetrics,
                 wall: Callable[[], float] = time.time) -> None:
        self.prometheus = prometheus
        self.config = config
        self.metrics = metrics
        self.wall = wall
        self.windows: dict[Key, tuple[int, deque[Observation]]] = {}   # -> (batch observed at, window)
        self.last: Statuses = {}
        self._at: float | None = None
        self._cost = 0.0
        self._failing = False

    def run(self, desired: Desired) -> Statuses:
        """The recommendation documents per (tenant, intent): made again when due, else the last ones."""
        now = self.wall()
        if self._at is not None and now - self._at < max(self.config.sample_interval, 10 * self._cost):
            return self.last
        self._at = now
        program = Program(intents=tuple(i for i in desired.program.intents if i.tenant not in desired.held))
        subjects = tunables(program, desired.preview.plan if desired.preview is not None else None)
        made: Statuses = {}
        for t in subjects:
            key = (t.tenant, t.intent)
            try:
                seen = observe(self.prometheus, self.config.queries, t.subject, self.wall())
            except PrometheusError as e:
                self.metrics.errors.labels("tune").inc()
                if not self._failing:                       # said once while it lasts
                    log.warning("cannot read the metrics for batch recommendations: %s", e.message)
                self._failing = True
                self._cost = max(self.wall() - now, 0.0)
                return self.last
            at, window = self.windows.get(key, (t.current, deque()))
            if at != t.current or window.maxlen != self.config.window:
                window = deque(maxlen=self.config.window)   # a new batch runs: start afresh
            window.append(seen)
            self.windows[key] = (t.current, window)
            rec = recommend(tuple(window), t.current, self.config.bounds, self.config.rule(t.sla))
            made[key] = status_document(rec, t, seen.at, len(window))
        if self._failing:
            log.info("metrics for batch recommendations readable again")
        self._failing = False
        for gone in set(self.windows) - set(made):
            del self.windows[gone]
        self._cost = max(self.wall() - now, 0.0)
        self.last = made
        self.metrics.set_batch_recommendations({key: doc["batch"] for key, doc in made.items()})
        return made
