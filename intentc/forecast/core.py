"""The forecast: the plan, what the cluster did so far, and the rest re-planned on live state (pure).

`forecast(program, plan, topology, observation, now)` gives every intent
of the plan a phase, its planned and actual times and an ETA.  It decides
nothing about the cluster and reads no clock: `now` is passed in, so the
same plan and observation always give the same forecast (the daemon, the
`intentc status` command and the tests agree by construction).

What has happened is taken as the cluster says it (`Observation`, read
from the API server); what has not happened yet is planned again by the
existing planner (`plan.planner.make_plan`) on the live state, not by a
second scheduler here.  The part that has not started is handed to it as
a program in which the past is fixed:

* an intent that succeeded stays in the program as a job of no GPUs and
  no duration, so what waits for it is ready at once (its edges stay; a
  dependant is never started before its dependency, as in the plan);
* a Running one stays as a job of no GPUs lasting the rest of its declared
  `duration` from its actual start (open-ended for `serve`), and the GPUs
  its pods hold are occupancy (`Busy`) until then: its dependants become
  ready when it is expected to end, and nothing else is placed on its GPUs
  before that.  A job that has overrun its `duration` is *schedule drift*:
  its end is unknown, so it is expected to end now, and every intent that
  waits for it is pushed by as much as it overran;
* a Failed one, and every intent that waits for it at any depth, is left
  out and reported Blocked (it will not run until someone acts);
* nodes the observation says are unusable (NotReady, cordoned, tainted —
  the GPU-observation taint of the fallback chain included — or gone) are
  unavailable, and GPUs held by pods outside the program are busy for good,
  exactly as live planning treats them (`plan/live_occupancy.py`).  An intent planned
  onto such a node is therefore re-placed by the planner, and its ETA moves
  with where it now fits.

Of the past, the re-plan holds only what an intent still to come waits for
(at any depth): a finished or running intent nothing to come waits for
decides no start, and what a running one holds is occupancy either way.
Its cost then follows the part that has not started rather than the whole
program (see `_needed` for what it can change).

The re-plan runs on plan time starting at `now`, so its times are shifted
by `now` back into the plan's time.  Running jobs' GPUs count toward no
tenant quota in the re-plan (they are occupancy, not the tenant's jobs):
the forecast may start a tenant's next intent a little early when the
tenant is at its quota, never late.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

from intentc import collector, ir
from intentc.forecast.model import Forecast, IntentForecast, JobObservation, Observation, Phase
from intentc.forecast.observe import observe
from intentc.graph.digraph import duration_seconds
from intentc.ir.duration import format_duration
from intentc.plan.cluster_nodes import with_cluster_nodes
from intentc.plan.model import Busy, Occupancy, Placement, Plan
from intentc.plan.planner import make_plan, unique_intents
from intentc.plan.shape import shape
from intentc.policy import BUILTIN, Policies
from intentc.topology.load import LoadedTopology


def phase_of(job: JobObservation | None) -> Phase:
    """The phase the cluster shows for one intent's workload (None: nothing created yet)."""
    if job is None:
        return Phase.QUEUED
    if job.failed is not None:
        return Phase.FAILED
    if job.completed is not None:
        return Phase.SUCCEEDED
    if job.running:
        return Phase.RUNNING
    if job.admitted or (job.admitted is None and not job.suspended):
        return Phase.ADMITTED
    return Phase.QUEUED


def _plan_s(t: float, epoch: float) -> int:
    """A Unix time as plan seconds after `epoch` (floored: the same second for everyone)."""
    return math.floor(t - epoch)


