"""One informer per managed kind: list, then watch, with a local cache.

The client-go reflector's loop, small: list (and remember the list's
resourceVersion), watch from there, move the resourceVersion forward with
every event and bookmark; a watch that ends on the server's timeout is
resumed from the last resourceVersion; `410 Gone` means the server no
longer remembers that far back, so list again; a lost connection is
retried with exponential backoff, resuming (not relisting) when it comes
back.  The cache is what detection reads, so an event costs no request.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from intentc.daemon.metrics import DaemonMetrics
from intentc.drift.managed import SELECTOR
from intentc.kube.client import KubeClient
from intentc.kube.errors import KubeError, NotFound
from intentc.kube.watch import Expired, Watch, list_objects
from intentc.objectmeta import ObjectRef

log = logging.getLogger("intentc.daemon")

# (kind, refs changed); "LIST" reports a relist with every ref it saw or dropped.
OnChange = Callable[[str, frozenset[ObjectRef]], None]


class Informer:
    def __init__(self, client: KubeClient, api_version: str, kind: str, on_change: OnChange,
                 metrics: DaemonMetrics, stop: threading.Event, timeout_seconds: int = 300,
                 backoff: tuple[float, float] = (0.5, 30.0), label_selector: str = SELECTOR) -> None:
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.on_change = on_change
        self.metrics = metrics
        self.stop = stop
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.label_selector = label_selector      # "" for every object of the kind (Nodes)
        self.resource_version = ""
        self.synced = threading.Event()       # first list done
        self.connected = False
        self.last_error = ""
        self._cache: dict[ObjectRef, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._watch: Watch | None = None
        self._thread = threading.Thread(target=self.run, name=f"informer-{kind}", daemon=True)

    # -- the cache ------------------------------------------------------------
    def items(self) -> dict[ObjectRef, dict[str, Any]]:
        with self._lock:
            return dict(self._cache)

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> Informer:
        self._thread.start()
        return self

    def close(self) -> None:
        """Unblock a waiting watch; `stop` (shared) ends the loop."""
        w = self._watch
        if w is not None:
            w.close()

    def join(self, timeout: float = 10.0) -> None:
        self._thread.join(timeout)

    # -- the loop ---------------------------------------------------------------
    def _list(self) -> None:
        items, rv = list_objects(self.client, self.api_version, self.kind, "", self.label_selector)
        fresh = {ObjectRef.of(i): i for i in items}
        with self._lock:
            touched = frozenset(set(self._cache) | set(fresh))
            self._cache = fresh
        self.resource_version = rv
        self.synced.set()
        self.on_change("LIST", touched)

    def _apply(self, kind: str, obj: dict[str, Any]) -> ObjectRef:
        ref = ObjectRef.of(obj)
        with self._lock:
            if kind == "DELETED":
                self._cache.pop(ref, None)
            else:
                self._cache[ref] = obj
        return ref

    def run(self) -> None:
        delay = self.backoff[0]
        need_list = True
        while not self.stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                w = Watch(self.client, self.api_version, self.kind, self.resource_version,
                          label_selector=self.label_selector, timeout_seconds=self.timeout_seconds)
                self._watch = w
                if self.stop.is_set():
                    break
                self.connected, self.last_error = True, ""
                delay = self.backoff[0]
                for event in w:
                    if event.type == "BOOKMARK":
                        self.resource_version = event.resource_version or self.resource_version
                        continue
                    ref = self._apply(event.type, event.object)
                    self.resource_version = event.resource_version or self.resource_version
                    self.on_change(event.type, frozenset({ref}))
                if not self.stop.is_set():
                    self.metrics.watch_restarts.labels("timeout").inc()
            except Expired:
                log.info("watch of %s: resourceVersion %s expired; listing again", self.kind, self.resource_version)
                self.metrics.watch_restarts.labels("expired").inc()
                need_list = True
            except NotFound:
                self.last_error = f"the server does not serve {self.kind} in {self.api_version}"
                self.stop.wait(self.backoff[1])
            except KubeError as e:
                if self.stop.is_set():
                    break
                self.connected, self.last_error = False, e.message
                self.metrics.watch_restarts.labels("error").inc()
                log.warning("watch of %s lost (%s); retrying in %.1fs", self.kind, e.message, delay)
                self.stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])
            finally:
                self._watch = None
        self.connected = False
