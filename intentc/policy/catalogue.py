"""The requirement vocabulary and the built-in tag rules.

Requirements are what code can enforce; rules (tag → requirements) are
data, so a repository adds rules without code and the same requirement
serves many tags.  `Policies` is the catalogue one run uses: the built-in
rules plus the repository's, a repository rule replacing a built-in one
for the same tag.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

from intentc.diagnostics import Span
from intentc.ir import NO_SPAN, Intent
from intentc.policy.cel_rules import CelRule


class Requirement(enum.Enum):
    EXCLUSIVE_DOMAIN = "exclusive-domain"          # no other tenant's GPUs on its nodes or NVLink domains
    DEFAULT_DENY_NETWORK = "default-deny-network"  # a default-deny NetworkPolicy in the tenant namespace
    PERSISTENT_VOLUME = "persistent-volume"        # a PersistentVolumeClaim mounted into its pods
    DISRUPTION_BUDGET = "disruption-budget"        # a PodDisruptionBudget (maxUnavailable 0)
    NO_REPACK = "no-repack"                        # the planner never moves it to make room

    @property
    def describe(self) -> str:
        return {
            "exclusive-domain": "dedicated nodes and an NVLink domain no other tenant uses",
            "default-deny-network": "a default-deny NetworkPolicy in its namespace",
            "persistent-volume": "a PersistentVolumeClaim for its state",
            "disruption-budget": "a PodDisruptionBudget",
            "no-repack": "never being moved by the planner's repacking",
        }[self.value]


@dataclass(frozen=True)
class Rule:
    tag: str
    requires: tuple[Requirement, ...]
    reason: str = ""                     # why, shown with a violation
    volume_size: str = "10Gi"            # for persistent-volume
    origin: str = "built-in"             # "built-in" or the policy file
    span: Span = field(default=NO_SPAN, compare=False)


BUILTIN_RULES: tuple[Rule, ...] = (
    Rule("pci-dss-compliant",
         (Requirement.EXCLUSIVE_DOMAIN, Requirement.DEFAULT_DENY_NETWORK),
         "PCI DSS: cardholder-data workloads are isolated from other tenants (req. 1, 2.2.1)"),
    Rule("stateful",
         (Requirement.PERSISTENT_VOLUME, Requirement.DISRUPTION_BUDGET, Requirement.NO_REPACK),
         "a stateful workload keeps its volume and is not moved or disrupted"),
)


@dataclass(frozen=True)
class Policies:
    rules: tuple[Rule, ...] = BUILTIN_RULES
    cel: tuple[CelRule, ...] = ()        # the repository's organisation rules (cel_rules.py), in file order

    def rule(self, tag: str) -> Rule | None:
        return next((r for r in self.rules if r.tag == tag), None)

    def requirements(self, intent: Intent) -> Iterable[tuple[int, Rule, Requirement]]:
        """(tag index, rule, requirement) for every requirement the intent's tags carry."""
        for index, tag in enumerate(intent.context.tags):
            rule = self.rule(tag)
            if rule is not None:
                for req in rule.requires:
                    yield index, rule, req

    def requires(self, intent: Intent, requirement: Requirement) -> Rule | None:
        return next((rule for _, rule, req in self.requirements(intent) if req is requirement), None)

    def with_rules(self, extra: Iterable[Rule]) -> "Policies":
        """These rules, a later rule replacing an earlier one for the same tag; sorted by tag."""
        by_tag = {r.tag: r for r in self.rules}
        for r in extra:
            by_tag[r.tag] = r
        return Policies(tuple(by_tag[t] for t in sorted(by_tag)), self.cel)


BUILTIN = Policies().with_rules(())
