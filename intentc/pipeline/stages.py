"""The stages of a compile, in order: load → check → graph → plan → render → write.

`STAGES` is the order, as a tuple the driver walks (`Driver.run`): each stage
takes the `Unit` made so far and returns it with its own part added, so a
command stops after the stage it needs (`check --topology` after the plan,
`compile` after the write) and a fleet runs the later stages once per
cluster on one check.  A stage has the modes its callers need, each written
once in this package: the check from the memo or patched (`pipeline.memo`,
`pipeline.basis`); for the daemon's reloader, which keeps a compile warm, the
load of one file (`load_file`), the global passes over its file table
(`checked.global_pass_findings`), and the full placement (`place`) with the
index its incremental plan patches (`index_plan`).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from intentc.compact import intern_strings
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.frontend import Loaded, parse_source
from intentc.frontend.sources import SourceFile, texts_for_carets
from intentc.graph.digraph import dependencies as dependency_graph
from intentc.ir import Intent, Program
from intentc.passes import LOCAL_PASSES, run_passes
from intentc.pipeline.checked import Checked
from intentc.pipeline.holdback import holdback
from intentc.pipeline.outputs import write_outputs
from intentc.pipeline.result import CompileResult, LiveReader
from intentc.plan.incremental import PlanIndex
from intentc.plan.model import Occupancy, Plan
from intentc.plan.planner import make_plan
from intentc.policy.catalogue import Policies
from intentc.policy.tags import with_rules
from intentc.render import render as render_objects
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.packed import BodyCodec
from intentc.render.targets import DEFAULT_TARGET
from intentc.topology.load import LoadedTopology

if TYPE_CHECKING:
    from intentc.pipeline.driver import Driver


class Stage(enum.Enum):
    LOAD = "load"
    CHECK = "check"
    GRAPH = "graph"
    PLAN = "plan"
    RENDER = "render"
    WRITE = "write"


@dataclass(frozen=True)
class Request:
    """What a run makes beyond the check: where it places, what it stamps, how it renders,
    where it writes."""

    topology: str = ""
    commit: str = ""
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION
    target: str = DEFAULT_TARGET
    seed: int = 0
    # reads what a cluster has free for the checked program and topology: the plan is made on that ("basis": live)
    live: LiveReader | None = field(default=None, compare=False)
    # the intents compiled (a fleet cluster's selection, `intentc.fleet.select.for_cluster`); None: all
    only: Callable[[Intent], bool] | None = field(default=None, compare=False)
    pack: BodyCodec | None = field(default=None, compare=False)       # see `render`
    previous: Plan | None = field(default=None, compare=False)        # see `make_plan`
    # hold back the tenants errors belong to (compile, apply); False renders every tenant as planned,
    # as `intentc diff` previews the live binding of a head whose plan reports errors
    hold_back: bool = True
    out_dir: Path | None = None


@dataclass(frozen=True)
class Unit:
    """What the stages have made so far for one request."""

    request: Request
    reached: Stage | None = None
    loaded: Loaded | None = None
    checked: Checked | None = None
    result: CompileResult | None = None
    written: tuple[str, ...] = ()
    stopped: bool = False       # nothing further can be made: no topology, or errors that hold back every tenant


@dataclass(frozen=True)
class TopologyFile:
    """A Topology file as the plan stage reads it: loaded (None when it cannot be), what
    loading found, and its text for carets."""

    path: str
    loaded: LoadedTopology | None
    diagnostics: tuple[Diagnostic, ...]
    text: str | None

    @property
    def unreadable(self) -> bool:
        """Not there or not text (exit 2), as against a file with errors in it (exit 1)."""
        return any(d.code.startswith("E00") for d in self.diagnostics) or not Path(self.path).is_file()


@dataclass(frozen=True)
class FileLoad:
    """One file loaded as the daemon's reloader keeps it: its program (strings interned,
    canonical order), parsing's findings and the local passes' findings."""

    program: Program
    parsed: tuple[Diagnostic, ...]
    local: tuple[Diagnostic, ...]


def load_file(source: SourceFile) -> FileLoad:
    """The load stage for one file (the reloader's mode): parse, then the local passes."""
    parsed = parse_source(source)
    intern_strings(parsed.program)
    program = parsed.program.canonical()
    _, local = run_passes(program, LOCAL_PASSES)
    return FileLoad(program, parsed.diagnostics, tuple(local))


def load(driver: Driver, unit: Unit) -> Unit:
    """Read and parse the files, the local passes run per file (`pipeline.loading.load`,
    through the driver's parse cache); nothing when the driver has checked them already."""
    if driver.has_checked:
        return unit
    return dataclasses.replace(unit, loaded=driver.load())


def check(driver: Driver, unit: Unit) -> Unit:
    """The global passes and the dependency findings (`checked.check_loaded`), kept by the driver."""
    return dataclasses.replace(unit, checked=driver.check(unit.loaded), loaded=None)


def graph(driver: Driver, unit: Unit) -> Unit:
    """The program the plan and graph.json describe: the intents the request selects.  Its
    dependency graph is built when first asked for (`Checked.graph`: holding a tenant back,
    graph.json), which applying a commit never does."""
    only, checked = unit.request.only, unit.checked
    if only is None or checked is None:
        return unit
    program = dataclasses.replace(checked.program, intents=tuple(filter(only, checked.program.intents)))
    return dataclasses.replace(unit, checked=dataclasses.replace(checked, program=program))


def plan(driver: Driver, unit: Unit) -> Unit:
    """Place the program on the request's topology (on what the cluster has free with
    `live`), with the repository's tag rules; the findings so far put together."""
    request, checked = unit.request, unit.checked
    assert checked is not None
    topology = driver.topology(request.topology)
    sources: dict[str, str] = {}
    if topology.text is not None:
        sources[Path(request.topology).as_posix()] = topology.text
    sources.update(checked.sources)
    policies, policy_diags, policy_texts = driver.policy
    sources.update(policy_texts)
    diags = with_rules(checked.diagnostics, policies, checked.program) + list(topology.diagnostics) + policy_diags
    loaded = topology.loaded
    if loaded is None:
        result = CompileResult(tuple(sorted_diagnostics(diags)), sources, checked.program,
                               topology_unreadable=topology.unreadable)
        return dataclasses.replace(unit, result=result, stopped=True)
    occupied: Occupancy | None = None
    notes: tuple[str, ...] = ()
    if request.live is not None:
        loaded, occupied, notes = request.live(checked.program, loaded)
    placed, plan_diags = place(checked.program, loaded, request.seed, policies, occupied, request.previous)
    if occupied is not None:
        placed = dataclasses.replace(placed, basis="live", basis_notes=notes)
    # the dependency findings are the check's already (`checked.global_findings`)
    diags = sorted_diagnostics(diags + plan_diags)
    sources = texts_for_carets(diags, sources)       # plan findings point into files parsing left unread
    result = CompileResult(tuple(diags), sources, checked.program, placed, topology=loaded, policies=policies)
    return dataclasses.replace(unit, result=result)


def place(program: Program, loaded: LoadedTopology, seed: int, policies: Policies,
          occupied: Occupancy | None = None, previous: Plan | None = None) -> tuple[Plan, list[Diagnostic]]:
    """The plan stage's placement of a checked program (`make_plan`), the reloader's full
    plan too; its incremental plan patches the plan in force (`plan.incremental`)."""
    return make_plan(program, loaded, seed, occupied, policies, previous)


def index_plan(program: Program, placed: Plan, loaded: LoadedTopology, seed: int, policies: Policies) -> PlanIndex:
    """The plan stage's incremental mode starts from a full plan: its index (`plan.incremental`),
    which re-places what an edit touches into the plan's free intervals.  One dependency graph
    at a time: `make_plan` builds its own (and reports its E0501 / E0503), so the index's (its
    shape only) is built once the planner's working set is gone."""
    g = dependency_graph(program)      # the shape only: its findings are make_plan's
    index = PlanIndex(program, placed, g, loaded, seed, policies)
    g.clear()                   # its views refer back to it: emptied now, not at the next collection
    return index


def render(driver: Driver, unit: Unit) -> Unit:
    """The objects of the plan, for the request's Kubernetes version and render target;
    errors that belong to one tenant hold back that tenant only (`intentc.pipeline.holdback`),
    any other writes nothing."""
    request, checked, planned = unit.request, unit.checked, unit.result
    assert checked is not None and planned is not None and planned.plan is not None
    assert planned.topology is not None and planned.policies is not None
    diags = list(planned.diagnostics)
    held: tuple[str, ...] = ()
    if request.hold_back and has_errors(diags):
        hb = holdback(checked.program, diags, checked.graph)
        if not hb.partial:
            result = CompileResult(tuple(diags), planned.sources, checked.program, planned.plan)
            return dataclasses.replace(unit, result=result, stopped=True)
        held, diags = hb.tenants, sorted_diagnostics(diags + list(hb.notes))
    rendered = render_objects(checked.program, planned.plan, request.commit, request.kube_version, request.target,
                              planned.topology.topology, planned.policies, hold=held, pack=request.pack)
    result = CompileResult(tuple(diags), planned.sources, checked.program, planned.plan, rendered,
                           topology=planned.topology, policies=planned.policies)
    return dataclasses.replace(unit, result=result)


def write(driver: Driver, unit: Unit) -> Unit:
    """Every output under the request's `out_dir`, replaced as a unit (`outputs.write_outputs`)."""
    out = unit.request.out_dir
    if out is None or unit.result is None:
        raise ValueError("the write stage needs a rendered result and an output directory")
    return dataclasses.replace(unit, written=tuple(write_outputs(unit.result, out)))


@dataclass(frozen=True)
class Step:
    stage: Stage
    run: Callable[[Driver, Unit], Unit]


STAGES: tuple[Step, ...] = (
    Step(Stage.LOAD, load),
    Step(Stage.CHECK, check),
    Step(Stage.GRAPH, graph),
    Step(Stage.PLAN, plan),
    Step(Stage.RENDER, render),
    Step(Stage.WRITE, write),
)
