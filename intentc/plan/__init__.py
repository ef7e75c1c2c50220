"""Placement of intents onto a topology: fair share, SLA order, topology-aware GPU choice.

`make_plan` is the entry point; `plan_to_json` / `plan_from_json` are the
`plan.json` document (schemas/plan.schema.json).
"""

from intentc.plan.jsonio import plan_from_json, plan_to_json
from intentc.plan.planner import make_plan

__all__ = ["make_plan", "plan_from_json", "plan_to_json"]
