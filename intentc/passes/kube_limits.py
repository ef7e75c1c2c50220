"""Pass: values Kubernetes would refuse, or silently change, at apply time.

`check` is the gate in CI, so a value that passes it must also pass the API
server unchanged.  This pass holds intentc's values to Kubernetes' own
limits, each at the position of the value:

* int32 fields (E0421): a serve's `replicas` (Deployment `.spec.replicas`)
  and a GPU count (Job `parallelism`/`completions` count pods, and each pod
  asks for `nvidia.com/gpu`);
* int64 fields (E0421): a tenant's GPU quota (a ResourceQuota quantity);
* quantities (E0422): "no quantity may represent a number greater than
  2^63-1, nor may it have more than 3 decimal places" (k8s.io/apimachinery
  resource.Quantity) — larger ones are capped and finer ones rounded up,
  without a word, so both are errors here;
* cron schedules (E0417): what a CronJob's `spec.schedule` accepts
  (`intentc.ir.cron`).

The lower bounds (zero, negative, port 65535) are the domain pass's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Iterator

from intentc.diagnostics import Diagnostic, error, excerpt
from intentc.ir import Intent, Program, Tenant, TriggerKind, Where, span_of
from intentc.ir.cron import cron_problem
from intentc.ir.quantity import parse_quantity

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_MILLI = Decimal("0.001")

Check = Iterator[Diagnostic]


def _integer(what: str, value: int | None, bits: int, where: Where) -> Check:
    limit = INT32_MAX if bits == 32 else INT64_MAX
    if value is not None and value > limit:
        yield error("E0421", f"{what} {excerpt(value, 24)} is larger than Kubernetes stores "
                             f"(int{bits}, at most {limit})", span_of(where))


def _quantity(what: str, text: str | None, where: Where) -> Check:
    value = parse_quantity(text) if text is not None else None
    if value is None:
        return                                 # not a quantity: E0411 of the domain pass
    if value > INT64_MAX:
        yield error("E0422", f'{what} "{excerpt(text)}" is larger than a Kubernetes quantity can be '
                             f"(2^63-1); the API server would cap it", span_of(where))
    elif value % _MILLI:
        yield error("E0422", f'{what} "{excerpt(text)}" has more than 3 decimal places; '
                             f"Kubernetes would round it up to {value.quantize(_MILLI, 'ROUND_CEILING')}",
                    span_of(where), hint='write whole milli-units at the finest, e.g. "1m" or "0.001"')


def check_tenant_limits(t: Tenant) -> Check:
    yield from _integer("tenant GPU quota", t.quota_gpus, 64, (t.spans, "quota_gpus", t))
    yield from _quantity("CPU quota", t.quota_cpu, (t.spans, "quota_cpu", t))
    yield from _quantity("memory quota", t.quota_memory, (t.spans, "quota_memory", t))


def check_intent_limits(i: Intent) -> Check:
    if i.trigger.kind == TriggerKind.SCHEDULE.value and i.trigger.schedule is not None:
        problem = cron_problem(i.trigger.schedule)
        if problem is not None:
            yield error("E0417", f'"{excerpt(i.trigger.schedule)}" is not a cron schedule Kubernetes '
                                 f"accepts: {problem}", i.trigger.span,
                        hint='five fields: minute hour day-of-month month day-of-week, e.g. "0 2 * * *", '
                             "or a macro such as @daily")
    act = i.action
    yield from _integer("replicas", act.replicas, 32, (act.spans, "replicas", act))
    c = i.constraints
    yield from _quantity("cpu", c.cpu, (c.spans, "cpu", c))
    yield from _quantity("memory", c.memory, (c.spans, "memory", c))
    if c.gpus is not None:
        g = c.gpus
        yield from _integer("GPU count", g.count, 32, (g.spans, "count", g))
        yield from _quantity("GPU memory", g.memory, (g.spans, "memory", g))


def check_kube_limits(program: Program) -> tuple[Program, list[Diagnostic]]:
    found = [d for t in program.tenants for d in check_tenant_limits(t)]
    return program, found + [d for i in program.intents for d in check_intent_limits(i)]
