"""A stdlib HTTP server that answers `/api/v1/query` as Prometheus does, from a function.

For unit tests of our side only (the client's parsing, the tuner's queries,
`intentc tune --prometheus-url`); tests/test_tune_kube.py runs a real
Prometheus.  `answer(query, time)` returns a float (one sample), None (an
empty vector), a dict (the whole JSON document, sent as is) or raises
`Refuse(status, document)`.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class Refuse(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


Answer = Callable[[str, float | None], Any]


def vector(*samples: tuple[dict[str, str], float | str], at: float = 0.0) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [at, str(value)]} for labels, value in samples]}}


class FakePrometheus:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.queries: list[tuple[str, float | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                if url.path != "/api/v1/query":
                    self._send(404, b"404 page not found\n", "text/plain")
                    return
                params = dict(urllib.parse.parse_qsl(url.query))
                at = float(params["time"]) if "time" in params else None
                fake.queries.append((params.get("query", ""), at))
                try:
                    got = fake.answer(params.get("query", ""), at)
                except Refuse as r:
                    body = r.body if isinstance(r.body, bytes) else json.dumps(r.body).encode()
                    self._send(r.status, body, "application/json")
                    return
                if isinstance(got, bytes):
                    self._send(200, got, "application/json")
                    return
                doc = got if isinstance(got, dict) else vector(*(() if got is None else (({}, got),)))
                self._send(200, json.dumps(doc).encode(), "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
