"""Pass: the domain rules (E04xx in docs/diagnostics.md), each a small check with its own code.

The front ends keep values as written so this pass can say *which* value is
wrong and suggest the right one.  Checks are independent of each other so
that one bad value never hides another.
"""

from __future__ import annotations

import enum
import re
from typing import Iterator

from intentc.diagnostics import EXCERPT_CHARS, Diagnostic, Span, error, excerpt, warning
from intentc.ir.duration import parse_duration
from intentc.ir import (NO_FIELD_SPANS, ActionKind, DriftPolicy, Fallback, FieldSpans, Intent, KvCache, Located, Placed,
                        ModelSettings, Precision, Program, Scope, SlaClass, Tenant, ThroughputMode, Tier,
                        TriggerKind, Where, span_of, vocabulary)
from intentc.diagnostics.suggest import did_you_mean, one_of
from intentc.ir.quantity import parse_parameters, parse_quantity
from intentc.ir.tolerance import DEFAULT_SLA, allowed_precisions

BATCH_MAX = 2048
SEQ_LEN_MAX = 32768
RECYCLE_SEQ_LEN_MAX = 4096
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_MAX = 63

Check = Iterator[Diagnostic]


def _at(spans: FieldSpans, key: str, default: Span | Located | Placed) -> Span:
    return span_of((spans, key, default))


# The checks of every value take where it was written as a `Where` and build the
# `Span` only when they report: some twenty values per intent are looked at,
# and building each one's span up front was a tenth of the local passes.

def _vocab(code: str, what: str, value: str | None, enum_cls: type[enum.Enum], where: Where) -> Check:
    if value is not None and value not in vocabulary(enum_cls):
        allowed = vocabulary(enum_cls)
        yield error(code, f'unknown {what} "{excerpt(value)}"{did_you_mean(value, allowed)}',
                    span_of(where), hint=f"use {one_of(allowed)}")


def dns_label(kind: str, name: str, where: Where) -> Check:
    if len(name) > DNS1123_MAX or not DNS1123_LABEL.match(name):
        fixed = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:DNS1123_MAX] or "name"
        example = f', e.g. "{fixed}"' if len(fixed) <= EXCERPT_CHARS else ""   # never a long echo
        yield error("E0410", f'{kind} name "{excerpt(name)}" is not a DNS-1123 label', span_of(where),
                    hint=f"lower-case letters, digits and '-', at most {DNS1123_MAX} characters, "
                         f"starting and ending with a letter or digit{example}")


def _quantity(what: str, value: str | None, where: Where, positive: bool = False) -> Check:
    if value is None:
        return
    q = parse_quantity(value)
    if q is None:
        yield error("E0411", f'{what} "{excerpt(value)}" is not a valid quantity', span_of(where),
                    hint='write a Kubernetes quantity such as "500m", "16", "64Gi"')
    elif positive and q <= 0:
        yield error("E0413", f"{what} must be greater than zero, got {excerpt(value)}", span_of(where))


def check_tenant(t: Tenant) -> Check:
    yield from dns_label("tenant", t.name, (t.spans, "name", t))
    yield from _vocab("E0408", "tenant tier", t.tier, Tier, (t.spans, "tier", t))
    if t.weight is not None and t.weight <= 0:
        yield error("E0409", f"tenant weight must be a positive integer, got {t.weight}",
                    _at(t.spans, "weight", t), hint="tier defaults: gold 4, silver 2, bronze 1")
    if t.quota_gpus is not None and t.quota_gpus <= 0:
        yield error("E0413", f"tenant GPU quota must be greater than zero, got {t.quota_gpus}",
                    _at(t.spans, "quota_gpus", t), hint="omit the quota for no limit")
    yield from _quantity("CPU quota", t.quota_cpu, (t.spans, "quota_cpu", t), positive=True)
    yield from _quantity("memory quota", t.quota_memory, (t.spans, "quota_memory", t),
                         positive=True)
    yield from _vocab("E0418", "drift policy", t.drift, DriftPolicy, (t.spans, "drift", t))


