"""The tuning rule (intentc/tune/recommend.py, docs/sizing.md): a scripted scenario and its edges.

The observations are what a daemon sampling once a minute would have seen;
each step's recommendation is asserted on the whole window so far, as
`TunePass` computes it."""

from __future__ import annotations

import pytest

from intentc.tune.queries import ConfigError, Subject, TuneConfig, from_document, load_config, render
from intentc.tune.recommend import Bounds, Direction, Observation, Rule, grown, recommend, shrunk

RULE = Rule(target_s=0.5, good_needed=3)
WIDE = Bounds(1, 2048)


def ok(at: float, p99: float = 0.2, mem: float = 0.5) -> Observation:
    return Observation(at, p99, mem, 0.0)


def test_headroom_grows_by_a_quarter_only_after_three_good_observations_in_a_row() -> None:
    window = [ok(0)]
    steps = []
    for t in range(1, 4):
        rec = recommend(window, 32, WIDE, RULE)
        steps.append((rec.batch, rec.direction))
        window.append(ok(t))
    assert steps == [(32, Direction.HOLD), (32, Direction.HOLD), (40, Direction.GROW)]
    rec = recommend(window, 32, WIDE, RULE)
    assert (rec.batch, rec.current, rec.direction) == (40, 32, Direction.GROW)
    assert "P99 200 ms under the target 500 ms" in rec.reason and "grow ×1.25" in rec.reason


def test_a_bad_observation_restarts_the_run_of_good_ones() -> None:
    window = [ok(0), ok(1), Observation(2, 0.2, 0.9, 0.0), ok(3), ok(4)]
    rec = recommend(window, 32, WIDE, RULE)
    assert rec.direction is Direction.HOLD and rec.batch == 32
    assert rec.reason == "headroom in 2 of the 3 observations in a row needed to grow"
    assert recommend([*window, ok(5)], 32, WIDE, RULE).batch == 40


def test_latency_rising_past_the_target_halves_at_once() -> None:
    rising = [ok(0, 0.2), ok(1, 0.3), ok(2, 0.45)]
    rec = recommend(rising, 32, WIDE, RULE)
    assert rec.direction is Direction.GROW            # still under: three good ones in a row
    rec = recommend([*rising, ok(3, 0.62)], 32, WIDE, RULE)
    assert (rec.batch, rec.direction) == (16, Direction.SHRINK)
    assert rec.reason == "P99 620 ms over the target 500 ms: halve"
    # the breach stays in the window: quiet minutes after it do not grow the batch that breached
    rec = recommend([*rising, ok(3, 0.62), ok(4), ok(5), ok(6)], 32, WIDE, RULE)
    assert (rec.batch, rec.direction) == (16, Direction.SHRINK)


def test_an_oom_halves_and_outranks_a_breach() -> None:
    window = [ok(0), Observation(1, 0.9, 0.7, 0.0), Observation(2, 0.3, 0.99, 1.0)]
    rec = recommend(window, 33, WIDE, RULE)
    assert (rec.batch, rec.direction) == (16, Direction.SHRINK)
    assert rec.reason == "OOM kill observed (1): halve"


def test_memory_without_headroom_or_unknown_figures_hold() -> None:
    full = [Observation(t, 0.1, 0.8, 0.0) for t in range(5)]
    assert recommend(full, 8, WIDE, RULE).reason == "GPU memory 80% used, over 75%: no headroom to grow"
    no_latency = [Observation(t, None, 0.2, 0.0) for t in range(5)]
    assert recommend(no_latency, 8, WIDE, RULE).reason.startswith("no P99 latency")
    no_memory = [Observation(t, 0.1, None, None) for t in range(5)]
    assert recommend(no_memory, 8, WIDE, RULE).reason.startswith("no GPU memory figure")
    assert recommend([], 8, WIDE, RULE).reason == "no observations yet"
    at_target = [Observation(t, 0.5, 0.2, 0.0) for t in range(5)]      # "under" the target: not at it
    assert recommend(at_target, 8, WIDE, RULE).direction is Direction.HOLD


def test_bounds_are_never_crossed_and_batches_stay_whole() -> None:
    good = [ok(t) for t in range(3)]
    rec = recommend(good, 60, Bounds(1, 64), RULE)
    assert (rec.batch, rec.direction) == (64, Direction.GROW) and "held at the upper bound 64" in rec.reason
    rec = recommend(good, 64, Bounds(1, 64), RULE)
    assert (rec.batch, rec.direction) == (64, Direction.HOLD)
    breach = [ok(0, 0.9)]
    rec = recommend(breach, 6, Bounds(4, 64), RULE)
    assert (rec.batch, rec.direction) == (4, Direction.SHRINK) and "lower bound 4" in rec.reason
    rec = recommend(breach, 1, Bounds(1, 64), RULE)
    assert (rec.batch, rec.direction) == (1, Direction.HOLD)
    assert [grown(b) for b in (1, 2, 3, 4, 8, 32, 33, 1000)] == [2, 3, 4, 5, 10, 40, 41, 1250]
    assert [shrunk(b) for b in (1, 2, 3, 33)] == [1, 1, 1, 16]


def test_the_rule_is_deterministic() -> None:
    window = [ok(t, 0.1 * t) for t in range(8)]
    assert len({recommend(window, 17, WIDE, RULE) for _ in range(5)}) == 1


def test_the_configuration_file_and_its_mistakes() -> None:
    config = load_config("tune:\n  latencyTargets: {P0: 0.2}\n  goodObservations: 5\n  maxBatch: 256\n"
                         "  queries:\n    latency: 'max(lat{ns=\"$namespace\", app=\"$intent\"})'\n")
    assert config.rule("P0") == Rule(0.2, 5, 0.75)
    assert config.rule(None).target_s == 5.0                    # no SLA: P2's target
    assert config.bounds == Bounds(1, 256)
    assert render(config.queries.latency, Subject("team-a", "chat")) == 'max(lat{ns="team-a", app="chat"})'
    default = render(TuneConfig().queries.memory, Subject("team-a", "chat"))
    assert 'DCGM_FI_DEV_FB_USED{namespace="team-a", pod=~"chat-[a-z0-9]+-[a-z0-9]+"}' in default
    for text, said in (("tune: {latencyTarget: {}}", "unknown key(s) latencyTarget"),
                       ("tune: {latencyTargets: {P5: 1}}", "unknown SLA class 'P5'"),
                       ("tune: {goodObservations: 0}", "outside 1..inf"),
                       ("tune: {minBatch: 9, maxBatch: 8}", "minBatch 9 is above tune.maxBatch 8"),
                       ("tune: {queries: {latency: 'up{pod=\"$pod\"}'}}", "unknown placeholder 'pod'"),
                       ("tune: [1]", "must be a mapping")):
        with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            load_config(text)
    assert from_document(None) == TuneConfig()
