"""Pass: every reference names something declared somewhere in the repository.

Resolution is global (all files of the run), which is why it is a pass and
not part of parsing.  A dataset counts as known when a `dataset` block
declares it (external data) or some intent produces it.
"""

from __future__ import annotations

from intentc.diagnostics import Diagnostic, error, excerpt
from intentc.diagnostics.suggest import did_you_mean
from intentc.ir import Program, Ref


def _dangling(ref: Ref, known: set[str]) -> bool:
    """An empty name stands for a value the front end already reported missing."""
    return bool(ref.name) and ref.name not in known


def _unknown(code: str, kind: str, ref: Ref, known: set[str], hint: str) -> Diagnostic:
    return error(code, f'unknown {kind} "{excerpt(ref.name)}"{did_you_mean(ref.name, known)}', ref.span,
                 hint=hint)


def resolve_names(program: Program) -> tuple[Program, list[Diagnostic]]:
    tenants = {t.name for t in program.tenants}
    intents = {i.name for i in program.intents}
    datasets = {d.name for d in program.datasets}
    datasets |= {ref.name for i in program.intents for ref in i.produces}
    diags: list[Diagnostic] = []
    for intent in program.intents:
        if _dangling(intent.context.tenant, tenants):
            diags.append(_unknown("E0301", "tenant", intent.context.tenant, tenants,
                                  "declare it with a `tenant` block or a `kind: Tenant` document"))
        for ref in intent.trigger.after:
            if _dangling(ref, intents):
                diags.append(_unknown("E0303", "intent", ref, intents - {intent.name},
                                      "`after` names another intent of the repository"))
        for ref in intent.consumes:
            if _dangling(ref, datasets):
                diags.append(_unknown("E0302", "dataset", ref, datasets,
                                      "declare it with a `dataset` block (external data) "
                                      "or have an intent produce it"))
    return program, diags
