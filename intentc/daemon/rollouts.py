"""The daemon's long-running work, run off the reactor thread, and the messages back.

A rollout (or rollback) can take minutes while it waits for health; the
reactor must keep draining watch events meanwhile, so the work runs on a
one-thread executor and reports a `Done` message into the reactor's queue.
These functions never raise: whatever happens becomes the message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from intentc.daemon.reload import ReloadResult
from intentc.daemon.source import Desired
from intentc.drift.rollback import RepoSource, RollbackError, RollbackOutcome, rollback
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.reconcile.live_binding import LiveBinder
from intentc.reconcile.result import ApplyResult
from intentc.reconcile.sync import ApplyOptions, Reconciler
from intentc.render.capabilities import KubeVersion
from intentc.render.model import ObjectRef, Rendered

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
    """Apply `desired` wave by wave; with a `binder`, each wave is re-planned on the
    cluster's free GPUs just before it is created, as `intentc apply --wait` does."""
    rendered = Rendered(desired.manifests, str(version), render_target, desired.commit,
                        held_tenants=desired.held)
    try:
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
