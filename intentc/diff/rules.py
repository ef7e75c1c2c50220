"""What a pull request changes in the repository's tag rules (`policies/*.yaml`).

A rule is data the planner and the renderer read (docs/policies.md), so a pull
request that edits only `policies/` changes what `compile` makes without
changing a single declaration.  Each side's rules are the catalogue that side
compiles with (built-in rules plus the revision's own); a rule is the same on
both sides when it asks for the same requirements with the same reason and
volume size, wherever it is written.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from intentc.diagnostics import Span
from intentc.ir import Program
from intentc.policy import Policies, Requirement, Rule


class RuleStatus(str, enum.Enum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class RuleChange:
    tag: str
    status: RuleStatus
    old: str | None             # the base's rule, described (None: none for this tag)
    new: str | None             # the head's
    span: Span | None = None    # where the head writes it (None: removed, or a built-in rule)


def describe(rule: Rule) -> str:
    """One line a reviewer compares: what the tag requires, and why."""
    text = "requires " + (", ".join(r.value for r in rule.requires) or "nothing")
    if Requirement.PERSISTENT_VOLUME in rule.requires:
        text += f" ({rule.volume_size})"
    return text + (f": {rule.reason}" if rule.reason else "")


def _same(a: Rule, b: Rule) -> bool:
    return (a.requires, a.reason, a.volume_size) == (b.requires, b.reason, b.volume_size)


def diff_rules(base: Policies, head: Policies) -> tuple[RuleChange, ...]:
    """The tags whose rule differs between the two catalogues, by tag."""
    old, new = {r.tag: r for r in base.rules}, {r.tag: r for r in head.rules}
    out = []
    for tag in sorted(old.keys() | new.keys()):
        b, h = old.get(tag), new.get(tag)
        span = h.span if h is not None and h.origin != "built-in" else None
        if b is None and h is not None:
            out.append(RuleChange(tag, RuleStatus.ADDED, None, describe(h), span))
        elif h is None and b is not None:
            out.append(RuleChange(tag, RuleStatus.REMOVED, describe(b), None))
        elif b is not None and h is not None and not _same(b, h):
            out.append(RuleChange(tag, RuleStatus.CHANGED, describe(b), describe(h), span))
    return tuple(out)


def tagged(program: Program, changes: tuple[RuleChange, ...]) -> dict[str, tuple[str, ...]]:
    """Intent -> the tags it carries whose rule changed (intents that carry none left out)."""
    tags = {c.tag for c in changes}
    out: dict[str, tuple[str, ...]] = {}
    for intent in program.intents:
        hit = tuple(t for t in intent.context.tags if t in tags)
        if hit:
            out[intent.name] = hit
    return out
