"""List-then-watch on top of `KubeClient`, the client-go reflector's protocol.

Added for the drift daemon (intentc.daemon.watch), next to the client
wrapper because it streams through the same `ApiClient` (auth, TLS, pool):

* `list_objects` returns the items *and* the list's resourceVersion, the
  point from which a watch continues without missing an event;
* `Watch` streams `ADDED / MODIFIED / DELETED / BOOKMARK` events from a
  resourceVersion.  A resourceVersion the server no longer keeps answers
  `410 Gone` (as an HTTP status or as an `ERROR` event); both become
  `Expired`, whose only cure is a fresh list.  A dropped connection becomes
  `Unreachable`, which the caller retries with backoff.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Iterator

import urllib3

from intentc.kube.client import KubeClient, api_exception
from intentc.kube.errors import KubeError, Unreachable


class Expired(KubeError):
    """410 Gone: the resourceVersion is older than the server's watch cache."""


@dataclass(frozen=True)
class WatchEvent:
    type: str                      # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


def list_objects(client: KubeClient, api_version: str, kind: str, namespace: str = "",
                 label_selector: str = "") -> tuple[list[dict[str, Any]], str]:
    """All matching objects and the collection's resourceVersion."""
    res = client.resource(api_version, kind)
    query = [("labelSelector", label_selector)] if label_selector else []
    data = client.request("GET", res.path(namespace), query)
    items = list(data.get("items") or [])
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items, str((data.get("metadata") or {}).get("resourceVersion") or "")


class Watch:
    """One watch request; iterate it for events, `close()` it from any thread."""

    def __init__(self, client: KubeClient, api_version: str, kind: str, resource_version: str,
                 namespace: str = "", label_selector: str = "", timeout_seconds: int = 300) -> None:
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.resource_version = resource_version
        self.namespace = namespace
        self.label_selector = label_selector
        self.timeout_seconds = timeout_seconds
        self._response: Any = None
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        resp = self._response
        if resp is None:
            return
        # urllib3 >= 2.3 can shut the socket down under a blocked read; older
        # versions (and a connection not yet established) only close.
        for stop in (getattr(resp, "shutdown", None), resp.close):
            if stop is None:
                continue
            try:
                stop()
                return
            except (OSError, ValueError, urllib3.exceptions.HTTPError):
                continue

    def _open(self) -> Any:
        res = self.client.resource(self.api_version, self.kind)
        query = [("watch", "1"), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(self.timeout_seconds))]
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        api = self.client.api
        try:
            method, url, headers, _body, _ = api.param_serialize(
                "GET", res.path(self.namespace), query_params=query,
                header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
            # the read timeout outlives the server-side timeout, so a quiet
            # stream ends with the server's clean close, not a client error
            resp = api.call_api(method, url, header_params=headers,
                                _request_timeout=(5.0, float(self.timeout_seconds) + 15.0))
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"cannot reach the API server at {self.client.host}: {e}") from None
        except api_exception() as e:
            raise Unreachable(f"cannot reach the API server at {self.client.host}: {e.reason}") from None
        raw = resp.response
        if resp.status == 410:
            raise Expired(f"resourceVersion {self.resource_version} is too old", 410, "Expired")
        if not 200 <= resp.status < 300:
            raise KubeError.from_status(resp.status, raw.read() or b"")
        return raw

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._closed.is_set():
            return
        raw = self._open()
        self._response = raw
        buffer = b""
        try:
            for chunk in raw.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield self._event(line)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            if not self._closed.is_set():
                raise Unreachable(f"watch of {self.kind} interrupted: {e}") from None
        finally:
            self._response = None
            raw.release_conn()

    def _event(self, line: bytes) -> WatchEvent:
        data = json.loads(line)
        kind, obj = str(data.get("type", "")), dict(data.get("object") or {})
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            message = str(obj.get("message") or "watch error")
            if code == 410:
                raise Expired(message, 410, str(obj.get("reason") or "Expired"))
            raise KubeError(message, code, str(obj.get("reason") or ""))
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)
        if obj.get("metadata", {}).get("resourceVersion"):
            self.resource_version = str(obj["metadata"]["resourceVersion"])
        return WatchEvent(kind, obj)