def _carried(roots: set[str], waves: tuple[tuple[str, ...], ...], after: dict[str, tuple[str, ...]]
             ) -> dict[str, tuple[str, ...]]:
    """Per intent, the `roots` it waits for at any depth (sorted; only intents that wait for
    one): one pass in wave order, each intent's set from its dependencies' sets, so a forecast
    of a deep plan does not walk every chain again for every intent."""
    if not roots:
        return {}
    sets: dict[str, frozenset[str]] = {}
    for wave in waves:
        for n in wave:
            got: set[str] = set()
            for d in after.get(n, ()):
                got |= sets.get(d, frozenset())
                if d in roots:
                    got.add(d)
            if got:
                sets[n] = frozenset(got)
    return {n: tuple(sorted(v)) for n, v in sets.items()}


def _behind(eta_start: int | None, eta_end: int | None, placed: Placement | None) -> int | None:
    if placed is None or eta_start is None:
        return None
    if placed.end_s is None or eta_end is None:
        return eta_start - placed.start_s
    return eta_end - placed.end_s


def forecast(program: ir.Program, plan: Plan, topology: LoadedTopology, observation: Observation, now: float,
             seed: int = 0, policies: Policies = BUILTIN) -> Forecast:
    """Every intent of `plan` as of `now` (a Unix time): see the module docstring.

    `program` and `topology` are those the plan was made from (the topology
    with the cluster's new GPU nodes added, `plan/cluster_nodes.py`, when the
    caller reads a live cluster), `seed` and `policies` the plan's own."""
    # what is built here (the shape, the program of the rest, the records) is acyclic and lives
    # until the forecast returns: the cyclic collector would walk it, and the plan and
    # program the caller holds, again and again for nothing (collector.py)
    with collector.paused():
        return _forecast(program, plan, topology, observation, now, seed, policies)


