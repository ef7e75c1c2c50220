"""What the reactor knows of the cluster: its watches, their cache, and the reads around them.

One informer per managed kind (`informer.py`) feeds a cache the reactor
reads without a request; next to it the few direct reads a pass needs: a
GET of desired objects the informers do not hold (`drift_pass.to_fetch`
says which), and the server's version (asked once).  Only the reactor
thread calls these; the informers' own threads only report changes.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterable, Mapping

from intentc.daemon.drift_pass import to_fetch
from intentc.daemon.failures import FailureReactor
from intentc.daemon.informer import Informer
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.source import Desired
from intentc.drift.managed import complete
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError
from intentc.objectmeta import ObjectRef
from intentc.reconcile.inventory import Inventory
from intentc.render.capabilities import KubeVersion

log = logging.getLogger("intentc.daemon")
Safe = Callable[[str, Callable[[], Any]], Any]      # the reactor's `_safe`: count and log a failed step


class LiveReads:
    def __init__(self, client: KubeClient, metrics: DaemonMetrics, stop: threading.Event,
                 failures: FailureReactor, on_change: Callable[[str, frozenset[ObjectRef]], None],
                 safe: Safe, watch_timeout: int, kube_version: KubeVersion | None) -> None:
        self.client = client
        self.metrics = metrics
        self.stop = stop
        self.failures = failures
        self.on_change = on_change
        self.safe = safe
        self.watch_timeout = watch_timeout
        self.informers: dict[tuple[str, str], Informer] = {}
        self._version = kube_version

    # -- watches ------------------------------------------------------------------
    def watch(self, desired: Desired, inventory: Inventory | None) -> None:
        """Watch every kind of the plan, and every kind the inventory records (to find
        what a commit left behind), and start the failure reactor's watches."""
        kinds = set(desired.kinds)
        if inventory is not None:
            kinds |= {(e.ref.api_version, e.ref.kind) for e in inventory.entries}
        for key in sorted(kinds - set(self.informers)):
            inf = Informer(self.client, key[0], key[1], self.on_change, self.metrics, self.stop,
                           timeout_seconds=self.watch_timeout)
            self.informers[key] = inf
            inf.start()
        self.failures.start()

    def all(self) -> list[Informer]:
        return [*self.informers.values(), *(self.failures.informers if self.failures.started else ())]

    def down(self) -> list[str]:
        """The managed kinds not watched now, with why (for `/readyz`)."""
        return [f"{i.kind}: {i.last_error}" for i in self.informers.values()
                if not i.synced.is_set() or not i.connected]

    # -- reads --------------------------------------------------------------------
    def cache(self) -> dict[ObjectRef, Mapping[str, Any]]:
        live: dict[ObjectRef, Mapping[str, Any]] = {}
        for inf in self.informers.values():
            live.update(inf.items())
        return live

    def fetch_absent(self, refs: Iterable[ObjectRef], cache: Mapping[ObjectRef, Any]
                     ) -> dict[ObjectRef, Mapping[str, Any]]:
        """GET the objects of `refs` the cache does not hold (`drift_pass.to_fetch`)."""
        absent = to_fetch(refs, cache)
        if not absent:
            return {}
        found: dict[ObjectRef, Mapping[str, Any]] = self.safe("get", lambda: complete(self.client, {}, absent)) or {}
        return found

    def live(self, desired: Desired) -> dict[ObjectRef, Mapping[str, Any]]:
        """The cache, and every desired object it lacks as a GET finds it."""
        cache = self.cache()
        cache.update(self.fetch_absent([m.ref for m in desired.manifests], cache))
        return cache

    def version(self) -> KubeVersion:
        if self._version is None:
            self._version = KubeVersion.parse(self.client.version())
        return self._version

    def wait_for_version(self) -> KubeVersion | None:
        """Local mode renders before anything else, so it needs the server's
        version first; retried until the API server answers or we stop."""
        delay = 1.0
        while not self.stop.is_set():
            try:
                return self.version()
            except KubeError as e:
                log.warning("cannot ask the API server for its version (%s); retrying in %.0fs", e.message, delay)
                self.stop.wait(delay)
                delay = min(delay * 2, 30.0)
        return None
