"""`intentc diff` as a library call: two trees in, one `DiffReport` out.

Cost model (5,000 intents, 10 changed): the trees are compiled by
`sides.compile_sides`, which parses only blobs absent from the blob cache;
the semantic diff deep-compares only the declarations that are not equal
(equality is a cheap dataclass comparison, identity for shared parses);
graphs are built once per side; the renderer runs only for changed intents.
The planner runs only when a topology is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentc import collector
from intentc.collector import After
from intentc.diagnostics import Diagnostic, Severity
from intentc.diff.binding_diff import LiveBindingDiff
from intentc.diff.cache import BlobCache
from intentc.diff.cel_diff import CelRuleChange, diff_cel_rules
from intentc.diff.creates import IntentObjects, target_objects
from intentc.diff.graph_diff import GraphDiff, GraphView, diff_graphs, view
from intentc.diff.impact import Impact, SideState, classify
from intentc.diff.intents import DeclChange, diff_programs
from intentc.diff.plan_diff import PlanDiff, diff_plans
from intentc.diff.rules import RuleChange, diff_rules, tagged
from intentc.diff.sides import CompileStats, Side, Tree, compile_sides
from intentc.plan.model import Plan
from intentc.plan.planner import make_plan
from intentc.render.targets import DEFAULT_TARGET
from intentc.topology.load import LoadedTopology


@dataclass(frozen=True)
class DiffReport:
    base: str
    head: str
    declarations: tuple[DeclChange, ...]
    graph: GraphDiff
    plan: PlanDiff | None
    impacts: tuple[Impact, ...]
    base_diagnostics: tuple[Diagnostic, ...] = ()
    head_diagnostics: tuple[Diagnostic, ...] = ()
    stats: CompileStats | None = None
    target: str = DEFAULT_TARGET
    creates: tuple[IntentObjects, ...] = ()      # what `target` makes for each added/changed intent
    binding: LiveBindingDiff | None = None       # with a cluster: where apply's live binding differs (binding_diff.py)
    rules: tuple[RuleChange, ...] = ()           # tag rules (policies/) that differ
    cel_rules: tuple[CelRuleChange, ...] = ()    # organisation rules (policies/ `rules:`) that differ

    @property
    def changed(self) -> bool:
        return (bool(self.declarations) or bool(self.rules) or bool(self.cel_rules) or not self.graph.empty
                or (self.plan is not None and not self.plan.empty))

    @property
    def head_errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.head_diagnostics)

    @property
    def base_errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.base_diagnostics)


def _plan(side: Side, topology: LoadedTopology | None, seed: int) -> Plan | None:
    """The side's plan with the seed `compile` would be given and the side's own tag rules,
    so a moved placement is one the compiled plan moves too, not a tie broken another way
    or a rule (no-repack, exclusive-domain) one side did not know."""
    if topology is None:
        return None
    plan, _ = make_plan(side.program, topology, seed, policies=side.policies)
    return plan


def _view(side: Side, cache: BlobCache | None) -> GraphView:
    cached = cache.view(side.digest) if cache is not None else None
    if isinstance(cached, GraphView):
        return cached
    fresh = view(side.program)
    if cache is not None:
        cache.put_view(side.digest, fresh)
    return fresh


def diff_compiled(base: Side, head: Side, topology: LoadedTopology | None = None,
                  stats: CompileStats | None = None, cache: BlobCache | None = None,
                  target: str = DEFAULT_TARGET, seed: int = 0) -> DiffReport:
    declarations = diff_programs(base.program, head.program)
    gb, gh = _view(base, cache), _view(head, cache)
    graph = diff_graphs(gb, gh)
    plan_b, plan_h = _plan(base, topology, seed), _plan(head, topology, seed)
    plan = diff_plans(plan_b, plan_h) if plan_b is not None and plan_h is not None else None
    moved = {m.intent: f"{m.old} -> {m.new}" for m in plan.moved} if plan else {}
    unplaceable = {c.intent: c.message for c in plan.capacity if not c.placeable} if plan else {}
    topo = topology.topology if topology is not None else None
    rules = diff_rules(base.policies, head.policies)
    head_state = SideState(head.program, plan_h, gh.wave_of, target, topo, head.policies)
    impacts = classify(declarations, SideState(base.program, plan_b, gb.wave_of, target, topo, base.policies),
                       head_state, moved, unplaceable, tagged(head.program, rules))
    return DiffReport(base.label, head.label, tuple(declarations), graph, plan, impacts,
                      base.diagnostics, head.diagnostics, stats, target,
                      target_objects(declarations, head_state), rules=rules,
                      cel_rules=diff_cel_rules(base.policies, head.policies, base.program, head.program, plan_b, plan_h))


def diff_trees(base: Tree, head: Tree, topology: LoadedTopology | None = None,
               cache_dir: str | None = None, jobs: int | None = None,
               target: str = DEFAULT_TARGET, seed: int = 0) -> tuple[DiffReport, Side, Side]:
    """Compile both trees (sharing every unchanged blob's parse) and diff them; with a
    topology, both are planned with `seed`."""
    with collector.paused(After.AGE):   # two whole programs, no cycles (collector.py)
        cache = BlobCache(cache_dir)
        b, h, stats = compile_sides(base, head, cache, jobs)
        report = diff_compiled(b, h, topology, stats, cache, target, seed)
        cache.save(set(base.listing.items()) | set(head.listing.items()), (b.digest, h.digest))
        return report, b, h
