"""Evaluating the organisation rules (cel_rules.py) over a program, and over its plan.

Called where the tag rules are checked: `policy.check.check_plan` (so
`compile`, `plan`, `check --topology` and the daemon evaluate every rule,
with the placement), and by `intentc check` without a topology, which has
no plan: rules that read `placement` wait for one.  A rule that holds is
silent; one that does not is its own code at the intent, at the field the
rule reads where the intent writes it, with the rule's position as a
related note:

* E1030 / W1030 — the rule evaluated to false (its `severity`);
* E1032 — it could not be evaluated for this intent (a missing key, a type
  mismatch, a result that is not a bool): the rule fails closed;
* E1033 — it used up its run budget (`RULE_BUDGET_S` of evaluation in one
  run); the intents it did not reach are named in the message.

Nothing the library raises escapes as a traceback.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Iterator

from intentc.diagnostics import Diagnostic, Related, Span, error, excerpt, warning
from intentc.ir import Intent, Program
from intentc.plan.model import Plan
from intentc.policy.cel_rules import CelRule, RuleSeverity, compile_diagnostics, program, reads
from intentc.plan.cel_view import Needs, Views

RULE_BUDGET_S = 5.0     # one rule's evaluation time in one run; five rules over 10,000 intents take some 0.7 s


GUARDS = ("kind", "tenant", "name")     # what rules test to pick the intents they judge


def _span(intent: Intent, rule_fields: Iterable[str]) -> Span:
    """Where the intent writes the first field the rule reads that is not a guard (`intent.kind !=
    "serve" || intent.port == 8000` fails at the port), else the first guard, else its name."""
    a, c = intent.action, intent.constraints
    ordered = list(rule_fields)
    for f in [f for f in ordered if f not in GUARDS] + [f for f in ordered if f in GUARDS]:
        if f in ("image", "command", "model", "replicas", "port", "kind"):
            return a.spans.get(f, a.span if a.has_span else intent.span)
        if f == "settings" and a.settings is not None and a.settings.has_span:
            return a.settings.span
        if f == "gpus" and c.gpus is not None and c.gpus.has_span:
            return c.gpus.span
        if f == "duration_seconds":
            f = "duration"
        if f in ("cpu", "memory", "sla", "tolerance", "duration", "slack", "retries", "fallback"):
            got = c.spans.get(f, intent.span)
            if got is not intent.span:
                return got
        if f in ("tags", "tenant") and intent.context.has_span:
            return intent.context.span
    return intent.spans.get("name", intent.span)


def _active(rules: Iterable[CelRule], planned: bool) -> list[CelRule]:
    """The rules that compile (the others are E1031 at the rule, from the loader), less those that
    read the placement when there is no plan."""
    return [r for r in rules if not compile_diagnostics(r) and (planned or not reads(r.expression).placement)]


def evaluate(prog: Program, rules: Iterable[CelRule], plan: Plan | None = None) -> list[Diagnostic]:
    """The findings of `rules` over every intent of `prog` (placements from `plan` where given)."""
    return [d for _, d in judge(prog, rules, plan)]


def judge(prog: Program, rules: Iterable[CelRule], plan: Plan | None = None) -> Iterator[tuple[str, Diagnostic]]:
    """(intent, finding) for every intent a rule fails, or cannot judge ("" for a finding about
    the rule itself, E1033): `evaluate`, and `intentc diff`'s "newly fails" (diff/cel_diff.py).

    Intent by intent, each rule in turn on one CEL context: the library converts a context's
    values once (some 2 µs a value) and evaluates a rule on it in well under a microsecond,
    so the context holds only what the rules read (`Views`, `needs`)."""
    active = _active(rules, plan is not None)
    if not active:
        return
    import cel

    views = Views(prog, {p.intent: p for p in plan.placements} if plan is not None else None, needs(active))
    runs = [(rule, program(rule.expression), reads(rule.expression).intent_order,
             [Related(f"rule '{rule.name}' is declared here", rule.span)]) for rule in active]
    spent = [0.0] * len(runs)
    left: dict[int, list[str]] = {}          # rules past their budget: the intents they did not judge
    for intent in prog.intents:
        context = None
        for k, (rule, run, fields, note) in enumerate(runs):
            if not rule.match.admits(intent.tenant, intent.action.kind):
                continue
            if k in left:
                left[k].append(intent.name)
                continue
            start = time.perf_counter()
            try:
                if context is None:
                    context = cel.Context(views.of(intent))
                result: object = run.execute(context)
                problem = None if isinstance(result, bool) else f"it evaluated to {_type(result)}, not a bool"
            except Exception as exc:        # the library raises KeyError, TypeError, RuntimeError, ...
                result, problem = False, _reason(exc)
            spent[k] += time.perf_counter() - start
            if spent[k] > RULE_BUDGET_S:
                left[k] = []
            if problem is not None:
                yield intent.name, error(
                    "E1032", f"rule '{rule.name}' cannot be evaluated for intent '{intent.name}': {problem}",
                    _span(intent, fields), related=note,
                    hint="a rule that cannot judge an intent fails it; every field is present, null when unset "
                         "(docs/rules.md)")
            elif result is False:
                make = error if rule.severity is RuleSeverity.ERROR else warning
                code = "E1030" if rule.severity is RuleSeverity.ERROR else "W1030"
                yield intent.name, make(code, f"intent '{intent.name}' breaks rule '{rule.name}': {rule.message}",
                                        _span(intent, fields), related=note,
                                        hint=f"the rule requires: {excerpt(rule.expression, 200)}")
    for k, rest in sorted(left.items()):
        if rest:
            rule = runs[k][0]
            yield "", error("E1033", f"rule '{rule.name}' used up its evaluation budget of {RULE_BUDGET_S:g} s; "
                                     f"{len(rest)} intent(s) were not checked (first: '{rest[0]}')", rule.span,
                            hint="simplify the rule: fewer or shallower comprehensions")


def needs(rules: Iterable[CelRule]) -> Needs:
    """What `rules` read together: per variable, the fields selected of it (None: all of them)."""
    fields: dict[str, frozenset[str] | None] = {}
    for r in rules:
        for root, got in reads(r.expression).selected:
            have = fields.get(root, frozenset())
            fields[root] = None if got is None or have is None else have | got
    return Needs(tuple(sorted(fields.items())))


def _type(value: object) -> str:
    if value is None:
        return "null"
    return {int: "an int", float: "a double", str: "a string", list: "a list", dict: "a map",
            bytes: "bytes"}.get(type(value), type(value).__name__)


def _reason(exc: Exception) -> str:
    """The library's message, first line, without its generic advice; a missing key is named."""
    if isinstance(exc, KeyError):
        return f"no such key: {excerpt(exc.args[0] if exc.args else '', 80)}"
    text = str(exc).split("\n")[0] or type(exc).__name__
    return excerpt(text.split(". ")[0], 200)
