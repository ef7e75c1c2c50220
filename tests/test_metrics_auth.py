"""/metrics over HTTPS behind TokenReview + SubjectAccessReview: the caches, the answers
and the error paths, with the reviews answered in-process (the test bed's real
reviews are tests/test_metrics_auth_kube.py), and the TLS server's bounds."""

from __future__ import annotations

import logging
import socket
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from intentc.daemon.metrics import DaemonMetrics
from intentc.daemon.metrics_auth import (ACCESS_REVIEWS, MAX_TOKEN_BYTES, TOKEN_REVIEWS, Reviewer, ReviewError,
                                         TtlCache, Ttls, User, bearer_token)
from intentc.daemon.secure_metrics import MAX_CONNECTIONS, MAX_REQUEST_BYTES, SecureMetricsServer
from intentc.daemon.tls import CERT_FILE, KEY_FILE, CertError, ServingCert, self_signed

TOKEN = "tok-" + "s3cr3t" * 20


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Api:
    """Answers reviews the way the API server does, from two tables; counts each call."""

    def __init__(self, users: Mapping[str, str], allowed: set[str]) -> None:
        self.users, self.allowed = dict(users), set(allowed)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    def post(self, path: str, body: dict[str, Any]) -> Mapping[str, Any]:
        self.calls.append((path, body))
        if self.down:
            raise ReviewError("503 the API server is shutting down")
        if path == TOKEN_REVIEWS:
            name = self.users.get(body["spec"]["token"])
            if name is None:
                return {"status": {"authenticated": False, "error": "invalid bearer token"}}
            return {"status": {"authenticated": True, "user": {"username": name, "uid": "u-" + name,
                                                                 "groups": ["system:serviceaccounts"],
                                                                 "extra": {"k": ["v"]}}}}
        assert path == ACCESS_REVIEWS
        return {"status": {"allowed": body["spec"]["user"] in self.allowed, "reason": "RBAC: no binding"}}


def test_bearer_tokens_are_parsed_strictly() -> None:
    assert bearer_token(f"Bearer {TOKEN}") == TOKEN
    assert bearer_token(f"bearer  {TOKEN} ") == TOKEN
    for bad in (None, "", "Bearer", "Bearer ", "Basic dXNlcjpwdw==", f"Token {TOKEN}", "Bearer a b",
                "Bearer " + "x" * (MAX_TOKEN_BYTES + 1)):
        assert bearer_token(bad) is None, bad


