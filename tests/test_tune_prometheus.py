"""The Prometheus client (intentc/tune/prometheus.py) against a server answering like Prometheus' API.

A unit test of our parsing and error handling only; tests/test_tune_kube.py
queries a real Prometheus."""

from __future__ import annotations

import math
import socket
import time

import pytest

from intentc.tune.observe import look_back, observe
from intentc.tune.prometheus import Prometheus, PrometheusError, Sample
from intentc.tune.queries import Queries, Subject
from intentc.tune.recommend import Observation
from tests.fake_prometheus import FakePrometheus, Refuse, vector


def test_a_vector_a_scalar_and_the_query_sent() -> None:
    def answer(query: str, at: float | None) -> object:
        if query == "scalar(1)":
            return {"status": "success", "data": {"resultType": "scalar", "result": [at, "1.5"]}}
        return vector(({"pod": "a"}, "0.25"), ({"pod": "b"}, "NaN"), ({"pod": "c"}, "+Inf"), at=at or 0.0)

    with FakePrometheus(answer) as fake:
        prom = Prometheus(fake.url + "/", timeout=5)
        samples = prom.query('rate(x{pod=~"a.*"}[5m])', at=1700000000.5)
        assert samples[0] == Sample({"pod": "a"}, 0.25)
        assert math.isnan(samples[1].value) and samples[2].value == math.inf
        assert fake.queries[-1] == ('rate(x{pod=~"a.*"}[5m])', 1700000000.5)
        assert prom.query("scalar(1)") == (Sample({}, 1.5),)
        assert fake.queries[-1] == ("scalar(1)", None)
        assert prom.value("whatever") == 0.25            # the largest finite sample
    with FakePrometheus(lambda q, t: None) as fake:
        assert Prometheus(fake.url).value("absent") is None


def test_errors_say_which_query_and_why() -> None:
    def answer(query: str, at: float | None) -> object:
        if query == "bad(":
            raise Refuse(400, {"status": "error", "errorType": "bad_data",
                               "error": "1:5: parse error: unclosed left parenthesis"})
        if query == "matrix":
            return {"status": "success", "data": {"resultType": "matrix", "result": []}}
        if query == "garbage":
            return b"<html>proxy error</html>"
        if query == "word":
            return vector(({}, "lots"))
        if query == "gateway":
            raise Refuse(502, b"Bad Gateway")
        return None

    with FakePrometheus(answer) as fake:
        prom = Prometheus(fake.url)
        cases = {"bad(": "HTTP 400: query 'bad(': bad_data: 1:5: parse error: unclosed left parenthesis",
                 "matrix": "an instant query's answer is a vector or a scalar, not 'matrix'",
                 "garbage": "the answer is not JSON",
                 "word": "a sample's value is not a number: 'lots'",
                 "gateway": "HTTP 502"}
        for query, said in cases.items():
            with pytest.raises(PrometheusError) as e:
                prom.query(query)
            assert said in e.value.message, e.value.message
        with pytest.raises(PrometheusError, match="HTTP 404"):
            Prometheus(fake.url + "/prefix").query("up")
    with pytest.raises(PrometheusError, match="not an http"):
        Prometheus("prometheus:9090")


def test_unreachable_and_slow_servers_end_within_the_timeout() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PrometheusError, match="cannot be queried"):
        Prometheus(f"http://127.0.0.1:{port}", timeout=2).query("up")

    def slow(query: str, at: float | None) -> object:
        time.sleep(3)
        return None

    with FakePrometheus(slow) as fake:
        # the client's own timeout ends it (its message), not the server's late answer
        with pytest.raises(PrometheusError, match="cannot be queried: timed out"):
            Prometheus(fake.url, timeout=0.5).query("up")


def test_an_observation_sends_the_three_templated_queries_at_one_instant() -> None:
    figures = {"lat": 0.3, "mem": 0.5, "oom": None}

    def answer(query: str, at: float | None) -> object:
        return figures[query.split("{")[0]]

    queries = Queries('lat{ns="$namespace"}', 'mem{pod=~"$pods"}', 'oom{intent="$intent",tenant="$tenant"}')
    with FakePrometheus(answer) as fake:
        prom = Prometheus(fake.url)
        got = observe(prom, queries, Subject("team-a", "chat"), 1000.0)
        assert got == Observation(1000.0, 0.3, 0.5, None)
        assert fake.queries == [('lat{ns="team-a"}', 1000.0), ('mem{pod=~"chat-[a-z0-9]+-[a-z0-9]+"}', 1000.0),
                                ('oom{intent="chat",tenant="team-a"}', 1000.0)]
        window = look_back(prom, queries, Subject("team-a", "chat"), 1000.0, 3, 60.0)
        assert [o.at for o in window] == [880.0, 940.0, 1000.0]
