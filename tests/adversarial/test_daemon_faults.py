"""The daemon's own surface under hostile or unlucky peers (issue 16, SECURITY.md).

Scrapers that hang up, probes from anyone who reaches the port, and a
SIGTERM while a retried rollout is queued must cost a log line at most:
no traceback per connection, no API URL or RBAC text in a probe body, no
CancelledError on shutdown.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from intentc.daemon.http import DEFAULT_LISTEN, HealthServer, parse_listen
from intentc.daemon.config import DaemonConfig
from intentc.daemon.rollouts import report_crash
from intentc.daemon.metrics import DaemonMetrics

SECRET_REASON = ("not watching: Job: 403 jobs.batch is forbidden: User \"system:serviceaccount:intentc-system:"
                 "intentc\" cannot list resource \"jobs\" at https://10.0.0.1:443/apis/batch/v1/jobs")


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_probe_bodies_say_nothing_but_ok_or_not(caplog: pytest.LogCaptureFixture) -> None:
    server = HealthServer("127.0.0.1:0", DaemonMetrics(), lambda: (True, "reactor last turned 1s ago"),
                          lambda: (False, SECRET_REASON)).start()
    try:
        with caplog.at_level(logging.INFO, logger="intentc.daemon"):
            assert _get(server.port, "/readyz") == (503, "not ready\n")
            assert _get(server.port, "/readyz") == (503, "not ready\n")
            assert _get(server.port, "/healthz") == (200, "ok\n")
        said = [r.getMessage() for r in caplog.records if "/readyz" in r.getMessage()]
        assert said == [f"/readyz: {SECRET_REASON}"], "the reason is logged once, when it changes"
    finally:
        server.stop()


def test_listen_is_loopback_unless_said_otherwise() -> None:
    assert parse_listen(DEFAULT_LISTEN) == ("127.0.0.1", 9090)
    assert DaemonConfig.__dataclass_fields__["listen"].default == DEFAULT_LISTEN
    assert parse_listen(":9090") == ("0.0.0.0", 9090)


def test_scrapers_that_hang_up_leave_no_traceback(capfd: pytest.CaptureFixture[str],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    metrics = DaemonMetrics()
    for i in range(200):                       # a /metrics body big enough to be mid-write on hang-up
        metrics.reconcile_seconds.labels(f"t{i}").observe(0.1)
    server = HealthServer("127.0.0.1:0", metrics, lambda: (True, ""), lambda: (True, "")).start()
    try:
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", server.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # close = RST
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.close()
        time.sleep(0.5)
        assert _get(server.port, "/healthz")[0] == 200, "still serving"
    finally:
        server.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err, err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_shutdown_with_a_queued_rollout_logs_no_cancelled_error(caplog: pytest.LogCaptureFixture) -> None:
    """SIGTERM → `Daemon.run` shuts the one-thread worker down with cancel_futures while a
    retried rollout waits behind the running one: the cancelled one is not a crash."""
    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    running = pool.submit(release.wait, 10)
    running.add_done_callback(report_crash)
    queued = pool.submit(lambda: None)
    queued.add_done_callback(report_crash)
    with caplog.at_level(logging.DEBUG):
        threading.Timer(0.2, release.set).start()
        pool.shutdown(wait=True, cancel_futures=True)
    assert queued.cancelled()
    text = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "CancelledError" not in text and "crashed" not in text and "exception calling callback" not in text, text