def _forecast(program: ir.Program, plan: Plan, topology: LoadedTopology, observation: Observation, now: float,
              seed: int, policies: Policies) -> Forecast:
    epoch = observation.epoch if observation.epoch is not None else now
    now_s = max(_plan_s(now, epoch), 0)
    intents = unique_intents(program)
    by_name = {i.name: i for i in intents}
    durations = {i.name: duration_seconds(i) for i in intents}
    shaped, _ = shape(program, durations)
    after = shaped.after
    jobs = {j.intent: j for j in observation.jobs}
    phases = {n: phase_of(jobs.get(n)) for n in by_name}
    failed = {n for n, ph in phases.items() if ph is Phase.FAILED}
    waiting = (Phase.QUEUED, Phase.ADMITTED)
    failed_before = _carried(failed, shaped.waves, after)
    blocked = {n for n in failed_before if phases[n] in waiting}

    # what the cluster did so far, in plan time; a Running job's expected end
    actual_start: dict[str, int] = {}
    actual_end: dict[str, int] = {}
    expected_end: dict[str, int | None] = {}
    drift: set[str] = set()
    for n, ph in phases.items():
        job = jobs.get(n)
        if job is None or ph in waiting:
            continue
        started = job.started if job.started is not None else job.created
        actual_start[n] = _plan_s(started, epoch)
        if ph is Phase.SUCCEEDED and job.completed is not None:
            actual_end[n] = _plan_s(job.completed, epoch)
        elif ph is Phase.FAILED and job.failed is not None:
            actual_end[n] = _plan_s(job.failed, epoch)
        elif ph is Phase.RUNNING:
            intent = by_name[n]
            if intent.action.kind == ir.ActionKind.SERVE.value:
                expected_end[n] = None
            else:
                due = actual_start[n] + durations[n]
                if due < now_s:
                    drift.add(n)
                expected_end[n] = max(due, now_s)

    late_before = _carried(drift, shaped.waves, after)

    # the rest, re-planned on the live state from now on
    unusable = {o.name: o.problem for o in observation.nodes if o.problem is not None}
    present = {o.name for o in observation.nodes}
    for node in _node_names(topology):
        if node not in present:
            unusable.setdefault(node, "not in the cluster")
    busy: list[Busy] = list(observation.foreign)
    kept: list[ir.Intent] = []
    needed = _needed(phases, blocked, after)
    for n in sorted(by_name):
        intent, ph = by_name[n], phases[n]
        if ph is Phase.FAILED or n in blocked:
            continue
        if n not in needed:
            if ph is Phase.RUNNING:         # what it holds is still occupancy
                busy += [Busy(b.node, b.gpus, _left(expected_end[n], now_s), intent.tenant) for b in jobs[n].gpus
                         if b.node not in unusable]
            continue
        if ph is Phase.SUCCEEDED:
            kept.append(_fixed(intent, 0))
        elif ph is Phase.RUNNING:
            remaining = _left(expected_end[n], now_s)
            kept.append(_fixed(intent, remaining))
            busy += [Busy(b.node, b.gpus, remaining, intent.tenant) for b in jobs[n].gpus
                     if b.node not in unusable]
        else:
            kept.append(intent)
    occupied = Occupancy(tuple(sorted(busy, key=lambda b: (b.node, b.gpus, b.until_s is None, b.until_s or 0,
                                                           b.tenant or ""))),
                         frozenset(unusable))
    rest, _ = make_plan(replace(program, intents=tuple(kept)), topology, seed, occupied, policies)
    again = {p.intent: p for p in rest.placements}
    refused = {u.intent: u for u in rest.unplaced}
    planned = {p.intent: p for p in plan.placements}
    not_planned = {u.intent: u for u in plan.unplaced}

    out: list[IntentForecast] = []
    for n in sorted(by_name):
        ph, p = phases[n], planned.get(n)
        start: int | None
        end: int | None
        planned_nodes = p.nodes if p is not None else ()
        job = jobs.get(n)
        nodes = tuple(sorted({b.node for b in job.gpus})) if job is not None and job.gpus else planned_nodes
        # each record made once, with what its phase says (a dataclass `replace` per intent
        # costs more than the rest of this loop)
        more: dict[str, Any]
        if ph is Phase.SUCCEEDED or ph is Phase.FAILED:
            start, end = actual_start.get(n), actual_end.get(n)
            reason = f"{jobs[n].failure or 'failed'}" if ph is Phase.FAILED else ""
            more = {"eta_start_s": start, "eta_end_s": end, "reason": reason,
                    "behind_s": _behind(start, end, p) if ph is Phase.SUCCEEDED else None}
        elif ph is Phase.RUNNING:
            start, end = actual_start[n], expected_end[n]
            reason = ""
            if n in drift:
                over = now_s - (start + durations[n])
                reason = (f"schedule drift: running {format_duration(over)} past its declared duration "
                          f"({format_duration(durations[n])})")
            more = {"eta_start_s": start, "eta_end_s": end, "drift": n in drift, "reason": reason,
                    "behind_s": _behind(start, end, p)}
        elif n in blocked:
            more = {"phase": Phase.BLOCKED, "reason": "waits for failed " + ", ".join(failed_before[n])}
        elif n in refused or p is None:
            why = refused.get(n) or not_planned.get(n)
            more = {"phase": Phase.BLOCKED,
                    "reason": f"cannot be placed on the live cluster: {why.message}" if why is not None
                    else "not in the plan"}
        else:
            q = again[n]
            start, end = now_s + q.start_s, None if q.end_s is None else now_s + q.end_s
            late = late_before.get(n, ())
            reasons = []
            moved_off = [f"{node} {unusable[node]}" for node in planned_nodes if node in unusable]
            if moved_off:
                reasons.append("re-placed: " + "; ".join(moved_off))
            if late:
                reasons.append("waits for " + ", ".join(late) + " (schedule drift)")
            more = {"eta_start_s": start, "eta_end_s": end, "behind_s": _behind(start, end, p), "delayed_by": late,
                    "reason": "; ".join(reasons)}
            if q.allocations:
                nodes = q.nodes
        out.append(IntentForecast(
            n, by_name[n].tenant, more.pop("phase", ph),
            planned_start_s=p.start_s if p is not None else None, planned_end_s=p.end_s if p is not None else None,
            actual_start_s=actual_start.get(n), actual_end_s=actual_end.get(n), planned_nodes=planned_nodes,
            nodes=nodes, **more))
    pushed: dict[str, list[str]] = {}
    for f in out:
        for d in f.delayed_by:
            pushed.setdefault(d, []).append(f.intent)
    out = [_with_knock_on(f, pushed[f.intent], out) if f.intent in pushed else f for f in out]
    return Forecast(epoch, now_s, tuple(out), observation.notes)


