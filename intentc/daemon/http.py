"""`/healthz`, `/readyz` and `/metrics` on one small threaded HTTP server.

prometheus-client's own server answers every path with metrics; a
Kubernetes probe needs distinct liveness and readiness answers, so the
three endpoints share this server instead.  Liveness means "the loop is
still turning" (a stuck loop is restarted by the kubelet); readiness means
"the first sync finished and the API server answered recently".

Whoever can reach the port learns only what the bodies say, so they are
terse (`ok`, `not ready`): the reasons — API server URLs, RBAC refusals —
go to the daemon's log when they change.  A probe may add a fixed phrase
that names no address or error for the body, where a human or an alert
reading `/readyz` needs it (`not leader (lease held by <pod>)`, `rollout
of the head commit not verified yet`).  The server binds where `--listen`
says, loopback by default.  `/metrics` is served here, in plain HTTP,
only when the daemon runs with `--no-metrics-secure` (loopback only, for
local use); otherwise it is on its own HTTPS port behind TokenReview and
SubjectAccessReview (daemon/secure_metrics.py) and 404 here.  A client
that hangs up mid-answer (a scraper timing out) is not an error worth a
traceback.
"""

from __future__ import annotations

import ipaddress
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from prometheus_client import CONTENT_TYPE_LATEST

from intentc.daemon.metrics import DaemonMetrics

# (ok, why for the log) or (ok, why for the log, phrase the body may carry)
Probe = Callable[[], tuple[bool, str] | tuple[bool, str, str]]


DEFAULT_LISTEN = "127.0.0.1:9090"
log = logging.getLogger("intentc.daemon")


def parse_listen(value: str) -> tuple[str, int]:
    """`:9090` (every interface, said explicitly), `0.0.0.0:9090`, `127.0.0.1:0` → (host, port);
    ValueError otherwise."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen wants HOST:PORT or :PORT, got {value!r}")
    return (host or "0.0.0.0"), int(port)


def is_loopback(listen: str) -> bool:
    """Whether a --listen address is reachable from this host only (plain /metrics is allowed there)."""
    host = parse_listen(listen)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A peer that went away (broken pipe, reset) is routine; anything else is logged once."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return
        log.warning("health/metrics request from %s failed: %r", client_address[0], exc)


class ServedOnAThread:
    """A stdlib HTTP server run on a daemon thread of its own: the probes' and the
    secure metrics' servers share this lifecycle and differ in what they answer."""

    server: ThreadingHTTPServer
    _thread: threading.Thread

    def serve(self, server: ThreadingHTTPServer, name: str) -> None:
        self.server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


class HealthServer(ServedOnAThread):
    def __init__(self, listen: str, metrics: DaemonMetrics | None, live: Probe, ready: Probe) -> None:
        host, port = parse_listen(listen)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics" and owner.metrics is not None:
                    self._send(200, owner.metrics.exposition(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez"):
                    self._probe(owner.live)
                elif path == "/readyz":
                    self._probe(owner.ready)
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _probe(self, probe: Probe) -> None:
                ok, why, *said = probe()
                owner.note(self.path, ok, why)
                body = "ok" if ok else ("not ready: " + said[0] if said and said[0] else "not ready")
                self._send(200 if ok else 503, (body + "\n").encode(), "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # probes every few seconds: no access log
                return

        self.metrics = metrics
        self.live = live
        self.ready = ready
        self._said: dict[str, tuple[bool, str]] = {}
        self._lock = threading.Lock()
        server = _QuietServer((host, port), Handler)
        server.daemon_threads = True
        self.serve(server, "intentc-http")

    def note(self, path: str, ok: bool, why: str) -> None:
        """Log a probe's reason when its answer changes (the body does not carry it)."""
        with self._lock:
            if self._said.get(path) == (ok, why):
                return
            self._said[path] = (ok, why)
        log.log(logging.INFO if ok else logging.WARNING, "%s: %s", path.split("?", 1)[0],
                why or ("ok" if ok else "not ok"))

    def start(self) -> HealthServer:
        self._thread.start()
        return self
