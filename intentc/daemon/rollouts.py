"""The daemon's long-running work, run off the reactor thread, and the messages back.

A rollout (or rollback) can take minutes while it waits for health; the
reactor must keep draining watch events meanwhile, so the work runs on a
one-thread executor and reports a `Done` message into the reactor's queue.
These functions never raise: whatever happens becomes the message.
`Worker` is that executor, and times each piece of work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from intentc.daemon.config import DaemonConfig
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.reload import ReloadResult
from intentc.daemon.source import Desired
from intentc.drift.rollback import RepoSource, RollbackError, RollbackOutcome, rollback
from intentc.kube.cluster_state import read_cluster_state
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.reconcile.live_binding import LiveBinder
from intentc.reconcile.release import release_order
from intentc.reconcile.result import ApplyResult
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.render.capabilities import KubeVersion
from intentc.render.model import Rendered
from intentc.objectmeta import ObjectRef

log = logging.getLogger("intentc.daemon")


class Stopped(Exception):
    """Raised inside a rollout's waits when the daemon shuts down."""


@dataclass(frozen=True)
class Changed:
    """Informers: these objects changed."""

    refs: frozenset[ObjectRef]


@dataclass(frozen=True)
class Done:
    """The worker: a rollout or rollback finished (or could not run)."""

    kind: str                            # "rollout" | "rollback"
    desired: Desired | None
    result: ApplyResult | RollbackOutcome | None
    error: str = ""


@dataclass(frozen=True)
class Reloaded:
    """The file watcher (local mode): the intents were recompiled."""

    result: ReloadResult


def run_rollout(client: KubeClient, desired: Desired, options: ApplyOptions, version: KubeVersion,
                render_target: str, sleep: Callable[[float], None], binder: LiveBinder | None = None) -> Done:
    """Apply `desired` as `intentc apply --wait` does: each intent once its own prerequisites
    are done (reconcile/release.py; `options.release` when the caller gives one), and with a
    `binder` re-planned on the cluster's free GPUs just before it is created.  The release
    order is made here, on the worker thread, when the rollout runs: held with the desired
    state, 100,000 intents' edges would stay in memory between rollouts."""
    rendered = Rendered(desired.manifests, str(version), render_target, desired.commit,
                        held_tenants=desired.held)
    try:
        if options.release is None:
            options = replace(options, release=release_order(desired.program, desired.placements))
        return Done("rollout", desired, Reconciler(client, options, sleep=sleep, binder=binder).apply(rendered))
    except Stopped:
        return Done("rollout", desired, None, "stopped")
    except Exception as e:
        log.exception("rollout of %s crashed", desired.commit[:12])
        return Done("rollout", desired, None, repr(e))


def run_rollback(client: KubeClient, source: RepoSource, workdir: str, *, reason: str, bad: Desired,
                 options: ApplyOptions, failing: tuple[ObjectRef, ...]) -> Done:
    try:
        outcome = rollback(client, source, workdir, reason=reason, bad=bad.commit, options=options,
                           failing=failing)
        return Done("rollback", bad, outcome)
    except (RollbackError, KubeError) as e:
        return Done("rollback", bad, None, e.message)
    except Stopped:
        return Done("rollback", bad, None, "stopped")
    except Exception as e:
        log.exception("rollback from %s crashed", bad.commit[:12])
        return Done("rollback", bad, None, repr(e))


def apply_options(config: DaemonConfig, **changes: Any) -> ApplyOptions:
    """How the daemon applies: its target, its prune setting, waiting for health."""
    base = ApplyOptions(target=config.target, prune=config.prune, wait=True, timeout=config.rollout_timeout)
    return replace(base, **changes)


def binder_for(client: KubeClient, config: DaemonConfig, desired: Desired, version: KubeVersion) -> LiveBinder | None:
    """Re-binding on live state for a rollout, of the branch or of a hot-reload snapshot
    (docs/live-planning.md); not under Kueue, which admits on live state itself."""
    preview = desired.preview
    if preview is None or config.render_target == "kueue":
        return None
    return LiveBinder(desired.program, preview.topology, preview.plan, preview.rendered, version,
                      lambda: read_cluster_state(client), preview.policies, config.seed,
                      cluster_nodes=not config.only_topology_nodes)


class Worker:
    """One thread for rollouts and rollbacks: one at a time, by design (the reactor
    starts one only when none is in flight).  Each piece of work reports its `Done`
    and is timed in `intentc_reconcile_duration_seconds` under its kind."""

    def __init__(self, report: Callable[[Done], None], metrics: DaemonMetrics,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.report = report
        self.metrics = metrics
        self.clock = clock
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="intentc-rollout")

    def submit(self, kind: str, run: Callable[[], Done]) -> bool:
        """Start `run` off the reactor thread; False when shutting down (nothing started)."""
        started = self.clock()

        def work() -> None:
            try:
                self.report(run())
            finally:
                self.metrics.reconcile_seconds.labels(kind).observe(self.clock() - started)
        try:
            fut: Future[None] = self.pool.submit(work)
        except RuntimeError:          # shutting down
            return False
        fut.add_done_callback(report_crash)
        return True

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def report_crash(fut: Future[None]) -> None:
    """A bug in a rollout must not pass silently (the reactor would wait forever)."""
    if fut.cancelled():       # shutdown dropped a queued (retried) rollout: nothing crashed
        return
    exc = fut.exception()
    if exc is not None:
        log.error("rollout worker crashed: %r", exc)
