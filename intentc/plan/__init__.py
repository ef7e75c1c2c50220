"""Placement of intents onto a topology: fair share, SLA order, topology-aware GPU choice.

`planner.make_plan` is the entry point; `jsonio.plan_to_json` /
`jsonio.plan_from_json` are the `plan.json` document
(schemas/plan.schema.json); `model` is the contract the renderer and the
reconciler read.  The package itself imports nothing, so that importing the
model does not load the planner (and networkx) with it.
"""
