"""The daemon's reactor for GPU failures (docs/failure-fallback.md).

Two informers of its own feed it — intentc's pods (label `intentc.dev/intent`)
and every Node — next to the daemon's Job informer.  On each pass it asks the
pure `daemon/fallback.py` what to do and does it through `kube/reactions.py`:

* taint the node where a pod's GPU failed (`intentc.dev/gpu-observation`,
  NoSchedule, value = when the observation ends) and lift the taint after
  15 minutes;
* resume the next suspended fallback variant of a Job that failed with
  `BackoffLimitExceeded`.

Each action is logged, counted (`intentc_gpu_observation_taints_total`,
`intentc_fallback_resumes_total`) and recorded as an Event (aggregated,
kube/events.py) on the Node or the Job.  The reactor runs on the daemon's
reactor thread, only when the daemon acts (`healing.DriftReactor.react`): informer events
merely ask for a pass, and many events before the next pass ask once.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Callable, Mapping

from intentc.daemon.fallback import resumable, taint_changes
from intentc.daemon.informer import Informer
from intentc.daemon.metrics import DaemonMetrics
from intentc.kube import events
from intentc.kube import reactions
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError, Outdated
from intentc.plan.observation import OBSERVATION_TAINT
from intentc.render.fallback import FALLBACK_KIND
from intentc.objectmeta import INTENT_LABEL, ObjectRef

log = logging.getLogger("intentc.daemon")


@dataclass(frozen=True)
class Observed:
    """Queue item: a pod or a node changed, a failure pass is due."""


def _stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FailureReactor:
    def __init__(self, client: KubeClient, metrics: DaemonMetrics, stop: threading.Event,
                 ask_for_pass: Callable[[], None], watch_timeout: int = 300,
                 wall: Callable[[], float] = time.time) -> None:
        self.client = client
        self.metrics = metrics
        self.wall = wall
        self._ask = ask_for_pass
        self._asked = threading.Event()
        self.pods = Informer(client, "v1", "Pod", self._changed, metrics, stop, watch_timeout,
                             label_selector=INTENT_LABEL)
        self.nodes = Informer(client, "v1", "Node", self._changed, metrics, stop, watch_timeout,
                              label_selector="")
        self.started = False

    @property
    def informers(self) -> tuple[Informer, Informer]:
        return self.pods, self.nodes

    def start(self) -> None:
        if not self.started:
            self.started = True
            for inf in self.informers:
                inf.start()

    def _changed(self, _event: str, _refs: frozenset[ObjectRef]) -> None:
        if not self._asked.is_set():
            self._asked.set()
            self._ask()

    def observed(self) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] | None:
        """(intent pods, nodes) as the informers hold them, or None before both have synced
        (the Job mover, daemon/moves.py, judges on them too: one read of the cluster)."""
        if not (self.started and all(inf.synced.is_set() for inf in self.informers)):
            return None
        return list(self.pods.items().values()), list(self.nodes.items().values())

    def react(self, live: Mapping[ObjectRef, Mapping[str, Any]]) -> None:
        """One pass over the informers' pods and nodes and the daemon's Jobs."""
        self._asked.clear()
        if self.started and all(inf.synced.is_set() for inf in self.informers):
            self._taints()
        self._resume([o for r, o in live.items() if r.kind == "Job"])

    def _taints(self) -> None:
        nodes = {ref.name: node for ref, node in self.nodes.items().items()}
        for change in taint_changes(self.pods.items().values(), nodes.values(), self.wall()):
            node = nodes[change.node]
            try:
                done = reactions.set_node_taints(self.client, node, change.taints(node))
            except Outdated:
                continue          # the node changed since the informer saw it: next pass
            except KubeError as e:
                self.metrics.errors.labels("taint").inc()
                log.warning("cannot update the taints of node %s: %s", change.node, e.message)
                continue
            ref = ObjectRef("v1", "Node", "", change.node)
            if change.add:
                self.metrics.observation_taints.labels("added").inc()
                message = (f"a GPU of this node failed (exit code 74 or 75 of an intentc pod): tainted "
                           f"{OBSERVATION_TAINT}:NoSchedule until {_stamp(change.until or 0)}")
                log.warning("node %s: %s", change.node, message)
                events.emit(self.client, ref, "GPUObservation", message, "Warning", done)
            else:
                self.metrics.observation_taints.labels("lifted").inc()
                log.info("node %s: GPU observation over, taint %s lifted", change.node, OBSERVATION_TAINT)
                events.emit(self.client, ref, "GPUObservationOver", f"taint {OBSERVATION_TAINT} lifted",
                            "Normal", done)

    def _resume(self, jobs: list[Mapping[str, Any]]) -> None:
        by_ref = {ObjectRef.of(j): j for j in jobs}
        for namespace, name, before in resumable(jobs):
            ref = ObjectRef("batch/v1", "Job", namespace, name)
            try:
                done = reactions.resume_job(self.client, by_ref[ref])
            except Outdated:
                continue          # resumed (or changed) since the informer saw it
            except KubeError as e:
                self.metrics.errors.labels("fallback").inc()
                log.warning("cannot resume fallback %s: %s", ref, e.message)
                continue
            self.metrics.fallbacks.inc()
            message = _resumed_message(by_ref[ref], before)
            log.warning("%s/%s", namespace, message)
            events.emit(self.client, ref, "FallbackResumed", message, "Warning", done)


def _resumed_message(variant: Mapping[str, Any], before: str) -> str:
    """The Event's words, naming the step's kind (power-cap, smaller-chunk, ...) so
    `kubectl get events` says which fix the chain is trying without reading the Job."""
    meta = variant.get("metadata") or {}
    kind = (meta.get("annotations") or {}).get(FALLBACK_KIND)
    step = f"fallback {meta.get('name')} ({kind})" if kind else f"fallback {meta.get('name')}"
    return f"Job {before} failed (BackoffLimitExceeded): {step} resumed"
