"""Pass: a GPU product that no Topology of the repository offers is a warning.

A warning, not an error: the topology files may describe only some of the
clusters an intent can land on.  But silence would let a typo such as
"H100-80G" sail through review and fail only at placement time.
"""

from __future__ import annotations

from typing import Iterator

from intentc.diagnostics import Diagnostic, excerpt, warning
from intentc.ir import Intent, Program
from intentc.suggest import did_you_mean


def check_gpu_products(program: Program) -> tuple[Program, list[Diagnostic]]:
    if not program.topologies:
        return program, []
    diags: list[Diagnostic] = []
    for intent in program.intents:
        diags.extend(check_intent_product(intent, program))
    return program, diags


def check_intent_product(intent: Intent, program: Program) -> Iterator[Diagnostic]:
    """W0401 for one intent (the hot reload redoes it for the intents of changed files)."""
    gpus = intent.constraints.gpus
    if not program.topologies or gpus is None or gpus.product is None:
        return
    offered = {p for t in program.topologies for p in t.gpu_products}
    if gpus.product.lower() in {p.lower() for p in offered}:
        return
    names = ", ".join(f'"{t.name}"' for t in program.topologies)
    yield warning(
        "W0401", f'no topology offers GPU product "{excerpt(gpus.product)}"'
                 f"{did_you_mean(gpus.product, offered)}",
        gpus.spans.get("product", gpus.span),
        hint=f"topologies {names} offer: {', '.join(sorted(offered)) or 'no GPUs'}")
