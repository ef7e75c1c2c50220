"""One observation of a serving intent: its three queries sent to Prometheus at one instant.

The acting half of the tuner, kept apart from `recommend` (pure) so the rule
can be tested on scripted observations and the client on a fake server.
A query that answers nothing (no pods yet, no requests: vLLM's histogram
quantile is NaN) gives None for that figure, which the rule reads as "not
known", never as zero.
"""

from __future__ import annotations

from typing import Sequence

from intentc.tune.prometheus import Prometheus
from intentc.tune.queries import Queries, Subject, render
from intentc.tune.recommend import Observation


def observe(prometheus: Prometheus, queries: Queries, subject: Subject, at: float) -> Observation:
    """The intent's figures at Unix time `at`; raises `PrometheusError`."""
    return Observation(at, prometheus.value(render(queries.latency, subject), at),
                       prometheus.value(render(queries.memory, subject), at),
                       prometheus.value(render(queries.ooms, subject), at))


def look_back(prometheus: Prometheus, queries: Queries, subject: Subject, now: float, count: int,
              interval: float) -> Sequence[Observation]:
    """`count` observations ending at `now`, `interval` seconds apart, oldest first: what a
    daemon sampling every `interval` would have seen (how `intentc tune --prometheus-url`
    gets a window without having watched)."""
    return [observe(prometheus, queries, subject, now - k * interval) for k in range(count - 1, -1, -1)]
