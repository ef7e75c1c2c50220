"""A small client of Prometheus' HTTP API: instant queries (`GET /api/v1/query`), stdlib only.

Only what the tuner needs: one PromQL expression at one instant, its
result as numbers.  Every failure — the server unreachable or slow past
the timeout, an HTTP error, a body that is not Prometheus' JSON, a query
Prometheus refuses (`"status": "error"`) — is one `PrometheusError` whose
message says which query and why, so the daemon can count and log it and
`intentc tune` can exit 2 with it, instead of a traceback.
"""

from __future__ import annotations

import json
import math
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_TIMEOUT = 10.0


class PrometheusError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float                     # NaN and ±Inf as Prometheus wrote them


def _value(pair: Any, query: str) -> float:
    if not (isinstance(pair, list) and len(pair) == 2):
        raise PrometheusError(f"query {query!r}: a sample is not [time, value]: {pair!r}")
    try:
        return float(pair[1])       # Prometheus sends values as strings: "0.25", "NaN", "+Inf"
    except (TypeError, ValueError):
        raise PrometheusError(f"query {query!r}: a sample's value is not a number: {pair[1]!r}") from None


def parse_response(body: bytes, query: str) -> tuple[Sample, ...]:
    """The samples of an instant query's answer (vector or scalar); a matrix or string is refused."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusError(f"query {query!r}: the answer is not JSON: {body[:200]!r}") from None
    if not isinstance(doc, dict):
        raise PrometheusError(f"query {query!r}: the answer is not a JSON object")
    if doc.get("status") != "success":
        raise PrometheusError(f"query {query!r}: {doc.get('errorType', 'error')}: {doc.get('error', doc)}")
    data = doc.get("data") or {}
    kind, result = data.get("resultType"), data.get("result")
    if kind == "vector" and isinstance(result, list):
        return tuple(Sample({str(k): str(v) for k, v in (r.get("metric") or {}).items()}, _value(r.get("value"), query))
                     for r in result)
    if kind == "scalar":
        return (Sample({}, _value(result, query)),)
    raise PrometheusError(f"query {query!r}: an instant query's answer is a vector or a scalar, not {kind!r}")


class Prometheus:
    def __init__(self, base_url: str, timeout: float = DEFAULT_TIMEOUT,
                 headers: Mapping[str, str] | None = None) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise PrometheusError(f"{base_url!r} is not an http(s) URL of a Prometheus server")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.headers = dict(headers or {})

    def query(self, promql: str, at: float | None = None) -> tuple[Sample, ...]:
        """`promql` evaluated at Unix time `at` (None: now, as the server sees it)."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        params["timeout"] = f"{self.timeout:g}s"
        url = f"{self.base_url}/api/v1/query?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json", **self.headers})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            try:                                         # 400/422/503 carry Prometheus' own error document
                parse_response(e.read(), promql)
                why = f"query {promql!r}: {e.reason}"
            except PrometheusError as inner:
                why = inner.message
            raise PrometheusError(f"{self.base_url}: HTTP {e.code}: {why}") from None
        except (urllib.error.URLError, socket.timeout, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise PrometheusError(f"{self.base_url} cannot be queried: {reason}") from None
        return parse_response(body, promql)

    def value(self, promql: str, at: float | None = None) -> float | None:
        """One number: the largest finite sample (a query may answer per pod), None when none."""
        finite = [s.value for s in self.query(promql, at) if math.isfinite(s.value)]
        return max(finite) if finite else None