def on_cluster(program: ir.Program, plan: Plan, loaded: LoadedTopology, nodes: Sequence[Mapping[str, Any]],
               pods: Sequence[Mapping[str, Any]], jobs: Sequence[Mapping[str, Any]],
               workloads: Sequence[Mapping[str, Any]], now: float, seed: int = 0, policies: Policies = BUILTIN,
               only_topology_nodes: bool = False) -> Forecast:
    """`forecast` on what the API server shows: the topology with the cluster's GPU nodes it
    does not list (`plan.cluster_nodes`; not with `only_topology_nodes`), the workloads
    observed on it, the rest re-planned.  `intentc status` and the daemon's forecast pass
    both forecast through here, so the two cannot come to read a cluster differently.  The
    notes on the nodes taken from the cluster come before the observation's."""
    live, notes = (loaded, ()) if only_topology_nodes else with_cluster_nodes(loaded, nodes)
    observed = observe(program, live.topology, nodes, pods, jobs, workloads)
    made = forecast(program, plan, live, observed, now, seed, policies)
    return replace(made, notes=notes + made.notes) if notes else made


def _with_knock_on(late: IntentForecast, names: list[str], records: list[IntentForecast]) -> IntentForecast:
    """An overrunning intent with the intents it pushes and by how much at most (their lag)."""
    named = set(names)
    lag = max((f.behind_s or 0 for f in records if f.intent in named), default=0)
    knock_on = f"pushes {len(names)} dependant(s)" + (f" by up to {format_duration(lag)}" if lag > 0 else "")
    return replace(late, pushed=tuple(names), reason=f"{late.reason}; {knock_on}" if late.reason else knock_on)


def _needed(phases: Mapping[str, Phase], blocked: set[str], after: Mapping[str, tuple[str, ...]]) -> set[str]:
    """The intents the re-plan must hold: those still to come, and everything they wait for
    at any depth.  A finished or running intent nothing to come waits for decides no start
    (what a running one holds stays occupancy), and leaving it out changes no wave of the
    rest (an intent's wave is read from what it waits for only), so the re-plan, which
    otherwise walks the whole past at every size, gives the same times without it.  One
    difference by design: where the planner tries several orderings (a small rest,
    `planner.PORTFOLIO_MAX_INTENTS`) it compares their ends, and the end of a running job
    nothing waits for no longer masks theirs."""
    waiting = (Phase.QUEUED, Phase.ADMITTED)
    todo = [n for n, ph in phases.items() if ph in waiting and n not in blocked]
    seen = set(todo)
    while todo:
        for d in after.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def _left(expected_end: int | None, now_s: int) -> int | None:
    """Seconds a running intent has left (None: open-ended)."""
    return None if expected_end is None else expected_end - now_s


def _node_names(topology: LoadedTopology) -> tuple[str, ...]:
    return tuple(n.name for n in topology.topology.nodes)


def _fixed(intent: ir.Intent, seconds: int | None) -> ir.Intent:
    """`intent` as a job of the re-plan whose past is fixed: no GPUs of its own (what it holds
    is occupancy) and `seconds` left to run (None: open-ended, a running `serve`)."""
    c = intent.constraints
    duration = c.duration if seconds is None else format_duration(max(seconds, 0))
    return replace(intent, constraints=replace(c, gpus=None, duration=duration))
