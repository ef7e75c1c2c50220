"""Organisation rules the cluster enforces too: a ValidatingAdmissionPolicy per rule.

CI evaluates every rule (plan/cel_check.py); a rule that reads only what
the cluster sees of an intent is also rendered as a
ValidatingAdmissionPolicy and its Binding (admissionregistration.k8s.io/v1),
so an object made behind git's back (`kubectl run`, an edited Job) meets the
same rule at admission.  What the cluster sees is the pods intentc's
workloads make: every render target's pods carry the intent's labels and
annotations (render/workloads.py), so one policy over pods covers Jobs,
JobSets, CronJobs, Deployments and Kueue's workloads alike.  The intent the
rule reads is rebuilt from the pod in a policy variable, and the rule's
expression is used as written, with `intent` read as `variables.intent`:

| rule reads        | the pod's                                          |
|-------------------|----------------------------------------------------|
| `intent.name`     | label `intentc.dev/intent`                         |
| `intent.tenant`   | label `intentc.dev/tenant`                         |
| `intent.kind`     | annotation `intentc.dev/action`                    |
| `intent.image`    | `spec.containers[0].image` (the intent's container) |

A rule reading anything else (a constraint, the tenant, the placement) is
checked by intentc only.  `match` becomes the policy's matchConditions; an
error rule's binding denies, a warning rule's warns and audits.
"""

from __future__ import annotations

from typing import Any, Iterable

from intentc.policy.cel_rules import CelRule, RuleSeverity, compile_diagnostics, reads, tokens
from intentc.render.meta import metadata
from intentc.objectmeta import INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, TENANT_LABEL

API_VERSION = "admissionregistration.k8s.io/v1"
PREFIX = "intentc-rule-"
ACTION_ANNOTATION = "intentc.dev/action"
RULE_ANNOTATION = "intentc.dev/rule-source"

_ANN = "object.metadata.annotations"
INTENT_VARIABLE = (
    "{"
    f'"name": object.metadata.labels["{INTENT_LABEL}"], '
    f'"tenant": object.metadata.labels["{TENANT_LABEL}"], '
    f'"kind": has({_ANN}) && "{ACTION_ANNOTATION}" in {_ANN} ? {_ANN}["{ACTION_ANNOTATION}"] : "", '
    '"image": object.spec.containers[0].image'
    "}"
)


def admissible(rules: Iterable[CelRule]) -> list[CelRule]:
    """The rules the cluster can enforce (cel_rules.Reads.admissible) and that compile, in name order."""
    return sorted((r for r in rules if reads(r.expression).admissible and not compile_diagnostics(r)),
                  key=lambda r: r.name)


def on_the_cluster(expression: str) -> str:
    """`expression` with each variable `intent` read as `variables.intent`."""
    toks = tokens(expression)
    out, last = [], 0
    for i, t in enumerate(toks):
        if t.kind == "id" and t.text == "intent" and (i == 0 or toks[i - 1].text != "."):
            out.append(expression[last:t.offset] + "variables.intent")
            last = t.offset + len(t.text)
    return "".join(out) + expression[last:]


def _list(values: Iterable[str]) -> str:
    return "[" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def policy(rule: CelRule) -> dict[str, Any]:
    conditions = []
    if rule.match.tenants:
        conditions.append({"name": "tenants",
                           "expression": f'object.metadata.labels["{TENANT_LABEL}"] in {_list(rule.match.tenants)}'})
    if rule.match.kinds:
        conditions.append({"name": "kinds",
                           "expression": f'has({_ANN}) && "{ACTION_ANNOTATION}" in {_ANN} && '
                                         f'{_ANN}["{ACTION_ANNOTATION}"] in {_list(rule.match.kinds)}'})
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                               "resources": ["pods"]}],
            "objectSelector": {"matchExpressions": [
                {"key": MANAGED_BY_LABEL, "operator": "In", "values": [MANAGED_BY]},
                {"key": INTENT_LABEL, "operator": "Exists"},
                {"key": TENANT_LABEL, "operator": "Exists"}]},
        },
    }
    if conditions:
        spec["matchConditions"] = conditions
    spec["variables"] = [{"name": "intent", "expression": INTENT_VARIABLE}]
    spec["validations"] = [{"expression": on_the_cluster(rule.expression),
                            "message": f"rule {rule.name}: {rule.message}"}]
    where = rule.origin      # the file, not the line: moving a rule down a file changes nothing on the cluster
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
            "metadata": metadata(PREFIX + rule.name, annotations={RULE_ANNOTATION: where} if where else None),
            "spec": spec}


def binding(rule: CelRule) -> dict[str, Any]:
    actions = ["Deny"] if rule.severity is RuleSeverity.ERROR else ["Warn", "Audit"]
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": metadata(PREFIX + rule.name),
            "spec": {"policyName": PREFIX + rule.name, "validationActions": actions}}


def admission_objects(rules: Iterable[CelRule]) -> list[dict[str, Any]]:
    """The policy and binding of every rule the cluster can enforce."""
    out = []
    for rule in admissible(rules):
        out += [policy(rule), binding(rule)]
    return out

