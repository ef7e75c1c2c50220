"""Mistakes in `policies/*.yaml` the schema cannot see, at their line and column.

The schema (schemas/policy.schema.json) diagnoses a document once it is a
Policy: a misspelt key (`requries:`, `expresion:`) is E0212 with a
did-you-mean, as in an intent file.  Two mistakes come before that: a
document whose `kind` or `apiVersion` is nearly Policy's would be skipped as
some other tool's, silently dropping its rules, so it is E0204 with the
spelling meant; and two organisation rules of one name (their
ValidatingAdmissionPolicy names would collide) are E0304 at the second.
Every rule is also compiled here (cel_rules.compile_diagnostics), so a rule
that does not compile is an error at its own position in whichever command
loads the policies.
"""

from __future__ import annotations

from typing import Any

from intentc.diagnostics import Diagnostic, Related, error, excerpt
from intentc.diagnostics.suggest import did_you_mean
from intentc.policy.cel_rules import CelRule, compile_diagnostics


def not_a_policy(root: Any, shown: str) -> list[Diagnostic]:
    """E0204 for a document of a policy file that is nearly a Policy (see the module)."""
    from intentc.frontend.schema import API_VERSION, CLUSTER_KIND, KINDS, POLICY_KIND, YMap, to_span

    if not isinstance(root, YMap):
        return []
    kind, api = root.get("kind"), root.get("apiVersion")
    if kind == POLICY_KIND and "apiVersion" in root and api != API_VERSION:
        return [error("E0204", f'unknown apiVersion "{excerpt(api)}"{did_you_mean(api, [API_VERSION])}',
                      to_span(shown, root.pos["apiVersion"][1]), hint=f"intentc reads {API_VERSION}")]
    if isinstance(kind, str) and kind not in (*KINDS, POLICY_KIND, CLUSTER_KIND) and did_you_mean(kind, [POLICY_KIND]):
        return [error("E0204", f'unknown kind "{excerpt(kind)}"{did_you_mean(kind, [POLICY_KIND])}',
                      to_span(shown, root.pos["kind"][1]),
                      hint="as written, the document is not read as a policy (docs/policies.md)")]
    return []


def checked_rules(rules: list[CelRule]) -> tuple[tuple[CelRule, ...], list[Diagnostic]]:
    """The rules to use (the first of each name) and the diagnostics of all of them."""
    first: dict[str, CelRule] = {}
    diags: list[Diagnostic] = []
    for rule in rules:
        if rule.name in first:
            diags.append(error("E0304", f"rule '{rule.name}' is declared twice", rule.span,
                               related=[Related("first declared here", first[rule.name].span)],
                               hint="rule names are unique in the repository: they name its admission policy"))
            continue
        first[rule.name] = rule
        diags.extend(compile_diagnostics(rule))
    return tuple(first.values()), diags
