"""`/metrics` over HTTPS for callers the API server vouches for (`metrics_auth`).

Its own port (`--metrics-listen`), apart from the probes: the kubelet probes
`/healthz` and `/readyz` in plain HTTP without a token, and their bodies say
nothing (daemon/http.py); the counters here go only to a scraper whose
ServiceAccount may `get` the non-resource URL `/metrics`.

Whoever reaches the port before authenticating can make the daemon work,
so each connection is bounded: at most `MAX_CONNECTIONS` at once (more are
closed unanswered), `IO_TIMEOUT` per read, `DEADLINE` for the whole
connection (TLS handshake included, which runs in the connection's thread,
never in the accepting one), and `MAX_REQUEST_BYTES` of request line and
headers.  Nothing of a request is logged but the decision and the user.
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from intentc.daemon.http import ServedOnAThread, parse_listen
from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.metrics_auth import METRICS_PATH, Reviewer
from intentc.daemon.tls import ServingCert

MAX_CONNECTIONS = 32
IO_TIMEOUT = 10.0
DEADLINE = 30.0
MAX_REQUEST_BYTES = 32 * 1024
log = logging.getLogger("intentc.daemon")


class RequestTooLarge(ConnectionError):
    """More request line and headers than any scrape sends: the connection is dropped."""


class _Capped:
    """The connection's reader, cut off after MAX_REQUEST_BYTES (a GET has no body)."""

    def __init__(self, raw: Any, cap: int) -> None:
        self.raw = raw
        self.left = cap

    def _take(self, limit: int | None) -> int:
        if self.left <= 0:
            raise RequestTooLarge("request too large")
        return self.left if limit is None or limit < 0 else min(limit, self.left)

    def readline(self, limit: int | None = -1) -> bytes:
        data: bytes = self.raw.readline(self._take(limit))
        self.left -= len(data)
        return data

    def read(self, n: int | None = -1) -> bytes:
        data: bytes = self.raw.read(self._take(n))
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.raw.close()


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS      # listen backlog: a burst waits in the kernel, not in SYN retries

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], cert: ServingCert) -> None:
        self.cert = cert
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def get_request(self) -> tuple[Any, Any]:
        """Wrap without the handshake: a client that never finishes it must not block accepting."""
        sock, addr = self.socket.accept()
        try:
            return self.cert.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr
        except (OSError, ValueError):
            sock.close()
            raise OSError("TLS wrap failed") from None

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)          # at capacity: closed unanswered
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Peers that hang up, time out, speak plain HTTP or send too much are routine."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLError, socket.timeout)):
            return
        log.warning("metrics request from %s failed: %r", client_address[0], exc)


class SecureMetricsServer(ServedOnAThread):
    def __init__(self, listen: str, metrics: DaemonMetrics, reviewer: Reviewer, cert: ServingCert) -> None:
        host, port = parse_listen(listen)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            timeout = IO_TIMEOUT

            def setup(self) -> None:
                super().setup()
                self.rfile = _Capped(self.rfile, MAX_REQUEST_BYTES)  # type: ignore[assignment]
                conn = self.connection
                # shutdown of the plain socket under the TLS one: a read in progress ends
                self._watchdog = threading.Timer(DEADLINE, _cut, (conn,))
                self._watchdog.daemon = True
                self._watchdog.start()

            def finish(self) -> None:
                self._watchdog.cancel()
                try:
                    super().finish()
                except OSError:
                    pass

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != METRICS_PATH:
                    self._send(404, b"not found\n", "text/plain")
                    return
                answer = owner.reviewer.answer(self.headers.get("Authorization"))
                owner.note(answer.status, answer.why)
                if answer.status != 200:
                    self._send(answer.status, (answer.body + "\n").encode(), "text/plain; charset=utf-8")
                    return
                self._send(200, owner.metrics.exposition(), CONTENT_TYPE_LATEST)

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if code == 401:
                    self.send_header("WWW-Authenticate", 'Bearer realm="intentc"')
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:   # no access log: decisions only
                return

        self.metrics = metrics
        self.reviewer = reviewer
        self.cert = cert
        self._said: tuple[int, str] | None = None
        self._lock = threading.Lock()
        self.serve(_TlsServer((host, port), Handler, cert), "intentc-metrics")

    def note(self, status: int, why: str) -> None:
        """Log a decision when it differs from the last (a scraper every 15 s is not news);
        `why` names the user and RBAC's reason, never the token."""
        with self._lock:
            if self._said == (status, why):
                return
            self._said = (status, why)
        level = logging.DEBUG if status == 200 else logging.ERROR if status == 500 else logging.INFO
        log.log(level, "/metrics: %d for %s", status, why)

    def start(self) -> SecureMetricsServer:
        self._thread.start()
        return self


def _cut(conn: Any) -> None:
    """End a connection past its deadline: shut the socket under the TLS layer (closing the
    SSL object from another thread would race the reader)."""
    try:
        socket.socket.shutdown(conn, socket.SHUT_RDWR)
    except OSError:
        pass