def check_settings(s: ModelSettings, fallback: Span | Located) -> Check:
    base = s if s.has_span else fallback
    at = lambda key: _at(s.spans, key, base)  # noqa: E731
    if s.batch is not None:
        if not s.batch.auto and s.batch.size is not None and not 1 <= s.batch.size <= BATCH_MAX:
            yield error("E0401", f"batch must be between 1 and {BATCH_MAX}, got {s.batch.size}",
                        at("batch"), hint="or write `batch: auto` to let the server choose")
        if s.batch.auto and s.batch.max is not None and not 1 <= s.batch.max <= BATCH_MAX:
            yield error("E0402", f"auto batch maximum must be between 1 and {BATCH_MAX}, "
                                 f"got {s.batch.max}", at("batch"))
    if s.seq_len is not None and not 1 <= s.seq_len <= SEQ_LEN_MAX:
        yield error("E0403", f"seq_len must be between 1 and {SEQ_LEN_MAX}, got {s.seq_len}",
                    at("seq_len"))
    yield from _vocab("E0404", "kv_cache policy", s.kv_cache, KvCache, (s.spans, "kv_cache", base))
    if (s.kv_cache in (KvCache.RECYCLE.value, KvCache.EVICT.value) and s.seq_len is not None
            and RECYCLE_SEQ_LEN_MAX < s.seq_len <= SEQ_LEN_MAX):
        yield error("E0405", f'kv_cache "{s.kv_cache}" is not allowed with seq_len {s.seq_len}: '
                             f"sequences longer than {RECYCLE_SEQ_LEN_MAX} tokens use \"retain\"",
                    at("kv_cache"), hint="write `kv_cache: retain`, or lower seq_len to 4096")
    yield from _vocab("E0406", "precision", s.precision, Precision, (s.spans, "precision", base))
    yield from _quantity("model_memory", s.model_memory, (s.spans, "model_memory", base), positive=True)
    if s.parameters is not None and not parse_parameters(s.parameters):
        yield error("E1001", f'parameters "{s.parameters}" is not a parameter count', at("parameters"),
                    hint="a positive number with an optional K, M, B or T suffix, e.g. 8B or 350M")
    if s.kv_reuse is not None and not 0 <= s.kv_reuse <= 1:
        yield error("E1002", f"kv_reuse must be between 0 and 1, got {s.kv_reuse}", at("kv_reuse"),
                    hint="the expected share of KV-cache entries reused between requests, e.g. 0.8")
    yield from _vocab("E1003", "throughput mode", s.throughput_mode, ThroughputMode,
                      (s.spans, "throughput_mode", base))


