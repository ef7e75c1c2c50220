"""The `Reloader`: one compile kept warm, updated file by file (see the package docstring).

It owns the per-file table (`files.FileTable`) and the snapshot in force;
`update` decides, from the changed files only (`keys`), whether the
cross-reference passes and the planner must run again, then renders
incrementally (`render.Renderer`) and swaps the new snapshot in.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from bisect import bisect_left, bisect_right
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence


from intentc import collector
from intentc.daemon.reload import references
from intentc.daemon.reload.files import FileTable
from intentc.graph import digraph
from intentc.pipeline.result import MANIFESTS_DIR
from intentc.daemon.reload.keys import (
    declares,
    plan_inputs,
    planning_key,
    positions,
    reference_inputs,
    per_intent_inputs,
    tenant_key,
)
from intentc.daemon.reload.render import Change, Render, Renderer
from intentc.daemon.reload.state import FileState, ReloadResult, Snapshot
from intentc.daemon.reload.texts import CaretTexts, files_of
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.ir import Intent, Program, Tenant
from intentc.pipeline.checked import global_pass_findings
from intentc.pipeline.driver import Driver
from intentc.pipeline.findings import prefer_specific
from intentc.pipeline.stages import TopologyFile, index_plan, load_file, place
from intentc.plan.incremental import Fallback, PlanIndex, Replanned
from intentc.plan.jsonio import plan_to_json
from intentc.plan.model import Plan
from intentc.policy.tags import with_rules
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.packed import PackedText
from intentc.render.targets import DEFAULT_TARGET
from intentc.frontend.sources import (
    OUTPUT_MARKER,
    SOURCE_SUFFIXES,
    Exclusions,
    SourceFile,
    discover,
    read_source,
    root_of,
)
from intentc.topology.load import LoadedTopology


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _graph_json(program: Program) -> str:
    g = digraph.build(program)[0]
    return digraph.to_json(g, digraph.waves(g))


def _same(changes: Sequence[Change], project: Callable[[FileState | None], Any]) -> bool:
    return all(project(before) == project(now) for _, before, now in changes)


def _unmoved(changes: Sequence[Change], pointed: set[str]) -> bool:
    """The changed files that kept findings point into kept every position."""
    return all(positions(before) == positions(now) for name, before, now in changes if name in pointed)


class Reloader:
    def __init__(self, paths: Sequence[str], topology: str, commit: str,
                 kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
                 seed: int = 0, background: bool = True) -> None:
        """`background`: after an incremental plan, run the full planner in a thread and swap
        its plan in if it differs (False: the incremental plan stays until the next full one)."""
        self.paths = tuple(paths)
        # the compile driver of these files: its stages parse, check and plan; it reads the tag rules
        # (intentc/policy) once, as `compile` does (editing policies/ needs a restart) and the topology
        self._driver = Driver(self.paths)
        self.policies, self._policy_diags, self._policy_texts = self._driver.policy
        self.topology_path = topology
        self.commit = commit
        self.kube_version = kube_version
        self.target = target
        self.seed = seed
        self._renderer = Renderer(commit, kube_version, target, self.policies)
        self._table = FileTable()
        self._shown: dict[str, str] = {}        # texts the reports' carets read, until the file changes
        self._topology = TopologyFile(topology, None, (), None)       # read by the first load
        self._topology_generation = 0
        self._discovery: tuple[Diagnostic, ...] = ()
        self._current: Snapshot | None = None
        self._lock = threading.Lock()
        self._generation = 0
        # the incremental planner's index of the plan in force, and the full re-plan behind it
        self._index: PlanIndex | None = None
        self._background = background
        self._full_wanted = False
        self._full_thread: threading.Thread | None = None
        self._listeners: list[Callable[[ReloadResult], None]] = []

    # -- the plan in force --------------------------------------------------
    @property
    def current(self) -> Snapshot | None:
        return self._current

    # -- which files belong to the run --------------------------------------
    def _roots(self) -> list[tuple[Path, str]]:
        return [(Path(p).resolve(), p) for p in self.paths]

    def display_name(self, path: str | Path) -> str | None:
        """The name `discover` gives a file, or None when it is not an input."""
        full = Path(path).resolve()
        for root, given in self._roots():
            if full == root:
                return Path(given).as_posix()
            try:
                rel = full.relative_to(root)
            except ValueError:
                continue
            if any(part.startswith(".") for part in rel.parts[:-1]) or not full.name.endswith(SOURCE_SUFFIXES) \
                    or (full.parent.name == MANIFESTS_DIR and (full.parent.parent / OUTPUT_MARKER).is_file()):
                # what compile wrote is never an input
                return None
            rules = Exclusions.of(root_of(given), ())
            rel_dir = rules.relative(str(full.parent)) if rules.specs else None
            if rel_dir is not None and rules.excluded(rel_dir + full.name):      # .intentcignore, as discover
                return None
            return (Path(given) / rel).as_posix()
        return None

    def is_topology(self, path: str | Path) -> bool:
        """The topology file, or a file beside it (its nvidia-smi matrices)."""
        topo = Path(self.topology_path).resolve()
        full = Path(path).resolve()
        return full == topo or (full.parent == topo.parent and self.display_name(full) is None)

    # -- entry points ---------------------------------------------------------
    def load(self) -> ReloadResult:
        """The first, full compile (every file parsed)."""
        files, diags = discover(self.paths)
        self._discovery = tuple(diags)
        names = [f.as_posix() for f in files]
        del files               # a Path object per file, held through the whole load otherwise
        result = self._update(names, topology=True, initial=True)
        # What the load kept lives as long as the snapshot: out of the collector's way (a
        # full collection walking 100,000 intents' objects stalled a reload by tens of ms),
        # once the load's cyclic garbage is gone (frozen, it would be kept for good).
        gc.collect()
        gc.freeze()
        collector.trim()        # give back what the render and the index freed after the planner's trim
        return result

    def update(self, changed: Iterable[str | Path]) -> ReloadResult:
        """Apply a batch of changed paths (added, modified or deleted)."""
        names: list[str] = []
        topology = False
        for p in changed:
            name = self.display_name(p)
            if name is not None:
                names.append(name)
            if self.is_topology(p):
                topology = True
        return self._update(sorted(set(names)), topology=topology, initial=False)

    # -- the work ---------------------------------------------------------------
    def _read(self, name: str) -> bool:
        """Re-parse `name` when its bytes changed; False when nothing changed."""
        self._shown.pop(name, None)
        path = Path(name)
        if not path.is_file():
            gone = name in self._table
            if gone:
                self._table.set(name, None)
            return gone
        source, read_diags = read_source(path)
        if source is None:
            self._table.set(name, FileState(Program(), (), (), tuple(read_diags)))
            return True
        digest = _digest(source.text)
        kept = self._table.get(name)
        if kept is not None and kept.digest == digest:
            return False
        if source.path == name:
            # one string for the file's name, the table's key and every span's, not three copies
            source = SourceFile(name, source.text)
        loaded = load_file(source)
        self._table.set(name, FileState(loaded.program, loaded.parsed, loaded.local, tuple(read_diags), digest),
                        source.text)
        return True

    def _load_topology(self) -> None:
        self._topology = self._driver.topology(self.topology_path, fresh=True)
        self._topology_generation += 1

    def _update(self, names: list[str], topology: bool, initial: bool) -> ReloadResult:
        # No collection walks the load or a swap (collector.py); nothing is frozen here:
        # the graph and the planner leave cyclic garbage (networkx graphs, the scheduler's
        # records) that freezing would keep for good, growing with every load.
        with self._lock, collector.paused():
            reparsed = tuple(n for n in names if self._read(n))
            if topology or initial:
                self._load_topology()
            return self._compile(tuple(names), reparsed, topology or initial, initial)

    def _base_diagnostics(self, global_diags: Sequence[Diagnostic],
                          topo_diags: Sequence[Diagnostic]) -> list[Diagnostic]:
        """Everything reported besides the plan's findings."""
        diags = list(self._discovery) + self._table.diagnostics() + list(global_diags)
        # W1021 about a tag a repository rule declares is dropped (intentc.policy.tags)
        return with_rules(prefer_specific(diags), self.policies) + list(topo_diags) + list(self._policy_diags)

    def _compile(self, names: tuple[str, ...], reparsed: tuple[str, ...], topology: bool,
                 initial: bool = False) -> ReloadResult:
        """Passes, plan, render and swap, each redone only as far as the changes reach."""
        previous = self._current
        loaded, topo_diags, topo_text = self._topology.loaded, self._topology.diagnostics, self._topology.text
        program = self._table.program()
        changes = self._table.changes()             # since the snapshot in force
        dirty = {name for name, _, _ in changes}
        if previous is not None and _same(changes, reference_inputs) and \
                _unmoved(changes, dirty & previous.global_files):
            global_diags = previous.global_diagnostics    # same names and references: same findings
            if not _same(changes, per_intent_inputs):
                global_diags = references.patched(global_diags, program, changes)
        elif previous is not None and not topology and self._index is not None and \
                self._index.plan is previous.plan and references.unbroken(self._index, program, changes):
            # names or references changed, none declared twice or left dangling (references.py)
            global_diags = references.patched(previous.global_diagnostics, program, changes)
        else:
            global_diags = tuple(global_pass_findings(program))
        # Nothing any file reports changed: the report is the previous one (it held no error).
        quiet = previous is not None and not topology and global_diags is previous.global_diagnostics and \
            not any(b is not None and b.diagnostics or a is not None and a.diagnostics for _, b, a in changes)
        diags: list[Diagnostic] = []
        if not quiet:
            diags = self._base_diagnostics(global_diags, topo_diags)
        known = {**self._policy_texts, **self._table.texts()}
        if topo_text is not None:
            known[Path(self.topology_path).as_posix()] = topo_text

        def failed(found: Sequence[Diagnostic]) -> ReloadResult:
            report = tuple(sorted_diagnostics(found))
            return ReloadResult(False, report, CaretTexts(known, report, self._shown), names, reparsed, (), False,
                                self._current)
        if loaded is None or has_errors(diags):
            return failed(diags)
        # A kept plan keeps its warnings, which is only right while the
        # positions they point at did not move.
        same_topology = previous is not None and previous.topology_generation == self._topology_generation
        reuse = (same_topology and previous is not None and _same(changes, plan_inputs)
                 and _unmoved(changes, dirty & previous.plan_files))
        patched = None if reuse or not same_topology or previous is None else self._incremental(previous, changes)
        index: PlanIndex | None = None
        if reuse and previous is not None:
            plan, plan_text, graph_text = previous.plan, previous.plan_text, previous.graph_text
            plan_diags, plan_files = previous.plan_diagnostics, previous.plan_files
        elif isinstance(patched, Replanned) and previous is not None:
            plan = patched.plan
            # kept sorted (by file first): the refreshed files' blocks are swapped, not filtered out
            plan_diags = _report_patched(previous.plan_diagnostics, patched.files, (), patched.diagnostics)
            plan_files = (previous.plan_files - patched.files) | files_of(patched.diagnostics)
            plan_text, graph_text = _plan_text(plan), _graph_text(program)
        else:
            if initial:
                # what the load parsed makes no cycles (and load() freezes it afterwards
                # anyway): out of the walk of the collection after the planner
                gc.freeze()
            plan, plan_diags = self._plan_in_full(program, loaded, previous.plan if previous is not None else None)
            index = index_plan(program, plan, loaded, self.seed, self.policies)
            plan_files = files_of(plan_diags)
            plan_text, graph_text = _plan_text(plan), _graph_text(program)
        if quiet and reuse and previous is not None:
            report = previous.diagnostics
        elif quiet and isinstance(patched, Replanned) and previous is not None:
            # nothing else reported changed: only the refreshed files' part of the report moves
            report = _report_patched(previous.diagnostics, patched.files,
                                     self._base_diagnostics(global_diags, topo_diags), patched.diagnostics)
            if has_errors(patched.diagnostics):
                return failed(report)
        else:
            if quiet and previous is not None:
                diags = self._base_diagnostics(global_diags, topo_diags)
            report = tuple(sorted_diagnostics(diags + list(plan_diags)))
            if has_errors(report):
                return failed(report)
        if previous is not None and not any(declares(b, "datasets") or declares(a, "datasets")
                                            for _, b, a in changes):
            uris = previous.uris
        else:
            uris = {d.name: d.uri for d in program.datasets}
        moved = patched.moved if isinstance(patched, Replanned) else None
        made = self._renderer.render(program, plan, uris, previous, changes if reuse or moved is not None else None,
                                     loaded.topology, moved, *((patched.waves, patched.gone)
                                                               if isinstance(patched, Replanned) else ()))
        self._generation += 1
        snapshot = Snapshot(
            self._generation, program, plan, made.rendered, report, plan_text, graph_text,
            self._topology_generation, plan_diags, uris, global_diags, made.intents, made.setup, made.setup_texts,
            loaded.topology,
            previous.global_files if previous is not None and global_diags is previous.global_diagnostics
            else files_of(global_diags),
            plan_files, loaded=loaded)
        self._current = snapshot      # the atomic swap: readers see the old or the new snapshot
        if reuse and self._index is not None and self._index.plan is plan:
            self._index.refresh(i for _, _, a in changes for i in (a.program.intents if a is not None else ()))
        self._table.settle()
        note = ""
        if isinstance(patched, Replanned):
            assert self._index is not None
            self._index.apply(patched)
            self._index.refresh(i for _, _, a in changes for i in (a.program.intents if a is not None else ()))
            if patched.replaced or patched.gone or patched.terms:
                note = f"incremental plan: {len(patched.replaced)} intents re-placed" + (
                    f", {len(patched.gone)} removed" if patched.gone else "") + (
                    f", tenants {', '.join(sorted(patched.terms))} changed" if patched.terms else "")
                self._want_full_plan()
            # else only findings were redone (their positions moved): the plan is the full one
        elif not reuse:
            self._set_index(index)
            self._full_wanted = False
        return ReloadResult(True, report, CaretTexts(known, report, self._shown), names, reparsed, made.rerendered,
                            not reuse, snapshot, note)

    # -- the incremental plan, and the full one behind it ---------------------------
    def _incremental(self, previous: Snapshot, changes: Sequence[Change]) -> Replanned | Fallback:
        """The plan in force patched (plan/incremental.py) for what the changed files edited,
        added or removed: intents (their dependency edges included) and tenants.  A
        topology declared in an input file needs the full planner."""
        index = self._index
        if index is None or index.plan is not previous.plan:
            return Fallback("no index of the plan in force")
        before: dict[str, Intent] = {}
        after: dict[str, Intent] = {}
        tenants_before: dict[str, Tenant] = {}
        tenants_after: dict[str, Tenant] = {}
        for _, b, a in changes:
            for state, intents, declared in ((b, before, tenants_before), (a, after, tenants_after)):
                if state is None:
                    continue
                program = state.program
                if program.topologies:
                    return Fallback("a topology is declared in a changed file")
                intents.update((i.name, i) for i in program.intents)
                declared.update((t.name, t) for t in program.tenants)
        edited = [i for n, i in after.items() if n not in before or planning_key(before[n]) != planning_key(i)]
        removed = [n for n in before if n not in after]
        tenants: dict[str, Tenant | None] = {
            n: tenants_after.get(n) for n in tenants_before.keys() | tenants_after.keys()
            if n not in tenants_before or n not in tenants_after
            or tenant_key(tenants_before[n]) != tenant_key(tenants_after[n])}

        def file_intents(name: str) -> Sequence[Intent]:
            state = self._table.get(name)
            return state.program.intents if state is not None else ()
        return index.replan(edited, file_intents, {name for name, _, _ in changes}, removed, tenants)

    def _plan_in_full(self, program: Program, loaded: LoadedTopology,
                      in_force: Plan | None = None) -> tuple[Plan, tuple[Diagnostic, ...]]:
        """The full planner's plan and findings.

        The planner's working set is cyclic garbage (networkx graphs, the scheduler's
        records) and the collector is paused around a reload: it is collected here, and
        the heap's freed pages given back, not at the end of the load, where it sat under
        the render (docs/reload.md, Memory: the load's peak at 100,000 intents).  The heap's
        free pages are given back before it too: what the snapshot it replaces and the
        daemon's previous desired state freed since the last full plan.
        The records the new plan decides as `in_force` did are `in_force`'s, shared."""
        gc.collect()
        collector.trim()
        plan, found = place(program, loaded, self.seed, self.policies, previous=in_force)
        gc.collect()
        collector.trim()
        return plan, tuple(sorted_diagnostics(found))

    def _set_index(self, index: PlanIndex | None) -> None:
        """The index of the plan now in force (under the lock); the one it replaces is used no
        more and may be frozen (load() and the background swap freeze the heap): its cycles
        are broken so that it is freed at once (`PlanIndex.discard`)."""
        old, self._index = self._index, index
        if old is not None and old is not index:
            old.discard()

    def listen(self, listener: Callable[[ReloadResult], None]) -> None:
        """`listener` gets the result of each swap made in the background (a full re-plan
        replacing an incremental one), from the background thread."""
        self._listeners.append(listener)

    def _want_full_plan(self) -> None:
        """After an incremental swap (under the lock): plan the program in force in full, in
        the background, and swap that plan in if it differs (`_full_replan`)."""
        self._full_wanted = True
        if self._background and (self._full_thread is None or not self._full_thread.is_alive()):
            self._full_thread = threading.Thread(target=self._full_replan, name="intentc-full-plan", daemon=True)
            self._full_thread.start()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the background full re-plan; True when none runs any more."""
        t = self._full_thread
        if t is not None:
            t.join(timeout)
        return t is None or not t.is_alive()

    def _full_replan(self) -> None:
        """The background full re-plan: the planner runs without the lock (reloads go on; a
        newer incremental swap makes it start over on the newer program), the swap takes it."""
        while True:
            with self._lock:
                snap, loaded = self._current, self._topology.loaded
                if not self._full_wanted or snap is None or loaded is None:
                    return
                self._full_wanted = False
            plan, plan_diags = self._plan_in_full(snap.program, loaded, snap.plan)
            if has_errors(plan_diags):
                # the full planner refuses what the incremental plan placed (it moves others,
                # in another order): the incremental plan stays, it is valid
                return
            while True:
                with self._lock:
                    current = self._current
                    if self._full_wanted or current is None or current.plan is not snap.plan:
                        break                                   # planned again since: start over
                    if plan == snap.plan:
                        if self._index is None or self._index.plan is not snap.plan:
                            self._set_index(index_plan(snap.program, snap.plan, loaded, self.seed, self.policies))
                        return          # else the index in force (patched edit by edit) is this plan's
                made = self._renderer.render(current.program, plan, current.uris, current, None, current.topology)
                with self._lock:
                    if self._current is not current:
                        continue                                # an edit came in meanwhile: render again
                    result = self._swap_full(current, plan, plan_diags, _graph_text(current.program), made)
                    if self._index is not None and self._index.plan is current.plan:
                        # the index of the program in force: its occupancy filed again from the
                        # full plan, not a second index and dependency graph built beside it
                        self._index.rebase(plan)
                    else:
                        self._set_index(index_plan(current.program, plan, loaded, self.seed, self.policies))
                    # long-lived and acyclic, like what the load built: out of the collector's
                    # walks, once the re-plan's cyclic garbage is gone (frozen, it stays for good)
                    gc.collect()
                    gc.freeze()
                collector.trim()    # what the render and the rebase freed (the replaced snapshot goes on return)
                for listener in self._listeners:
                    listener(result)
                return

    def _swap_full(self, current: Snapshot, plan: Plan, plan_diags: tuple[Diagnostic, ...], graph_text: PackedText,
                   made: Render) -> ReloadResult:
        """Swap a full plan in for the incremental one of `current` (under the lock)."""
        loaded, topo_diags, topo_text = self._topology.loaded, self._topology.diagnostics, self._topology.text
        report = tuple(sorted_diagnostics(self._base_diagnostics(current.global_diagnostics, topo_diags)
                                          + list(plan_diags)))
        self._generation += 1
        snapshot = replace(current, generation=self._generation, plan=plan, rendered=made.rendered,
                           diagnostics=report, plan_text=_plan_text(plan), graph_text=graph_text,
                           plan_diagnostics=plan_diags, intents=made.intents, setup=made.setup,
                           setup_texts=made.setup_texts, plan_files=files_of(plan_diags))
        self._current = snapshot
        known = {**self._policy_texts, **self._table.texts()}
        if topo_text is not None:
            known[Path(self.topology_path).as_posix()] = topo_text
        return ReloadResult(True, report, CaretTexts(known, report, self._shown), (), (), made.rerendered, True,
                            snapshot, "full plan swapped in for the incremental one")


def _report_patched(report: tuple[Diagnostic, ...], files: Iterable[str], others: Sequence[Diagnostic],
                    fresh: Sequence[Diagnostic]) -> tuple[Diagnostic, ...]:
    """A sorted report (`sorted_diagnostics`: by file first) with each of `files`' part made
    again from the findings of the other steps (`others`, unchanged) and the plan's `fresh`
    ones: at 100,000 intents the report holds 10,000 plan warnings, too many to sort, or
    even filter, per edit.  (The plan's own findings are kept sorted and patched alike.)"""
    out = list(report)
    for f in sorted(files):
        lo = bisect_left(out, f, key=_file_of)
        hi = bisect_right(out, f, key=_file_of)
        out[lo:hi] = sorted_diagnostics([d for d in others if d.span.file == f] + [d for d in fresh if d.span.file == f])
    return tuple(out)


def _file_of(d: Diagnostic) -> str:
    return d.span.file


def _plan_text(plan: Plan) -> PackedText:
    """plan.json, made when first read (`watch --out`; the daemon never reads it): making it
    for every re-plan would cost time and a transient copy of the whole plan as text."""
    return PackedText(make=partial(plan_to_json, plan))


def _graph_text(program: Program) -> PackedText:
    """graph.json, likewise; the graph is built again on reading rather than kept meanwhile."""
    return PackedText(make=partial(_graph_json, program))
