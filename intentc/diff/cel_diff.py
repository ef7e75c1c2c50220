"""What a pull request changes in the organisation's CEL rules, and whom it newly fails.

A rule is data like a tag rule (diff/rules.py): a pull request that only
tightens `no-latest-images` changes no declaration, yet may fail intents
that passed before.  Rules are compared by name; a rule is the same on both
sides when its expression, message, severity and match are (where it is
written does not count).  For each rule added or changed, the head's rule
is evaluated over the head's program and the base's rule (if any) over the
base's, and the intents that fail the head's but did not fail the base's
are listed with the position the check reports — what the reviewer asks
of a rule change: whom does it stop.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import Span
from intentc.diff.rules import RuleStatus
from intentc.ir import Program
from intentc.plan.model import Plan
from intentc.policy.catalogue import Policies
from intentc.plan.cel_check import judge
from intentc.policy.cel_rules import CelRule


@dataclass(frozen=True)
class NewlyFailing:
    intent: str
    code: str               # E1030, W1030 or E1032
    span: Span


@dataclass(frozen=True)
class CelRuleChange:
    name: str
    status: RuleStatus
    old: str | None                 # the base's rule, described (None: added)
    new: str | None                 # the head's (None: removed)
    span: Span | None = None        # where the head writes it
    newly_fails: tuple[NewlyFailing, ...] = ()


def _failing(program: Program, rule: CelRule | None, plan: Plan | None) -> dict[str, tuple[str, Span]]:
    if rule is None:
        return {}
    return {name: (d.code, d.span) for name, d in judge(program, [rule], plan) if name}


def diff_cel_rules(base: Policies, head: Policies, base_program: Program, head_program: Program,
                   base_plan: Plan | None = None, head_plan: Plan | None = None) -> tuple[CelRuleChange, ...]:
    """The rules that differ between the two sides, by name, each with the intents it newly fails."""
    old, new = {r.name: r for r in base.cel}, {r.name: r for r in head.cel}
    out = []
    for name in sorted(old.keys() | new.keys()):
        b, h = old.get(name), new.get(name)
        if h is None and b is not None:
            out.append(CelRuleChange(name, RuleStatus.REMOVED, b.describe(), None))
            continue
        if h is None or b == h:
            continue
        before = _failing(base_program, b, base_plan)
        after = _failing(head_program, h, head_plan)
        newly = tuple(NewlyFailing(i, code, span) for i, (code, span) in sorted(after.items()) if i not in before)
        status = RuleStatus.ADDED if b is None else RuleStatus.CHANGED
        out.append(CelRuleChange(name, status, b.describe() if b is not None else None, h.describe(), h.span, newly))
    return tuple(out)
