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
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from intentc import graph
from intentc.compile import MANIFESTS_DIR
from intentc.daemon.reload.files import FileTable
from intentc.daemon.reload.keys import declares, plan_inputs, positions, reference_inputs
from intentc.daemon.reload.render import Change, Renderer
from intentc.daemon.reload.state import FileState, ReloadResult, Snapshot
from intentc.daemon.reload.texts import CaretTexts, files_of
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.frontend import FileResult, parse_source
from intentc.frontend.batch import collector_paused
from intentc.ir import Program
from intentc.passes import GLOBAL_PASSES, LOCAL_PASSES, run_passes
from intentc.pipeline import prefer_specific
from intentc.plan.jsonio import plan_to_json
from intentc.plan.planner import make_plan
from intentc.policy.load import load_policies
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.packed import PackedText
from intentc.render.targets import DEFAULT_TARGET
from intentc.sources import (
    OUTPUT_MARKER,
    SOURCE_SUFFIXES,
    Exclusions,
    discover,
    read_source,
    read_text,
    root_of,
)
from intentc.topology.load import LoadedTopology, load_topology


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _graph_json(program: Program) -> str:
    g = graph.build(program)[0]
    return graph.to_json(g, graph.waves(g))


def _same(changes: Sequence[Change], project: Callable[[FileState | None], Any]) -> bool:
    return all(project(before) == project(now) for _, before, now in changes)


def _unmoved(changes: Sequence[Change], pointed: set[str]) -> bool:
    """The changed files that kept findings point into kept every position."""
    return all(positions(before) == positions(now) for name, before, now in changes if name in pointed)


class Reloader:
    def __init__(self, paths: Sequence[str], topology: str, commit: str,
                 kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
                 seed: int = 0) -> None:
        self.paths = tuple(paths)
        # Tag rules (intentc/policy): read once, as `compile` does; editing policies/ needs a restart.
        self.policies, self._policy_diags, self._policy_texts = load_policies(self.paths)
        self.topology_path = topology
        self.commit = commit
        self.kube_version = kube_version
        self.target = target
        self.seed = seed
        self._renderer = Renderer(commit, kube_version, target, self.policies)
        self._table = FileTable()
        self._digests: dict[str, bytes] = {}
        self._shown: dict[str, str] = {}        # texts the reports' carets read, until the file changes
        self._topology: tuple[LoadedTopology | None, tuple[Diagnostic, ...], str | None] = (None, (), None)
        self._topology_generation = 0
        self._discovery: tuple[Diagnostic, ...] = ()
        self._current: Snapshot | None = None
        self._lock = threading.Lock()
        self._generation = 0

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
        result = self._update([f.as_posix() for f in files], topology=True, initial=True)
        # What the load kept lives as long as the snapshot: out of the collector's way (a
        # full collection walking 100,000 intents' objects stalled a reload by tens of ms),
        # once the load's cyclic garbage is gone (frozen, it would be kept for good).
        gc.collect()
        gc.freeze()
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
            self._digests.pop(name, None)
            return gone
        source, read_diags = read_source(path)
        if source is None:
            self._table.set(name, FileState(FileResult(Program(), ()), (), tuple(read_diags)))
            self._digests.pop(name, None)
            return True
        digest = _digest(source.text)
        if self._digests.get(name) == digest and name in self._table:
            return False
        parsed = parse_source(source)
        result = FileResult(parsed.program.canonical(), parsed.diagnostics)
        _, domain = run_passes(result.program, LOCAL_PASSES)
        self._table.set(name, FileState(result, tuple(domain), tuple(read_diags)), source.text)
        self._digests[name] = digest
        return True

    def _load_topology(self) -> None:
        loaded, diags = load_topology(self.topology_path)
        text = read_text(self.topology_path)
        self._topology = (loaded, tuple(diags), text)
        self._topology_generation += 1

    def _update(self, names: list[str], topology: bool, initial: bool) -> ReloadResult:
        with self._lock:
            # Parsing every file builds the long-lived IR and no cycles: with the
            # collector walking the growing heap, 100,000 files took minutes.  Only
            # the parse is paused: the graph and the planner leave cyclic garbage
            # (networkx graphs, the scheduler's records) that a pause would freeze
            # with the IR and keep for good (35 MB at 10,000 intents).
            with collector_paused() if initial else nullcontext():
                reparsed = tuple(n for n in names if self._read(n))
            if topology or initial:
                self._load_topology()
            return self._compile(tuple(names), reparsed, topology or initial)

    def _compile(self, names: tuple[str, ...], reparsed: tuple[str, ...], topology: bool) -> ReloadResult:
        """Passes, plan, render and swap, each redone only as far as the changes reach."""
        previous = self._current
        loaded, topo_diags, topo_text = self._topology
        program = self._table.program()
        changes = self._table.changes()             # since the snapshot in force
        dirty = {name for name, _, _ in changes}
        if previous is not None and _same(changes, reference_inputs) and \
                _unmoved(changes, dirty & previous.global_files):
            global_diags = previous.global_diagnostics    # same names and references: same findings
        else:
            global_diags = tuple(d for p in GLOBAL_PASSES for d in p(program)[1])
        # Nothing any file reports changed: the report is the previous one (it held no error).
        quiet = previous is not None and not topology and global_diags is previous.global_diagnostics and \
            not any(b is not None and b.diagnostics or a is not None and a.diagnostics for _, b, a in changes)
        diags: list[Diagnostic] = []
        if not quiet:
            diags = list(self._discovery) + self._table.diagnostics() + list(global_diags)
            diags = list(prefer_specific(diags)) + list(topo_diags) + list(self._policy_diags)
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
        reuse = (previous is not None and previous.topology_generation == self._topology_generation
                 and _same(changes, plan_inputs) and _unmoved(changes, dirty & previous.plan_files))
        if reuse and previous is not None:
            plan, plan_text, graph_text = previous.plan, previous.plan_text, previous.graph_text
            plan_diags = previous.plan_diagnostics
        else:
            graph_diags = graph.build(program)[1]
            plan, found = make_plan(program, loaded, self.seed, policies=self.policies)
            plan_diags = tuple(graph_diags + found)
            # made when first read (`watch --out`; the daemon never reads them): making
            # them at 100,000 intents cost seconds and a transient of ~100 MB per re-plan
            plan_text = PackedText(make=partial(plan_to_json, plan))
            graph_text = PackedText(make=partial(_graph_json, program))
        if quiet and reuse and previous is not None:
            report = previous.diagnostics
        else:
            report = tuple(sorted_diagnostics(diags + list(plan_diags)))
            if has_errors(report):
                return failed(report)
        if previous is not None and not any(declares(b, "datasets") or declares(a, "datasets")
                                            for _, b, a in changes):
            uris = previous.uris
        else:
            uris = {d.name: d.uri for d in program.datasets}
        made = self._renderer.render(program, plan, uris, previous, changes if reuse else None, loaded.topology)
        self._generation += 1
        snapshot = Snapshot(
            self._generation, program, plan, made.rendered, report, plan_text, graph_text,
            self._topology_generation, plan_diags, uris, global_diags, made.intents, made.setup, made.setup_texts,
            loaded.topology,
            previous.global_files if previous is not None and global_diags is previous.global_diagnostics
            else files_of(global_diags),
            previous.plan_files if reuse and previous is not None else files_of(plan_diags))
        self._current = snapshot      # the atomic swap: readers see the old or the new snapshot
        self._table.settle()
        return ReloadResult(True, report, CaretTexts(known, report, self._shown), names, reparsed, made.rerendered,
                            not reuse, snapshot)
