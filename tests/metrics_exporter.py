"""A metrics endpoint whose values a test sets while it runs, for Prometheus to scrape.

    exporter = MetricsExporter().start()
    exporter.set("queue_depth", {"queue": "a"}, 3)          # a gauge
    exporter.set("jobs_done_total", {}, 7)                   # a counter (name ends in _total)
    exporter.observe("latency_seconds", {}, 0.3)             # a histogram, default buckets
    ... Prometheus scrapes exporter.target ("127.0.0.1:PORT"), path /metrics ...
    exporter.stop()

It serves the Prometheus text exposition format (version 0.0.4) from a stdlib
`http.server` on a free loopback port; every call is thread-safe, and a scrape sees
each metric family as of one moment.
"""

from __future__ import annotations

import errno
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterable, Mapping

from tests.kube_env import free_port

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
KINDS = ("gauge", "counter")

LabelKey = tuple[tuple[str, str], ...]


def _labels_key(labels: Mapping[str, str] | None) -> LabelKey:
    return tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels_text(key: Iterable[tuple[str, str]]) -> str:
    pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in key)
    return "{" + pairs + "}" if pairs else ""


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class _Histogram:
    def __init__(self, buckets: Iterable[float]) -> None:
        self.bounds = tuple(sorted(float(b) for b in buckets if not math.isinf(b)))
        self.counts = [0] * (len(self.bounds) + 1)   # per bucket, not cumulative; last is +Inf
        self.sum = 0.0

    def lines(self, name: str, key: LabelKey) -> list[str]:
        out, cumulative = [], 0
        for bound, count in zip((*self.bounds, math.inf), self.counts):
            cumulative += count
            out.append(f"{name}_bucket{_labels_text((*key, ('le', _number(bound))))} {cumulative}")
        out.append(f"{name}_sum{_labels_text(key)} {_number(self.sum)}")
        out.append(f"{name}_count{_labels_text(key)} {cumulative}")
        return out


class MetricsExporter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, str] = {}
        self._values: dict[str, dict[LabelKey, float]] = {}
        self._histograms: dict[str, dict[LabelKey, _Histogram]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.scrapes = 0

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- values -------------------------------------------------------------
    def set(self, name: str, labels: Mapping[str, str] | None, value: float, kind: str | None = None) -> None:
        """Set one series of a gauge or counter (`kind`; by default a counter when the name
        ends in _total, else a gauge)."""
        kind = kind or ("counter" if name.endswith("_total") else "gauge")
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: one of {KINDS} (histograms: observe/set_histogram)")
        with self._lock:
            self._claim(name, kind)
            self._values.setdefault(name, {})[_labels_key(labels)] = float(value)

    def remove(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Stop serving one series (or, without labels, every series of the metric)."""
        with self._lock:
            for table in (self._values, self._histograms):
                if name in table:
                    if labels is None:
                        table[name].clear()
                    else:
                        table[name].pop(_labels_key(labels), None)

    def observe(self, name: str, labels: Mapping[str, str] | None, value: float,
                buckets: Iterable[float] = DEFAULT_BUCKETS, count: int = 1) -> None:
        """Add `count` observations of `value` to a histogram series (its buckets are fixed
        by the first observation)."""
        with self._lock:
            self._claim(name, "histogram")
            series = self._histograms.setdefault(name, {})
            hist = series.setdefault(_labels_key(labels), _Histogram(buckets))
            index = next((i for i, b in enumerate(hist.bounds) if value <= b), len(hist.bounds))
            hist.counts[index] += count
            hist.sum += value * count

    def set_histogram(self, name: str, labels: Mapping[str, str] | None,
                      counts: Mapping[float, int], total: float = 0.0) -> None:
        """Replace a histogram series outright: `counts` maps each bucket's upper bound to the
        observations in that bucket alone (not cumulative; math.inf for above the last
        bound), `total` is their sum."""
        with self._lock:
            self._claim(name, "histogram")
            hist = _Histogram(counts)
            for bound, n in counts.items():
                index = len(hist.bounds) if math.isinf(bound) else hist.bounds.index(float(bound))
                hist.counts[index] += n
            hist.sum = float(total)
            self._histograms.setdefault(name, {})[_labels_key(labels)] = hist

    def _claim(self, name: str, kind: str) -> None:
        known = self._kinds.setdefault(name, kind)
        if known != kind:
            raise ValueError(f"{name} is a {known}, not a {kind}")

    def exposition(self) -> str:
        """What a scrape gets now."""
        lines: list[str] = []
        with self._lock:
            for name, kind in sorted(self._kinds.items()):
                if kind == "histogram":
                    series = self._histograms.get(name, {})
                    if series:
                        lines.append(f"# TYPE {name} histogram")
                        for key, hist in sorted(series.items()):
                            lines.extend(hist.lines(name, key))
                    continue
                values = self._values.get(name, {})
                if values:
                    lines.append(f"# TYPE {name} {kind}")
                    lines.extend(f"{name}{_labels_text(key)} {_number(v)}" for key, v in sorted(values.items()))
        return "".join(line + "\n" for line in lines)

    # -- the server -----------------------------------------------------------
    def start(self, attempts: int = 5) -> "MetricsExporter":
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.exposition().encode()
                with exporter._lock:
                    exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        for attempt in range(attempts):
            port = free_port()
            try:
                self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
                break
            except OSError as e:   # taken between free_port() and the bind
                if e.errno != errno.EADDRINUSE or attempt + 1 == attempts:
                    raise
        assert self._server is not None
        self._server.daemon_threads = True
        self.port = port
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"metrics-{port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> "MetricsExporter":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
