"""Pass: a GPU product that no Topology of the repository offers is a warning.

A warning, not an error: the topology files may describe only some of the
clusters an intent can land on.  But silence would let a typo such as
"H100-80G" sail through review and fail only at placement time.  Names are
compared as the planner compares them (`topology.products`): an intent's
`H100-80GB` is offered by a topology imported from GPU feature discovery's
`NVIDIA-H100-80GB-HBM3`.
"""

from __future__ import annotations

from typing import Iterator

from intentc.diagnostics import Diagnostic, excerpt, warning
from intentc.ir import Intent, Program


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
    # imported here: a repository without Topology files never needs it (`check` loads no topology code)
    from intentc.topology.products import nearest, product_key

    offered = {p for t in program.topologies for p in t.gpu_products}
    if product_key(gpus.product) in {product_key(p) for p in offered}:
        return
    names = ", ".join(f'"{t.name}"' for t in program.topologies)
    guess = nearest(gpus.product, offered)
    yield warning(
        "W0401", f'no topology offers GPU product "{excerpt(gpus.product)}"'
                 + (f' (did you mean "{guess}"?)' if guess else ""),
        gpus.spans.get("product", gpus.span),
        hint=f"topologies {names} offer: {', '.join(sorted(offered)) or 'no GPUs'}")