def test_the_four_answers_and_what_the_reviews_carry() -> None:
    api = Api({TOKEN: "system:serviceaccount:mon:prom", "other": "system:serviceaccount:mon:nosy"},
              {"system:serviceaccount:mon:prom"})
    r = Reviewer(api.post)
    assert (r.answer(None).status, r.answer(None).body) == (401, "Unauthorized")
    assert r.answer("Bearer garbage").status == 401
    assert r.answer("Bearer other").status == 403
    ok = r.answer(f"Bearer {TOKEN}")
    assert (ok.status, ok.why) == (200, "system:serviceaccount:mon:prom")
    sar = [b for p, b in api.calls if p == ACCESS_REVIEWS][-1]["spec"]
    assert sar == {"user": "system:serviceaccount:mon:prom", "uid": "u-system:serviceaccount:mon:prom",
                   "groups": ["system:serviceaccounts"], "extra": {"k": ["v"]},
                   "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    # nothing a caller sees or the log is given names the token
    for answer in (r.answer(f"Bearer {TOKEN}"), r.answer("Bearer garbage"), r.answer("Bearer other")):
        assert TOKEN not in answer.why + answer.body and "garbage" not in answer.why


def test_answers_are_cached_with_controller_runtimes_ttls() -> None:
    clock = Clock()
    api = Api({TOKEN: "prom", "other": "nosy"}, {"prom"})
    r = Reviewer(api.post, clock=clock)
    assert Ttls() == Ttls(authenticated=60, unauthenticated=60, allowed=300, denied=30)
    for _ in range(5):
        assert r.answer(f"Bearer {TOKEN}").status == 200
        assert r.answer("Bearer other").status == 403
        assert r.answer("Bearer garbage").status == 401
    assert len(api.calls) == 5          # 3 TokenReviews, 2 SubjectAccessReviews: the rest from the caches
    # revoked: a deny is kept 30 s, an allow 5 min, an authentication 60 s
    api.allowed = {"nosy"}
    clock.now += 31
    assert r.answer("Bearer other").status == 200          # the deny expired, the new grant is seen
    assert r.answer(f"Bearer {TOKEN}").status == 200       # the allow is still cached
    api.users.pop(TOKEN)
    clock.now += 30                                         # 61 s after the first TokenReview
    assert r.answer(f"Bearer {TOKEN}").status == 401       # a deleted ServiceAccount's token stops within a minute


def test_an_api_server_that_does_not_answer_is_a_500_and_is_asked_again() -> None:
    api = Api({TOKEN: "prom"}, {"prom"})
    r = Reviewer(api.post)
    api.down = True
    failed = r.answer(f"Bearer {TOKEN}")
    assert (failed.status, failed.body) == (500, "Internal Server Error") and "TokenReview failed" in failed.why
    api.down = False
    assert r.answer(f"Bearer {TOKEN}").status == 200       # the failure was not cached
    r.decisions = TtlCache(8)
    api.down = True
    assert r.answer(f"Bearer {TOKEN}").why.startswith("SubjectAccessReview for prom failed")


def test_the_caches_are_bounded_and_keep_no_token() -> None:
    clock = Clock()
    cache: TtlCache[str, int] = TtlCache(3, clock)
    for i in range(5):
        cache.put(f"k{i}", i, 10)
    assert len(cache) == 3 and cache.get("k0") is None and cache.get("k4") == 4
    cache.get("k2")                      # used: kept over k3
    cache.put("k5", 5, 10)
    assert cache.get("k3") is None and cache.get("k2") == 2
    clock.now += 10
    assert cache.get("k5") is None       # expired
    api = Api({}, set())
    r = Reviewer(api.post, max_entries=16)
    for i in range(100):                 # a flood of random tokens costs reviews, not memory
        r.answer(f"Bearer random-{i}")
    assert len(r.users) == 16
    assert all(isinstance(k, bytes) and len(k) == 32 for k in r.users._items)   # salted hashes only


def test_a_cert_dir_is_loaded_and_reloaded_and_a_broken_one_refused(tmp_path: Path) -> None:
    with pytest.raises(CertError, match="tls.crt"):
        ServingCert(str(tmp_path / "nothing"), str(tmp_path / "work"))
    certs = tmp_path / "certs"
    certs.mkdir()
    cert, key = self_signed(("first.example",))
    (certs / CERT_FILE).write_bytes(cert)
    (certs / KEY_FILE).write_bytes(key)
    served = ServingCert(str(certs), str(tmp_path / "work"))
    first = served.context()
    cert2, key2 = self_signed(("second.example",))
    (certs / CERT_FILE).write_bytes(cert2)
    (certs / KEY_FILE).write_bytes(key2)
    served._checked -= 11               # RELOAD_SECONDS later
    assert served.context() is not first
    (certs / KEY_FILE).write_bytes(b"not a key")      # caught mid-rotation: the previous one stays
    served._checked -= 11
    current = served._ctx
    assert served.context() is current
    (certs / KEY_FILE).write_bytes(b"junk")
    with pytest.raises(CertError):
        ServingCert(str(certs), str(tmp_path / "work"))
    # a generated key is not left on disk
    ServingCert(None, str(tmp_path / "work"))
    assert not list((tmp_path / "work").rglob("*.key"))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[SecureMetricsServer, Api]]:
    api = Api({TOKEN: "prom", "other": "nosy"}, {"prom"})
    metrics = DaemonMetrics()
    metrics.rollbacks.inc()
    s = SecureMetricsServer("127.0.0.1:0", metrics, Reviewer(api.post), ServingCert(None, str(tmp_path))).start()
    try:
        yield s, api
    finally:
        s.stop()


