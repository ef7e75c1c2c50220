"""The daemon's Prometheus metrics, in a registry of its own.

A private `CollectorRegistry` per daemon (not the process-global one) lets
tests run several daemons in one process and keeps library users' metrics
apart from ours.
"""

from __future__ import annotations

from typing import Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    generate_latest,
)

from intentc.drift.detect import DRIFT_CLASSES, DriftClass

# Reconciles range from a no-op resync (milliseconds) to a rollout with
# health gates (minutes).
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)


class DaemonMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.objects = Gauge("intentc_drift_objects", "Managed objects per drift class at the last detection.",
                             ["drift_class"], registry=r)
        for cls in DRIFT_CLASSES:
            self.objects.labels(cls.value).set(0)
        self.reconcile_seconds = Histogram("intentc_reconcile_duration_seconds",
                                           "Time of one reconcile pass (detect, and act on the policies).",
                                           ["trigger"], buckets=DURATION_BUCKETS, registry=r)
        self.applied = Info("intentc_last_applied_commit", "The commit the daemon last applied.", registry=r)
        self.rollbacks = Counter("intentc_rollbacks_total", "Semantic-consistency rollbacks performed.",
                                 registry=r)
        self.heals = Counter("intentc_heals_total", "Objects re-applied by the heal policy.", ["drift_class"],
                             registry=r)
        self.watch_restarts = Counter("intentc_watch_restarts_total",
                                      "Watch streams restarted, by reason (expired, error, timeout).",
                                      ["reason"], registry=r)
        self.errors = Counter("intentc_errors_total", "Failed daemon steps, by step.", ["step"], registry=r)
        self.observation_taints = Counter("intentc_gpu_observation_taints_total",
                                          "Nodes tainted after a GPU failure (added) and taints lifted (lifted).",
                                          ["action"], registry=r)
        for action in ("added", "lifted"):
            self.observation_taints.labels(action)
        self.fallbacks = Counter("intentc_fallback_resumes_total",
                                 "Fallback variants resumed after the Job before them failed.", registry=r)
        self.moves = Counter("intentc_jobs_moved_total",
                             "Jobs moved off a node that became unusable (GPU-observation taint, cordoned, "
                             "NotReady, gone) before they started, by path: updated (suspended, never started: "
                             "scheduling directives changed in place) or recreated (deleted and created again).",
                             ["path"], registry=r)
        for path in ("updated", "recreated"):
            self.moves.labels(path)
        self.quarantined = Gauge("intentc_quarantined_commits", "Commits the daemon refuses to apply.",
                                 registry=r)
        self.source_failures = Gauge("intentc_git_fetch_failures",
                                     "Failed fetches of the followed branch in a row (0: the last one worked); "
                                     "while above 0 the commit in force is kept and polls back off.", registry=r)
        self.eta = Gauge("intentc_intent_eta_timestamp_seconds",
                         "When each intent is expected to end (Unix time), from the live forecast: its actual "
                         "end once it has ended.", ["tenant", "intent"], registry=r)
        self.schedule_lag = Gauge("intentc_schedule_lag_seconds",
                                  "Per tenant, how far behind plan its furthest-behind unfinished intent is "
                                  "(live forecast; 0 when none is behind).", ["tenant"], registry=r)
        self.batch_recommended = Gauge("intentc_batch_recommended",
                                       "Per serving intent with a batch, the batch recommended from live metrics "
                                       "(P99 latency, GPU memory, OOM kills; docs/sizing.md): published, never "
                                       "applied; `intentc tune` writes it into the intent files.",
                                       ["tenant", "intent"], registry=r)
        self.leader = Gauge("intentc_leader", "1 while this replica holds its target's leader Lease (or runs "
                            "without leader election), else 0.", registry=r)

    def set_forecast(self, etas: Mapping[tuple[str, str], float | None], lag: Mapping[str, int]) -> None:
        """The live forecast's gauges, replaced as a whole: an intent that left the plan, or has
        no expected end (open-ended, blocked), has no ETA series."""
        self.eta.clear()
        for (tenant, intent), eta in sorted(etas.items()):
            if eta is not None:
                self.eta.labels(tenant, intent).set(eta)
        self.schedule_lag.clear()
        for tenant, seconds in sorted(lag.items()):
            self.schedule_lag.labels(tenant).set(seconds)

    def set_batch_recommendations(self, batches: Mapping[tuple[str, str], int]) -> None:
        """Replaced as a whole: an intent that left the plan has no series."""
        self.batch_recommended.clear()
        for (tenant, intent), batch in sorted(batches.items()):
            self.batch_recommended.labels(tenant, intent).set(batch)

    def set_counts(self, counts: dict[DriftClass, int]) -> None:
        for cls in DRIFT_CLASSES:
            self.objects.labels(cls.value).set(counts.get(cls, 0))

    def set_applied(self, commit: str, branch: str, source: str) -> None:
        self.applied.info({"commit": commit, "branch": branch, "source": source})

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
