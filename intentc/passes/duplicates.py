"""Pass: a name declared twice (in one file or across files) is an error.

Reported at the second declaration in canonical order, with a note at the
first, so the fix is obvious whichever file the reader opens.  Kinds have
separate namespaces: a tenant and an intent may share a name.
"""

from __future__ import annotations

from typing import Sequence

from intentc.diagnostics import Diagnostic, Related, error, excerpt
from intentc.ir import Dataset, Intent, Program, Tenant, Topology

Named = Tenant | Dataset | Intent | Topology


def _duplicates(kind: str, decls: Sequence[Named]) -> list[Diagnostic]:
    first: dict[str, Named] = {}
    diags = []
    for d in decls:
        if d.name in first:
            orig = first[d.name]
            diags.append(error(
                "E0304", f'{kind} "{excerpt(d.name)}" is declared more than once',
                d.spans.get("name", d.span),
                hint=f"rename one of them or remove the duplicate {kind}",
                related=[Related(f'first declaration of {kind} "{d.name}"',
                                 orig.spans.get("name", orig.span))]))
        else:
            first[d.name] = d
    return diags


def check_duplicates(program: Program) -> tuple[Program, list[Diagnostic]]:
    diags = (_duplicates("tenant", program.tenants) + _duplicates("dataset", program.datasets)
             + _duplicates("intent", program.intents) + _duplicates("topology", program.topologies))
    return program, diags
