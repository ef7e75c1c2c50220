"""A small in-memory Kubernetes API server on loopback, for cluster faults.

Real enough for `intentc apply` and `intentc drift` to talk to it through
the real client (HTTP, JSON, Status errors, resourceVersion checks on PUT,
AlreadyExists on POST), and able to misbehave on purpose: `etcd_down`
answers every storage request with the 500 a kube-apiserver returns when
etcd is unavailable; `inventory` can be replaced by any hostile ConfigMap.
The real-server versions of these tests are marked `kube`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from intentc.kube.resources import KNOWN

PLURALS = {r.plural for r in KNOWN.values()}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}


def _split(path: str) -> tuple[str, str, str, str] | None:
    """(api prefix, namespace, plural, name) of an object or collection path."""
    parts = path.strip("/").split("/")
    n = 2 if parts[0] == "api" else 3
    prefix, rest = "/" + "/".join(parts[:n]), parts[n:]
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or rest[0] not in PLURALS:
        return None
    return prefix, ns, rest[0], rest[1] if len(rest) > 1 else ""


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.etcd_down = False
        self.version = 0
        self.requests: list[tuple[str, str]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null") if length else None
                code, out = api.handle(self.command, url.path, url.query, body)
                self._send(code, out)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "FakeApi":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, directory: Path) -> Path:
        path = directory / "fake.kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
            f"    server: {self.url}\nusers:\n- name: u\n  user:\n    token: fake-token\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: u\ncurrent-context: fake\n")
        return path

    def put_raw(self, path: str, obj: dict[str, Any]) -> None:
        with self.lock:
            self.version += 1
            obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
            self.objects[path] = obj

    def handle(self, method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path))
        if path == "/version":
            return 200, {"major": "1", "minor": "37", "gitVersion": "v1.37.2"}
        if path == "/readyz/etcd":
            return (500, "[-]etcd failed: reason withheld") if self.etcd_down else (200, "ok")
        if self.etcd_down:
            return 500, _status(500, "InternalError", "etcdserver: request timed out")
        where = _split(path)
        if where is None:
            return 404, _status(404, "NotFound", f"the server could not find {path}")
        prefix, ns, plural, name = where
        dry = "dryRun" in query
        with self.lock:
            if method == "GET" and not name:
                items = [o for p, o in sorted(self.objects.items())
                         if (w := _split(p)) and w[0] == prefix and w[2] == plural and (not ns or w[1] == ns)]
                return 200, {"kind": "List", "items": [json.loads(json.dumps(o)) for o in items]}
            if method == "POST":
                target = f"{path}/{body['metadata']['name']}"
                if target in self.objects:
                    return 409, _status(409, "AlreadyExists", f"{plural} \"{body['metadata']['name']}\" already exists")
                self.version += 1
                body["metadata"]["resourceVersion"] = str(self.version)
                self.objects[target] = body
                return 201, body
            current = self.objects.get(path)
            if method == "GET":
                return (200, current) if current is not None else (404, _status(404, "NotFound", f"{name} not found"))
            if method == "DELETE":
                if current is None:
                    return 404, _status(404, "NotFound", f"{name} not found")
                if not dry:
                    del self.objects[path]
                return 200, _status(200, "", "deleted")
            if method == "PUT":
                if current is None:
                    return 404, _status(404, "NotFound", f"{name} not found")
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if rv is not None and rv != current["metadata"]["resourceVersion"]:
                    return 409, _status(409, "Conflict", "the object has been modified; please apply your "
                                                         "changes to the latest version and try again")
            if method in ("PUT", "PATCH"):
                merged = json.loads(json.dumps(body))
                if method == "PATCH" and current is not None:   # apply: keep what the server set
                    merged.setdefault("metadata", {})
                    for k in ("uid", "creationTimestamp"):
                        if k in current["metadata"]:
                            merged["metadata"][k] = current["metadata"][k]
                if dry:
                    return 200, merged
                self.version += 1
                merged["metadata"]["resourceVersion"] = str(self.version)
                self.objects[path] = merged
                return 200, merged
        return 405, _status(405, "MethodNotAllowed", method)
