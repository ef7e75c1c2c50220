"""Pass: a tag that is nearly the tag of a built-in rule is a warning (W1021).

Tags are free-form (`nightly`, `online`), so an unknown tag is fine; but a
tag one typo away from a rule's tag (`pci-dss-complaint`) silently drops
the rule's requirements — no isolation, no NetworkPolicy — and nothing
else would say so.  The warning is at the tag, with the rule's tag as a
did-you-mean.  This pass knows the built-in rules only (it runs per file,
cached with it); `intentc.policy.tags.with_rules` then takes the
repository's rules into account.
"""

from __future__ import annotations

from intentc.diagnostics import Diagnostic
from intentc.ir import Program
from intentc.policy.tags import BUILTIN_TAGS, near_misses


def check_tags(program: Program) -> tuple[Program, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    for intent in program.intents:
        if intent.context.tags:
            diags.extend(near_misses(intent, BUILTIN_TAGS))
    return program, diags
