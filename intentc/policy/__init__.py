"""Semantic tags → policy (docs/policies.md).

A tag on an intent (`tags [pci-dss-compliant]`) can *require* properties of
the plan and of the rendered objects.  The rule catalogue maps tags to
requirements: built-in rules in `catalogue.py`, more from a repository's
`policies/*.yaml` (`load.py`, checked against schemas/policy.schema.json).
The requirements themselves are a closed vocabulary implemented in code:
the planner honours `no-repack`, `plan/policy_check.py` checks the plan-level ones
(with the tag's position), and the renderer adds the objects the others
ask for (`intentc/render/policy_objects.py`).
"""

from intentc.policy.catalogue import BUILTIN, Policies, Requirement, Rule

__all__ = ["BUILTIN", "Policies", "Requirement", "Rule"]
