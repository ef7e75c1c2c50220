"""`batch: auto` resolved for the GPUs the plan chose (docs/sizing.md).

The estimator is SITS's rule, made explicit so the number can be checked
by hand from `plan` output:

    free   = GPUs per pod × memory per GPU − model weights
    slots  = free / 128 MiB                      (one sequence slot: the KV cache
                                                  of 1,024 tokens of an 8B-class model)
    × 1.8                                        when the declared kv_reuse > 0.7
    × 1,024 / seq_len                            when seq_len is declared
    size   = ⌊…⌋, clamped to [1, max]            (max: `auto(max N)`, else 2,048)

Weights come from `model_memory`, or `parameters` × bytes per value of the
precision (bf16 when none is declared).  The memory per GPU is the smallest
`gpu.memory` of the nodes the plan chose, so the estimate changes when the
placement does and `intentc diff` shows it.  A pod's GPUs hold one copy of
the model (tensor parallel inside a pod, data parallel across pods); a
serving intent's pod is one replica.

Pure: placements and topology in, sizings and diagnostics out; the planner
calls `size_batches` once every intent is placed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Mapping

from intentc import ir
from intentc.diagnostics import Diagnostic, Span, error, warning
from intentc.ir.quantity import parse_parameters, parse_quantity
from intentc.plan.model import BatchSizing, Placement

SLOT_BYTES = 128 * 2**20
REFERENCE_SEQ_LEN = 1024
KV_REUSE_THRESHOLD = 0.7
KV_REUSE_FACTOR = Decimal("1.8")
BATCH_MAX = 2048
DEFAULT_PRECISION = ir.Precision.BF16.value
BYTES_PER_VALUE: Mapping[str, Decimal] = {
    "fp32": Decimal(4), "tf32": Decimal(4), "fp16": Decimal(2), "bf16": Decimal(2),
    "fp8": Decimal(1), "int8": Decimal(1), "int4": Decimal("0.5"),
}


@dataclass(frozen=True)
class _Inputs:
    gpus_per_pod: int
    gpu_memory: Decimal          # bytes per GPU
    product: str
    weights: Decimal             # bytes
    weights_text: str            # how the weights were found, for the derivation


def human_bytes(n: Decimal | int) -> str:
    """Bytes as the largest binary unit that keeps one decimal (`80Gi`, `15.6Gi`)."""
    value = Decimal(n)
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if abs(value) >= size:
            scaled = (value / size).quantize(Decimal("0.1"))
            return f"{scaled.normalize():f}{unit}"
    return f"{value:f}B"


def weights_of(s: ir.ModelSettings) -> tuple[Decimal, str] | None:
    """The model's weight bytes and how they were found, or None when undeclared."""
    if s.model_memory is not None:
        q = parse_quantity(s.model_memory)
        return (q, f"model_memory {s.model_memory}") if q is not None and q > 0 else None
    if s.parameters is not None:
        count = parse_parameters(s.parameters)
        precision = s.precision if s.precision is not None and s.precision in BYTES_PER_VALUE \
            else DEFAULT_PRECISION
        if not count:
            return None
        per = BYTES_PER_VALUE[precision]
        return Decimal(count) * per, f"{s.parameters} parameters × {per.normalize():f} B ({precision})"
    return None