def get(port: int, path: str = "/metrics", token: str | None = None) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_https_server_answers_by_the_reviews(server: tuple[SecureMetricsServer, Api],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    s, api = server
    caplog.set_level(logging.DEBUG, "intentc.daemon")
    assert get(s.port) == (401, "Unauthorized\n")
    assert get(s.port, token="garbage") == (401, "Unauthorized\n")
    assert get(s.port, token="other") == (403, "Forbidden\n")
    status, text = get(s.port, token=TOKEN)
    assert status == 200 and "intentc_rollbacks_total 1.0" in text
    assert get(s.port, "/healthz", TOKEN)[0] == 404        # the probes are on the plain port
    assert "nosy may not get /metrics: RBAC: no binding" in caplog.text
    assert TOKEN not in caplog.text and "garbage" not in caplog.text


def test_the_https_server_bounds_what_a_stranger_can_hold(server: tuple[SecureMetricsServer, Api],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    s, api = server
    # plain HTTP to the TLS port, and a request larger than any scrape: dropped, no traceback
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as plain:
        plain.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        plain.recv(100)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as tls:
            tls.sendall(b"GET /metrics HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 4000 + b"\r\n")
            for _ in range(MAX_REQUEST_BYTES // 4000 + 2):
                try:
                    tls.sendall(b"X-Pad: " + b"a" * 4000 + b"\r\n")
                except OSError:
                    break
            try:
                assert tls.recv(100) == b""      # closed without an answer
            except OSError:
                pass
    assert not api.calls, "nothing was reviewed for either"
    # idle connections up to the cap: the next one is closed at once (an accepted one would wait
    # IO_TIMEOUT for its handshake, past this recv's 3 s), and a slot frees when one ends
    assert MAX_CONNECTIONS == 32
    idle = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(32)]
    try:
        time.sleep(0.5)
        with socket.create_connection(("127.0.0.1", s.port), timeout=3) as extra:
            assert extra.recv(10) == b""
    finally:
        for c in idle:
            c.close()
    deadline = time.monotonic() + 10
    while get(s.port, token=TOKEN)[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert get(s.port, token=TOKEN)[0] == 200
    assert "Traceback" not in caplog.text


def test_a_user_is_keyed_by_everything_the_review_said() -> None:
    """Two tokens of one name but other groups are not one cache entry (the SAR would differ)."""
    assert User("a", groups=("g1",)) != User("a", groups=("g2",))
    assert hash(User("a", extra=(("k", ("v",)),))) == hash(User("a", extra=(("k", ("v",)),)))


def test_the_command_line_keeps_plain_metrics_on_loopback(tmp_path: Path) -> None:
    """--no-metrics-secure is for local use: refused (exit 2, no traceback) beyond loopback;
    the HTTPS port follows --listen's host unless given."""
    from typer.testing import CliRunner

    from intentc.cli import app
    from intentc.cli.daemon import _metrics_listen

    base = ["daemon", "--repo", str(tmp_path), "-t", "c.yaml", "--kubeconfig", str(tmp_path / "none")]
    handlers, level = logging.root.handlers[:], logging.root.level
    try:
        for extra, said in ((["--no-metrics-secure", "--listen", ":9090"], "only on a loopback --listen"),
                            (["--no-metrics-secure", "--metrics-listen", "127.0.0.1:8443"], "are for HTTPS"),
                            (["--listen", "127.0.0.1:9090", "--metrics-listen", ":9090"], "different ports"),
                            (["--metrics-listen", "8443"], "--metrics-listen wants HOST:PORT")):
            res = CliRunner().invoke(app, base + extra)
            assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output, (extra, res.output)
    finally:        # the daemon's logging setup wrote to the runner's stream, closed now
        logging.root.handlers[:], logging.root.level = handlers, level
    assert _metrics_listen(":9090", None, True, None) == ":8443"
    assert _metrics_listen("127.0.0.1:9090", None, True, None) == "127.0.0.1:8443"
    assert _metrics_listen("", None, True, None) is None                 # --listen '' : no HTTP at all
    assert _metrics_listen("127.0.0.1:9090", "", True, None) is None
    assert _metrics_listen("127.0.0.1:9090", None, False, None) is None  # plain, on --listen


def test_a_slow_client_is_cut_at_the_deadline(server: tuple[SecureMetricsServer, Api],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read within IO_TIMEOUT is not enough: the whole connection has DEADLINE (1 s here),
    and it is the deadline's watchdog that ends it (the server closes, the client never stops)."""
    import intentc.daemon.secure_metrics as sm

    s, _ = server
    monkeypatch.setattr(sm, "DEADLINE", 1.0)
    cuts: list[object] = []
    real_cut = sm._cut

    def cut(conn: object) -> None:
        cuts.append(conn)
        real_cut(conn)
    monkeypatch.setattr(sm, "_cut", cut)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    closed, lines = False, 0
    give_up = time.monotonic() + 30                     # how long the test waits for the server to close
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as raw:
        with ctx.wrap_socket(raw) as tls:
            tls.sendall(b"GET /metrics HTTP/1.1\r\n")
            tls.settimeout(0.2)
            try:
                while time.monotonic() < give_up:          # a header line every 0.2 s, never the end
                    tls.sendall(b"X-Slow: 1\r\n")
                    lines += 1
                    try:
                        if tls.recv(100) == b"":
                            closed = True                   # closed by the server
                            break
                    except TimeoutError:
                        continue
            except OSError:
                closed = True                               # reset by the server
    assert closed, f"the server kept a slow connection open for 30 s ({lines} header lines)"
    assert len(cuts) == 1, "the connection's deadline did not cut it"
    assert lines * len(b"X-Slow: 1\r\n") < sm.MAX_REQUEST_BYTES    # not cut for its size
