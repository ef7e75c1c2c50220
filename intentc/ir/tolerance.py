"""The batching decision table: SLA class, tolerance δ, fragmentation → precision and strategy.

`tolerance` is the share of the reference result the intent accepts
(0.95: results may be 5 % worse), so δ = 1 − tolerance is the accuracy
loss it allows.  An intent without a tolerance has declared nothing to
protect and keeps whatever precision it names.  Two decisions follow
(docs/sizing.md has the table):

* **allowed precisions**: quantization costs accuracy, so each step down
  needs a larger δ: fp32 / tf32 / bf16 / fp16 always; fp8 from δ ≥ 0.01;
  int8 from δ ≥ 0.05; int4 from δ ≥ 0.10 and never for P0 / P1, whose
  answers are user-facing.  A declared precision outside the set is E1011.
* **strategy** (placement and batching): P0 / P1 get `latency`
  (continuous batching, small waits, the placement is kept as planned);
  P2 / P3 get `throughput` (full static batches) unless the domain the
  plan chose is fragmented — more than a quarter of its GPUs free on
  partly used nodes — where they get `elastic` (checkpoint often and
  accept being moved by a later re-plan, so the domain can be compacted).

Shared by the domain pass (precision) and the planner (strategy), so
they never disagree.
"""

from __future__ import annotations

from intentc.ir import Precision, SlaClass

FULL = (Precision.FP32.value, Precision.TF32.value, Precision.BF16.value, Precision.FP16.value)
STEPS = ((0.01, Precision.FP8.value), (0.05, Precision.INT8.value), (0.10, Precision.INT4.value))
USER_FACING = (SlaClass.P0.value, SlaClass.P1.value)
FRAGMENTED = 0.25
DEFAULT_SLA = SlaClass.P2.value


def delta(tolerance: float) -> float:
    return round(1.0 - tolerance, 6)


def allowed_precisions(sla: str | None, tolerance: float | None) -> tuple[str, ...]:
    """The precisions the intent may run at, widest first (all of them without a tolerance)."""
    if tolerance is None:
        return FULL + tuple(precision for _, precision in STEPS)
    d = delta(tolerance)
    out = list(FULL)
    for needed, precision in STEPS:
        if d >= needed and not (precision == Precision.INT4.value and (sla or DEFAULT_SLA) in USER_FACING):
            out.append(precision)
    return tuple(out)


def strategy(sla: str | None, fragmentation: float) -> str:
    if (sla or DEFAULT_SLA) in USER_FACING:
        return "latency"
    return "elastic" if fragmentation > FRAGMENTED else "throughput"