def _pod_gpus(intent: ir.Intent, placement: Placement) -> int:
    if intent.action.kind == ir.ActionKind.SERVE.value:
        replicas = intent.action.replicas or 1
        return -(-placement.gpu_count // replicas)
    return max(len(a.gpus) for a in placement.allocations)


def _span(s: ir.ModelSettings, key: str, default: Span) -> Span:
    return s.spans.get(key, s.span if s.span.line else default)


def _inputs(intent: ir.Intent, placement: Placement, nodes: Mapping[str, ir.TopologyNode]
            ) -> _Inputs | Diagnostic:
    s = intent.action.settings
    assert s is not None and s.batch is not None
    at = _span(s, "batch", intent.action.span)
    found = weights_of(s)
    if found is None:
        return warning("W1001", f"batch: auto of intent '{intent.name}' is rendered as 1: the model's size "
                                f"is not declared", at,
                       hint="declare `model_memory: 16Gi` or `parameters: 8B` in the settings")
    memories = []
    for a in placement.allocations:
        node = nodes.get(a.node)
        q = parse_quantity(node.gpu_memory) if node is not None and node.gpu_memory else None
        if q is None:
            return warning("W1001", f"batch: auto of intent '{intent.name}' is rendered as 1: node "
                                    f"{a.node} declares no GPU memory", at,
                           hint="give the node `gpu: {memory: 80Gi}` in the topology")
        memories.append((q, node.gpu_product if node is not None and node.gpu_product else "GPU"))
    memory, product = min(memories)
    return _Inputs(_pod_gpus(intent, placement), memory, product, found[0], found[1])


def estimate(intent: ir.Intent, inputs: _Inputs) -> tuple[int, int, str]:
    """(size, unclamped estimate, derivation) for one intent whose weights fit."""
    s = intent.action.settings
    assert s is not None and s.batch is not None
    free = inputs.gpus_per_pod * inputs.gpu_memory - inputs.weights
    slots = free / SLOT_BYTES
    steps = [f"{inputs.gpus_per_pod} × {human_bytes(inputs.gpu_memory)} {inputs.product} − weights "
             f"{human_bytes(inputs.weights)} ({inputs.weights_text}) = {human_bytes(free)} free",
             f"/ 128Mi per slot = {slots:.1f} slots"]
    raw = slots
    if s.kv_reuse is not None and s.kv_reuse > KV_REUSE_THRESHOLD:
        raw *= KV_REUSE_FACTOR
        steps.append(f"× 1.8 (kv_reuse {s.kv_reuse} > {KV_REUSE_THRESHOLD})")
    if s.seq_len is not None:
        raw = raw * REFERENCE_SEQ_LEN / s.seq_len
        steps.append(f"× {REFERENCE_SEQ_LEN}/{s.seq_len} (seq_len)")
    unclamped = max(math.floor(raw), 0)
    cap = min(s.batch.max, BATCH_MAX) if s.batch.max is not None else BATCH_MAX
    size = min(max(unclamped, 1), cap)
    steps.append(f"= {unclamped}")
    if size != unclamped:
        steps.append(f"→ {size} ({'max ' + str(cap) if size == cap else 'at least 1'})")
    return size, unclamped, " ".join(steps)


def size_batches(intents: Iterable[ir.Intent], placements: Iterable[Placement], topology: ir.Topology
                 ) -> tuple[tuple[BatchSizing, ...], list[Diagnostic]]:
    """A concrete batch for every placed `batch: auto` intent, in name order
    (1 for one that runs without GPUs: there is no GPU memory to size from).

    W1001 when the model's size or the GPU memory is unknown (the batch is
    then 1, which always fits); E1010 when the weights alone do not fit in
    one pod's GPUs (no batch size can run).
    """
    nodes = {n.name: n for n in topology.nodes}
    placed = {p.intent: p for p in placements}
    out: list[BatchSizing] = []
    diags: list[Diagnostic] = []
    for intent in sorted(intents, key=lambda i: i.name):
        s = intent.action.settings
        placement = placed.get(intent.name)
        if s is None or s.batch is None or not s.batch.auto or placement is None:
            continue
        if not placement.allocations:
            out.append(BatchSizing(intent.name, 1, s.batch.max, None, "no GPUs planned: 1"))
            continue
        got = _inputs(intent, placement, nodes)
        if isinstance(got, Diagnostic):
            diags.append(got)
            out.append(BatchSizing(intent.name, 1, s.batch.max, None, got.message))
            continue
        if got.weights >= got.gpus_per_pod * got.gpu_memory:
            key = "model_memory" if s.model_memory is not None else "parameters"
            diags.append(error("E1010", f"the weights of intent '{intent.name}' ({human_bytes(got.weights)}, "
                                        f"{got.weights_text}) do not fit in one pod's "
                                        f"{got.gpus_per_pod} × {human_bytes(got.gpu_memory)} {got.product}",
                               _span(s, key, intent.action.span),
                               hint="ask for more GPUs per pod, GPUs with more memory, or a lower precision"))
            continue
        size, unclamped, text = estimate(intent, got)
        out.append(BatchSizing(intent.name, size, s.batch.max, unclamped, text))
    return tuple(out), diags
