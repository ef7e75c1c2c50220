"""Learn that the Jobs `apply --wait` waits on have ended from a watch, not a poll.

Per-intent release (`reconcile/release.py`) creates an intent once its own
prerequisites end, so each step of a chain waits for the reconciler to
*notice* that a Job completed.  Reading every pending object once per poll
interval added up to an interval per step (a chain of ten paid ten), and
the plan has no such gap.  Here one list-then-watch stream per namespace
the apply writes Jobs to (`intentc.kube.watch`, the reflector's protocol)
keeps a cache of those Jobs and wakes the reconciler the moment one
changes, so a dependant is created right after its prerequisite completes.

The stream is the reflector's loop: list, watch from the list's
resourceVersion, move it forward with every event and bookmark, resume from
it when the server ends a quiet watch.  A `410 Gone` (the server no longer
keeps that resourceVersion) and any watch error (connection lost, access
denied) make the stream *not live* until it has listed again; while it is
not live the reconciler reads those objects itself, once per poll interval,
as it did before, so a watch that cannot run costs latency, never
correctness.

Only intentc's own objects are watched (its managed-by label), and the pods
of its Jobs (the intent label every pod template carries): the Job
controller gathers pod updates for a second before it writes `Complete`, so
a Job whose pods have all succeeded counts as done from the pods
(`health.job_succeeded_by_pods`), a batch period before its condition says
so.  Of a pod only its owner, phase and completion index are kept.  Kueue's
Workloads are not watched: `apply` waits on the Jobs, and Kueue's admission
shows there as the Job being unsuspended.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Iterable, Mapping

from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.kube.watch import Expired, Watch, list_objects
from intentc.objectmeta import INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, ObjectRef
from intentc.reconcile.health import PodRecord

log = logging.getLogger("intentc.reconcile")

# The kinds whose health `apply --wait` waits on and learns from a watch (the others,
# Deployments and Services, are read once per poll interval), and the tenants' quotas, whose
# room a release waits for (reconcile/release.py, `gpu_room`).
WATCHED_KINDS = frozenset({("batch/v1", "Job"), ("v1", "ResourceQuota")})
# The pods of those Jobs (`job_pods`): every pod template intentc renders carries the intent label.
POD_KIND = ("v1", "Pod")
POD_SELECTOR = INTENT_LABEL
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# Beyond this many namespaces one cluster-wide stream (same label selector) replaces the
# per-namespace ones: a watch holds a connection and a thread for as long as it runs.
MAX_NAMESPACE_STREAMS = 16
CLOSE_WAIT_S = 5.0


class _Stream:
    """One kind in one namespace ("" for all): list, then watch, with a cache."""

    def __init__(self, owner: WatchedObjects, api_version: str, kind: str, namespace: str,
                 label_selector: str) -> None:
        self.owner = owner
        self.api_version, self.kind, self.namespace = api_version, kind, namespace
        self.label_selector = label_selector
        self.cache: dict[ObjectRef, dict[str, Any]] = {}
        # pods only: owner uid -> pod -> (phase, completion index), and each pod's owner
        self.by_owner: dict[str, dict[ObjectRef, PodRecord]] = {}
        self.owner_of: dict[ObjectRef, str] = {}
        self.live = False                 # listed, and watching since: the cache is current
        self.resource_version = ""
        self._watch: Watch | None = None
        self.thread = threading.Thread(target=self.run, daemon=True,
                                       name=f"apply-watch-{kind}-{namespace or 'all'}")

    def close(self) -> None:
        w = self._watch
        if w is not None:
            w.close()

    def _list(self) -> None:
        items, rv = list_objects(self.owner.client, self.api_version, self.kind, self.namespace,
                                 self.label_selector)
        self.owner.changed(self, {ObjectRef.of(i): i for i in items}, live=True)
        self.resource_version = rv

    def run(self) -> None:
        stop = self.owner.stopped
        delay = self.owner.backoff[0]
        need_list = True
        while not stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                w = Watch(self.owner.client, self.api_version, self.kind, self.resource_version,
                          namespace=self.namespace, label_selector=self.label_selector,
                          timeout_seconds=self.owner.timeout_seconds)
                self._watch = w
                if stop.is_set():
                    break
                delay = self.owner.backoff[0]
                for event in w:
                    self.resource_version = event.resource_version or self.resource_version
                    if event.type != "BOOKMARK":
                        self.owner.event(self, event.type, event.object)
                # the server ended a quiet watch: resume from the last resourceVersion
            except Expired:
                log.debug("watch of %s in %r: resourceVersion %s expired; listing again",
                          self.kind, self.namespace, self.resource_version)
                self.owner.changed(self, None, live=False)
                need_list = True
            except KubeError as e:
                if stop.is_set():
                    break
                log.debug("watch of %s in %r failed (%s); polling until it lists again in %.1fs",
                          self.kind, self.namespace, e.message, delay)
                self.owner.changed(self, None, live=False)
                need_list = True
                stop.wait(delay)
                delay = min(delay * 2, self.owner.backoff[1])
            finally:
                self._watch = None


class WatchedObjects:
    """A cache of intentc's Jobs in `namespaces`, kept by watches, that wakes `wait()`ers
    on every change.  `start()` it, `close()` it when the apply is done."""

    def __init__(self, client: KubeClient, namespaces: Iterable[str],
                 kinds: Iterable[tuple[str, str]] = WATCHED_KINDS, timeout_seconds: int = 300,
                 backoff: tuple[float, float] = (0.5, 10.0),
                 label_selector: str = f"{MANAGED_BY_LABEL}={MANAGED_BY}", pods: bool = True) -> None:
        self.client = client
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.label_selector = label_selector
        self.stopped = threading.Event()
        self._cond = threading.Condition()
        self._seq = 0
        spaces = sorted(set(namespaces))
        self.namespaces = frozenset(spaces)
        scopes = spaces if len(spaces) <= MAX_NAMESPACE_STREAMS else [""]
        self._streams = {(api_version, kind, ns): _Stream(self, api_version, kind, ns, label_selector)
                         for api_version, kind in sorted(kinds) for ns in scopes}
        if pods:
            self._streams.update({(*POD_KIND, ns): _Stream(self, *POD_KIND, ns, POD_SELECTOR) for ns in scopes})

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> WatchedObjects:
        for s in self._streams.values():
            s.thread.start()
        return self

    def listed(self, timeout: float) -> WatchedObjects:
        """Wait up to `timeout` seconds for every stream's first list: until then the caller
        reads the objects itself, and a quota not seen yet holds nobody (sync's quota gate)."""
        with self._cond:
            self._cond.wait_for(lambda: all(s.live for s in self._streams.values()) or self.stopped.is_set(),
                                max(0.0, timeout))
        return self

    def close(self) -> None:
        self.stopped.set()
        for s in self._streams.values():
            s.close()
        with self._cond:
            self._cond.notify_all()
        # A stream inside a list request cannot be interrupted; it ends on its own (a daemon
        # thread) and the apply does not wait for it longer than this, all streams together.
        deadline = time.monotonic() + CLOSE_WAIT_S
        for s in self._streams.values():
            if s.thread.is_alive():
                s.thread.join(max(0.0, deadline - time.monotonic()))

    # -- what the streams report --------------------------------------------------
    def changed(self, stream: _Stream, cache: Mapping[ObjectRef, dict[str, Any]] | None, live: bool) -> None:
        with self._cond:
            if cache is not None and stream.kind == POD_KIND[1]:
                stream.by_owner, stream.owner_of = {}, {}
                for ref, obj in cache.items():
                    _index_pod(stream, ref, obj)
            elif cache is not None:
                stream.cache = dict(cache)
            stream.live = live
            self._seq += 1
            self._cond.notify_all()

    def event(self, stream: _Stream, kind: str, obj: dict[str, Any]) -> None:
        ref = ObjectRef.of(obj)
        with self._cond:
            if stream.kind == POD_KIND[1]:
                _index_pod(stream, ref, None if kind == "DELETED" else obj)
            elif kind == "DELETED":
                stream.cache.pop(ref, None)
            else:
                stream.cache[ref] = obj
            self._seq += 1
            self._cond.notify_all()

    # -- what the reconciler reads -----------------------------------------------
    @property
    def seq(self) -> int:
        """Counts changes; `wait(seq)` returns once it has moved on."""
        with self._cond:
            return self._seq

    def wait(self, since: int, timeout: float) -> int:
        """Block until something changed after `since` (a `seq`), `timeout` seconds passed
        or the watcher was closed; the current `seq`."""
        with self._cond:
            self._cond.wait_for(lambda: self._seq != since or self.stopped.is_set(), max(0.0, timeout))
            return self._seq

    def covers(self, ref: ObjectRef) -> bool:
        """The object's stream is live: its cache says whether it exists, and how it is."""
        with self._cond:
            return self._stream(ref) is not None

    def lookup(self, ref: ObjectRef) -> tuple[bool, dict[str, Any] | None]:
        """(covered, the cached object or None); not covered: the caller reads it itself."""
        with self._cond:
            stream = self._stream(ref)
            return (False, None) if stream is None else (True, stream.cache.get(ref))

    def job_pods(self, job: Mapping[str, Any]) -> list[PodRecord] | None:
        """The (phase, completion index) of each pod `job` owns; None when the pod stream of
        its namespace is not live (the caller goes by the Job's conditions alone)."""
        meta = job.get("metadata") or {}
        uid = meta.get("uid")
        with self._cond:
            stream = self._stream(ObjectRef(*POD_KIND, str(meta.get("namespace") or ""), ""))
            if stream is None or not uid:
                return None
            return list(stream.by_owner.get(str(uid), {}).values())

    def _stream(self, ref: ObjectRef) -> _Stream | None:
        if ref.namespace not in self.namespaces:
            return None
        key = (ref.api_version, ref.kind)
        stream = self._streams.get((*key, ref.namespace)) or self._streams.get((*key, ""))
        return stream if stream is not None and stream.live else None


def _index_pod(stream: _Stream, ref: ObjectRef, pod: Mapping[str, Any] | None) -> None:
    """Keep of `pod` (None: deleted) its controller's uid, phase and completion index."""
    old = stream.owner_of.pop(ref, None)
    if old is not None:
        pods = stream.by_owner[old]
        del pods[ref]
        if not pods:
            del stream.by_owner[old]
    if pod is None:
        return
    meta = pod.get("metadata") or {}
    owner = next((o.get("uid") for o in meta.get("ownerReferences") or []
                  if o.get("controller") and o.get("kind") == "Job"), None)
    if owner:
        index = (meta.get("annotations") or {}).get(COMPLETION_INDEX)
        phase = str((pod.get("status") or {}).get("phase") or "")
        stream.by_owner.setdefault(str(owner), {})[ref] = (phase, None if index is None else str(index))
        stream.owner_of[ref] = str(owner)


__all__ = ["MAX_NAMESPACE_STREAMS", "POD_KIND", "WATCHED_KINDS", "WatchedObjects"]
