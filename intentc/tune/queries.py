"""What the tuner asks Prometheus, and the numbers of its rule: the `tune` configuration.

The defaults read the exporters most GPU serving clusters run:

* P99 latency: vLLM's `vllm:e2e_request_latency_seconds` histogram;
* GPU memory used: NVIDIA DCGM exporter's `DCGM_FI_DEV_FB_USED` and
  `DCGM_FI_DEV_FB_FREE` (MiB), the fullest GPU of the intent's pods;
* OOM kills: kube-state-metrics' restarts of containers whose last
  termination was `OOMKilled`.

Each query is a template: `$namespace` (the tenant's namespace, where the
intent's pods run), `$tenant`, `$intent` and `$pods` (a regular expression
of the intent's Deployment pods, `<intent>-<replicaset hash>-<suffix>`) are
replaced before it is sent.  Scrape configurations that attach the pods'
labels `intentc.dev/intent` / `intentc.dev/tenant` can select on those
instead, by writing their own queries in the file:

    tune:
      queries:
        latency: histogram_quantile(0.99, sum by (le) (rate(my_latency_bucket{app="$intent"}[5m])))
      latencyTargets: {P0: 0.2, P1: 0.5}      # seconds, per SLA class
      goodObservations: 3                       # in a row, to grow
      headroom: 0.75                            # GPU memory share, at most, to grow
      minBatch: 1
      maxBatch: 2048
      sampleInterval: 60                        # seconds between observations

Pure: the file's text in, a `TuneConfig` or the reasons it is wrong out.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from intentc.ir import SlaClass
from intentc.tune.recommend import MEMORY_HEADROOM, Bounds, Rule

_SEL = 'namespace="$namespace", pod=~"$pods"'
DEFAULT_LATENCY = ("histogram_quantile(0.99, sum by (le) "
                   f"(rate(vllm:e2e_request_latency_seconds_bucket{{{_SEL}}}[5m])))")
DEFAULT_MEMORY = (f"max(DCGM_FI_DEV_FB_USED{{{_SEL}}} / "
                  f"(DCGM_FI_DEV_FB_USED{{{_SEL}}} + DCGM_FI_DEV_FB_FREE{{{_SEL}}}))")
DEFAULT_OOMS = (f"sum(increase(kube_pod_container_status_restarts_total{{{_SEL}}}[5m]) "
                f"and on (namespace, pod, container) "
                f"kube_pod_container_status_last_terminated_reason{{{_SEL}, reason=\"OOMKilled\"}} == 1)")
# Serving SLA classes' P99 targets (seconds): interactive for P0/P1, batch-like for P2/P3.
DEFAULT_TARGETS: Mapping[str, float] = {"P0": 0.5, "P1": 1.0, "P2": 5.0, "P3": 30.0}
DEFAULT_SLA = "P2"                  # the class of an intent that declares none (plan/model.Placement)
PLACEHOLDERS = ("namespace", "tenant", "intent", "pods")


class ConfigError(Exception):
    """The tune configuration is wrong; the message says where."""


@dataclass(frozen=True)
class Queries:
    latency: str = DEFAULT_LATENCY
    memory: str = DEFAULT_MEMORY
    ooms: str = DEFAULT_OOMS

    def items(self) -> tuple[tuple[str, str], ...]:
        return (("latency", self.latency), ("memory", self.memory), ("ooms", self.ooms))


@dataclass(frozen=True)
class Subject:
    """The pods of one serving intent, as the templates see them."""

    tenant: str
    intent: str

    def values(self) -> dict[str, str]:
        return {"namespace": self.tenant, "tenant": self.tenant, "intent": self.intent,
                "pods": re.escape(self.intent) + "-[a-z0-9]+-[a-z0-9]+"}


def render(template: str, subject: Subject) -> str:
    """The query for `subject`; a `$` followed by an unknown name is an error, not sent."""
    try:
        return string.Template(template).substitute(subject.values())
    except (KeyError, ValueError) as e:
        raise ConfigError(f"query {template!r}: unknown placeholder {e} (known: "
                          f"{', '.join('$' + p for p in PLACEHOLDERS)})") from None


@dataclass(frozen=True)
class TuneConfig:
    queries: Queries = Queries()
    targets: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_TARGETS))
    good_observations: int = 3
    headroom: float = MEMORY_HEADROOM
    bounds: Bounds = Bounds()
    sample_interval: float = 60.0        # seconds between two observations (daemon pass; `tune` looking back)
    window: int = 30                     # observations kept per intent and batch

    def rule(self, sla: str | None) -> Rule:
        target = self.targets.get(sla or DEFAULT_SLA, self.targets.get(DEFAULT_SLA, DEFAULT_TARGETS[DEFAULT_SLA]))
        return Rule(target, self.good_observations, self.headroom)


_KEYS = ("queries", "latencyTargets", "goodObservations", "headroom", "minBatch", "maxBatch", "sampleInterval",
         "window")


def _number(doc: Mapping[str, Any], key: str, default: float, low: float, high: float = math.inf,
            whole: bool = False) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)):
        raise ConfigError(f"tune.{key}: {'a whole number' if whole else 'a number'} is needed, not {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"tune.{key}: {value!r} is outside {low:g}..{high:g}")
    return float(value)


def from_document(doc: Any) -> TuneConfig:
    """The configuration in a parsed file: its `tune` section (or the whole document)."""
    if isinstance(doc, Mapping) and "tune" in doc:
        doc = doc["tune"]
    if doc is None:
        return TuneConfig()
    if not isinstance(doc, Mapping):
        raise ConfigError("the tune configuration must be a mapping")
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise ConfigError(f"tune: unknown key(s) {', '.join(map(str, unknown))} (known: {', '.join(_KEYS)})")
    config = TuneConfig()
    raw_queries = doc.get("queries") or {}
    if not isinstance(raw_queries, Mapping) or set(raw_queries) - {"latency", "memory", "ooms"}:
        raise ConfigError("tune.queries: a mapping of latency, memory and ooms to PromQL templates")
    queries = replace(config.queries, **{str(k): str(v) for k, v in raw_queries.items()})
    probe = Subject("t", "i")
    for _, template in queries.items():
        render(template, probe)             # a wrong placeholder is said now, not on every pass
    targets = dict(DEFAULT_TARGETS)
    raw_targets = doc.get("latencyTargets") or {}
    if not isinstance(raw_targets, Mapping):
        raise ConfigError("tune.latencyTargets: a mapping of SLA class to seconds")
    for sla, seconds in raw_targets.items():
        if str(sla) not in {c.value for c in SlaClass}:
            raise ConfigError(f"tune.latencyTargets: unknown SLA class {sla!r} (P0..P3)")
        targets[str(sla)] = _number(raw_targets, sla, 0.0, 1e-6)
    low = int(_number(doc, "minBatch", config.bounds.low, 1, whole=True))
    high = int(_number(doc, "maxBatch", config.bounds.high, 1, whole=True))
    if low > high:
        raise ConfigError(f"tune.minBatch {low} is above tune.maxBatch {high}")
    return TuneConfig(queries, targets, int(_number(doc, "goodObservations", 3, 1, whole=True)),
                      _number(doc, "headroom", MEMORY_HEADROOM, 0.0, 1.0), Bounds(low, high),
                      _number(doc, "sampleInterval", config.sample_interval, 1e-3),
                      int(_number(doc, "window", config.window, 1, whole=True)))


def load_config(text: str) -> TuneConfig:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"not YAML: {e}") from None
    return from_document(doc)