def check_intent(i: Intent) -> Check:
    yield from dns_label("intent", i.name, (i.spans, "name", i))
    trig = i.trigger
    yield from _vocab("E0420", "trigger", trig.kind, TriggerKind, (NO_FIELD_SPANS, "", trig))
    # the schedule itself is checked against Kubernetes' parser in passes.kube_limits

    act = i.action
    yield from _vocab("E0420", "action kind", act.kind, ActionKind, (act.spans, "kind", act))
    if act.kind != ActionKind.SERVE.value:
        for key, val in (("replicas", act.replicas), ("port", act.port)):
            if val is not None:
                yield error("E0419", f"`{key}` applies to serve actions only, not {act.kind}",
                            _at(act.spans, key, act), hint="use `action: serve ...` for online serving")
    if act.replicas is not None and act.replicas < 1:
        yield error("E0419", f"replicas must be at least 1, got {act.replicas}",
                    _at(act.spans, "replicas", act))
    if act.port is not None and not 1 <= act.port <= 65535:
        yield error("E0419", f"port must be between 1 and 65535, got {act.port}",
                    _at(act.spans, "port", act))
    if act.settings is not None:
        if act.kind == ActionKind.BATCH.value:
            yield warning("W0402", "model settings are ignored by batch actions",
                          act.settings.span if act.settings.has_span else act.span,
                          hint="use `inference`, `serve` or `training` for model workloads")
        yield from check_settings(act.settings, act)
        if act.settings.throughput_mode is not None and act.kind != ActionKind.SERVE.value:
            # it sets a server's batch growth and replica autoscaling (render/autoscale.py); a Job
            # runs at its planned batch on its planned pods, so accepting it would change nothing
            yield error("E0419", f"`throughput_mode` applies to serve actions only, not {act.kind}",
                        _at(act.settings.spans, "throughput_mode", act.settings if act.settings.has_span else act),
                        hint="a Job runs at its planned batch and pods; remove it, or serve the model "
                             "(docs/sizing.md)")

    yield from _vocab("E0418", "drift policy", i.context.drift,
                      DriftPolicy, (i.context.spans, "drift", i.context))

    c = i.constraints
    yield from _quantity("cpu", c.cpu, (c.spans, "cpu", c), positive=True)
    yield from _quantity("memory", c.memory, (c.spans, "memory", c), positive=True)
    yield from _vocab("E0407", "SLA class", c.sla, SlaClass, (c.spans, "sla", c))
    if c.tolerance is not None and not 0 < c.tolerance <= 1:
        yield error("E0414", f"tolerance must be in (0, 1], got {c.tolerance}",
                    _at(c.spans, "tolerance", c), hint="e.g. 0.95 tolerates 5% failed work")
    if c.duration is not None and parse_duration(c.duration) is None:
        yield error("E0415", f'"{excerpt(c.duration)}" is not a duration', _at(c.spans, "duration", c),
                    hint='numbers with units d, h, m, s in that order, each once, e.g. "45m" or "1h30m"')
    precision = act.settings.precision if act.settings is not None else None
    if precision in vocabulary(Precision) and c.tolerance is not None and 0 < c.tolerance <= 1:
        allowed = allowed_precisions(c.sla, c.tolerance)
        if precision not in allowed:
            assert act.settings is not None
            yield error("E1011", f"precision {precision} is not allowed for sla {c.sla or DEFAULT_SLA} with "
                                 f"tolerance {c.tolerance}: it allows {', '.join(allowed)}",
                        _at(act.settings.spans, "precision", act.settings),
                        hint="lower the tolerance (it is the share of the reference result accepted, "
                             "0.9 allows 10 % less) or use a wider precision (docs/sizing.md)")
    if c.slack is not None and not 0 <= c.slack <= 10:
        yield error("E1004", f"slack must be between 0 and 10, got {c.slack}", _at(c.spans, "slack", c),
                    hint="the Job may run duration x (1 + slack) before it is stopped; e.g. 0.5")
    if c.retries is not None and not 0 <= c.retries <= 100:
        yield error("E1005", f"retries must be between 0 and 100, got {c.retries}",
                    _at(c.spans, "retries", c))
    yield from _vocab("E1006", "fallback", c.fallback, Fallback, (c.spans, "fallback", c))
    if act.kind == ActionKind.SERVE.value:
        for key, given in (("retries", c.retries is not None), ("fallback", c.fallback is not None),
                           ("slack", c.slack is not None)):
            if given:
                yield error("E1007", f"`{key}` applies to run-to-completion actions (Jobs), not serve",
                            _at(c.spans, key, c), hint="a Deployment restarts its pods itself")
    g = c.gpus
    if g is not None:
        if g.count <= 0:
            yield error("E0412", f"GPU count must be greater than zero, got {g.count}",
                        _at(g.spans, "count", g), hint="omit `gpus` for a CPU-only intent")
        yield from _quantity("GPU memory", g.memory, (g.spans, "memory", g), positive=True)
        yield from _vocab("E0416", "placement scope", g.within, Scope, (g.spans, "within", g))
        yield from _vocab("E0416", "placement scope", g.prefer, Scope, (g.spans, "prefer", g))


def check_domain(program: Program) -> tuple[Program, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    for t in program.tenants:
        diags.extend(check_tenant(t))
    for i in program.intents:
        diags.extend(check_intent(i))
    for d in program.datasets:
        diags.extend(dns_label("dataset", d.name, (d.spans, "name", d)))
    declared = {d.name for d in program.datasets}
    for i in program.intents:
        for ref in i.produces:
            if ref.name not in declared:   # a declared one was checked above
                diags.extend(dns_label("dataset", ref.name, (NO_FIELD_SPANS, "", ref)))
    return program, diags
