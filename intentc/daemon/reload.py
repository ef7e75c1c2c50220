"""Hot reload: recompile only what a file change can have changed.

`intentc watch` and the daemon's local mode keep one `Reloader`.  On a
change it

1. re-reads and re-parses only the changed files (`parse_source` per file)
   and re-runs the per-declaration domain checks for those files only; the
   cross-reference passes (duplicates, names, GPU products) are set lookups
   over the whole program and run every time, because deleting a tenant in
   one file breaks intents in others;
2. diffs the IR against the plan in force (frozen-dataclass equality, which
   leaves spans out, the same rule `intentc diff` uses) to find the affected
   intents, tenants and datasets;
3. re-plans only when something the planner reads changed (GPU requests,
   tenants, triggers and data edges, SLA, durations, the topology).  The
   planner is one global, deterministic function — fair share and packing
   make every placement depend on the others — so "re-plan" means running it
   again; an edit to an image or a command reuses the previous plan as is;
4. re-renders only the affected intents (plus any whose placement or wave
   moved) and re-stamps nothing else;
5. swaps the new snapshot in with one reference assignment, or — when the
   change does not compile — keeps the last good snapshot in force and
   returns the diagnostics.

The result is byte-identical to a full `compile_paths` of the same tree
(tests check it), only faster.  Output files are written atomically, and
only those whose text changed.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import watchfiles

from intentc import graph
from intentc.atomic import write_atomic
from intentc.compile import MANIFESTS_DIR
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.frontend import FileResult, parse_source
from intentc.ir import Intent, Program, Tenant, Topology
from intentc.passes import GLOBAL_PASSES, LOCAL_PASSES, run_passes
from intentc.pipeline import prefer_specific
from intentc.plan.jsonio import plan_to_json
from intentc.plan.model import Placement, Plan
from intentc.plan.planner import make_plan
from intentc.policy.load import load_policies
from intentc.render import crd_manifest, intent_manifests, priority_class_manifests, target_manifests, tenant_manifests
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import (
    Choice,
    Manifest,
    ObjectRef,
    Rendered,
)
from intentc.render.output import manifest_filename, step_width, to_yaml
from intentc.render.targets import DEFAULT_TARGET, get_target
from intentc.sources import (
    OUTPUT_MARKER,
    SOURCE_SUFFIXES,
    Exclusions,
    discover,
    mark_output,
    read_source,
    read_text,
    root_of,
)
from intentc.topology.load import LoadedTopology, load_topology


@dataclass(frozen=True)
class FileState:
    result: FileResult                  # its program in canonical (position) order
    domain: tuple[Diagnostic, ...]      # per-declaration checks of this file's declarations
    read: tuple[Diagnostic, ...] = ()   # reading / decoding problems
    plan_keys: tuple[Any, ...] = ()     # what the planner reads of its declarations
    ref_keys: tuple[Any, ...] = ()      # what the cross-reference passes read of them


@dataclass(frozen=True)
class IntentRender:
    """One intent's manifests and the inputs they were rendered from (the cache key;
    commit, Kubernetes version and render target are fixed per `Reloader`)."""

    intent: Intent
    placement: Placement | None
    wave: int
    data: tuple[tuple[str, str | None], ...]      # URIs of the datasets it names
    manifests: tuple[Manifest, ...]
    choice: Choice | None
    texts: tuple[str, ...] = ()                   # the manifests as YAML, in the same order
    decided: tuple[Any, ...] = ()                 # the plan's batch sizing and strategy for it

    def fits(self, intent: Intent, placement: Placement | None, wave: int, decided: tuple[Any, ...] = ()) -> bool:
        # identity first: an unchanged file hands back the very same IR objects
        return ((self.intent is intent or self.intent == intent) and self.wave == wave
                and (self.placement is placement or self.placement == placement) and self.decided == decided)


@dataclass(frozen=True)
class Snapshot:
    """A plan in force: everything `compile` would write, plus render caches."""

    generation: int
    program: Program
    plan: Plan
    rendered: Rendered
    diagnostics: tuple[Diagnostic, ...]
    plan_json: str
    graph_json: str
    plan_key: tuple[Any, ...] = field(repr=False)
    plan_diagnostics: tuple[Diagnostic, ...] = field(repr=False, default=())
    uris: Mapping[str, str | None] = field(repr=False, default_factory=dict)
    ref_key: tuple[Any, ...] = field(repr=False, default=())
    global_diagnostics: tuple[Diagnostic, ...] = field(repr=False, default=())
    intents: Mapping[str, IntentRender] = field(repr=False, default_factory=dict)
    setup: tuple[Manifest, ...] = field(repr=False, default=())        # tenants' objects, priority classes
    setup_texts: tuple[str, ...] = field(repr=False, default=())
    topology: Topology | None = field(repr=False, default=None)      # what the render saw

    def files(self) -> dict[str, str]:
        """Output path -> text, exactly `CompileResult.files()` of a full compile."""
        text = {id(m): t for m, t in zip(self.setup, self.setup_texts, strict=True)}
        for r in self.intents.values():
            text.update((id(m), t) for m, t in zip(r.manifests, r.texts, strict=True))
        width = step_width(self.rendered.manifests)
        out = {f"{MANIFESTS_DIR}/{manifest_filename(m, width)}": text[id(m)] for m in self.rendered.manifests}
        out["plan.json"] = self.plan_json
        out["graph.json"] = self.graph_json
        return out


@dataclass(frozen=True)
class ReloadResult:
    ok: bool                                    # the change compiled and is now in force
    diagnostics: tuple[Diagnostic, ...]
    sources: Mapping[str, str]
    changed_files: tuple[str, ...]
    reparsed: tuple[str, ...]                   # files parsed again
    rerendered: tuple[str, ...]                 # intents rendered again
    replanned: bool
    snapshot: Snapshot | None                   # the snapshot in force afterwards


def _planning_key(intent: Intent) -> tuple[Any, ...]:
    """Everything about an intent that the graph and the planner read.

    Image, command, port and drift policy are absent: changing them cannot
    move a placement or a wave.  Model settings and replicas size `batch: auto`
    (plan/batch.py); tags carry the planner's tag rules (intentc/policy)."""
    return (intent.name, intent.tenant, intent.trigger, intent.action.kind, intent.constraints,
            intent.consumes, intent.produces, intent.action.settings, intent.action.replicas,
            intent.context.tags)


def _tenant_key(tenant: Tenant) -> tuple[Any, ...]:
    return (tenant.name, tenant.tier, tenant.weight, tenant.quota_gpus)


def _reference_key(program: Program) -> tuple[Any, ...]:
    """Everything the cross-reference passes (duplicates, names, GPU products)
    read of one file: names, references and GPU products (spans excluded)."""
    def product(i: Intent) -> str | None:
        return i.constraints.gpus.product if i.constraints.gpus else None
    return (tuple(t.name for t in program.tenants), tuple(d.name for d in program.datasets),
            tuple((t.name, tuple(sorted(t.gpu_products))) for t in program.topologies),
            tuple((i.name, i.tenant, i.trigger.after, i.consumes, i.produces, product(i)) for i in program.intents))


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


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
        self._files: dict[str, FileState] = {}
        self._texts: dict[str, str] = {}
        self._hashes: dict[str, str] = {}
        self._topology: tuple[LoadedTopology | None, tuple[Diagnostic, ...], str | None] = (None, (), None)
        self._topology_generation = 0
        self._discovery: tuple[Diagnostic, ...] = ()
        self._dirty: set[str] = set()      # files changed since the snapshot in force
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
        return self._update([f.as_posix() for f in files], topology=True, initial=True)

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
        path = Path(name)
        if not path.is_file():
            gone = name in self._files
            self._files.pop(name, None)
            self._texts.pop(name, None)
            self._hashes.pop(name, None)
            return gone
        source, read_diags = read_source(path)
        if source is None:
            self._files[name] = FileState(FileResult(Program(), ()), (), tuple(read_diags))
            self._texts.pop(name, None)
            self._hashes.pop(name, None)
            return True
        digest = _hash(source.text)
        if self._hashes.get(name) == digest and name in self._files:
            return False
        parsed = parse_source(source)
        result = FileResult(parsed.program.canonical(), parsed.diagnostics)
        _, domain = run_passes(result.program, LOCAL_PASSES)
        keys = (tuple(_planning_key(i) for i in result.program.intents),
                tuple(_tenant_key(t) for t in result.program.tenants))
        self._files[name] = FileState(result, tuple(domain), tuple(read_diags), keys,
                                      _reference_key(result.program))
        self._texts[name] = source.text
        self._hashes[name] = digest
        return True

    def _load_topology(self) -> None:
        loaded, diags = load_topology(self.topology_path)
        text = read_text(self.topology_path)
        self._topology = (loaded, tuple(diags), text)
        self._topology_generation += 1

    def _update(self, names: list[str], topology: bool, initial: bool) -> ReloadResult:
        with self._lock:
            reparsed = tuple(n for n in names if self._read(n))
            self._dirty.update(reparsed)
            if topology or initial:
                self._load_topology()
            previous = self._current
            loaded, topo_diags, topo_text = self._topology
            ordered = [self._files[n] for n in sorted(self._files)]
            program = _concatenate(f.result.program for f in ordered)
            diags: list[Diagnostic] = list(self._discovery)
            for f in ordered:
                diags.extend(f.read)
                diags.extend(f.domain)
                diags.extend(f.result.diagnostics)
            ref_key = tuple(f.ref_keys for f in ordered)
            if previous is not None and previous.ref_key == ref_key and \
                    not any(d.span.file in self._dirty for d in previous.global_diagnostics):
                global_diags = list(previous.global_diagnostics)    # same names and references: same findings
            else:
                global_diags = [d for p in GLOBAL_PASSES for d in p(program)[1]]
            diags.extend(global_diags)
            diags = list(prefer_specific(diags)) + list(topo_diags) + list(self._policy_diags)
            sources = {**self._policy_texts, **self._texts}
            if topo_text is not None:
                sources[Path(self.topology_path).as_posix()] = topo_text

            def failed(found: Sequence[Diagnostic]) -> ReloadResult:
                return ReloadResult(False, tuple(sorted_diagnostics(found)), sources, tuple(names), reparsed,
                                    (), False, self._current)
            if loaded is None or has_errors(diags):
                return failed(diags)
            plan_key = (tuple(f.plan_keys for f in ordered), self._topology_generation, self.seed)
            # A kept plan keeps its warnings, which is only right while they
            # point into files that did not change.
            reuse = (previous is not None and previous.plan_key == plan_key
                     and not any(d.span.file in self._dirty for d in previous.plan_diagnostics))
            if reuse and previous is not None:
                plan, plan_json, graph_json = previous.plan, previous.plan_json, previous.graph_json
                plan_diags = list(previous.plan_diagnostics)
            else:
                g, graph_diags = graph.build(program)
                plan, found = make_plan(program, loaded, self.seed, policies=self.policies)
                plan_diags = graph_diags + found
                plan_json, graph_json = plan_to_json(plan), graph.to_json(g, graph.waves(g))
            diags = sorted_diagnostics(diags + plan_diags)
            if has_errors(diags):
                return failed(diags)
            uris = {d.name: d.uri for d in program.datasets}
            changed = [self._files[n] for n in sorted(self._dirty) if n in self._files] if reuse else None
            rendered, intents, setup, setup_texts, rerendered = self._render(program, plan, uris, previous, changed,
                                                                             loaded.topology)
            self._generation += 1
            snapshot = Snapshot(self._generation, program, plan, rendered, tuple(diags), plan_json, graph_json,
                                plan_key, tuple(plan_diags), uris, ref_key, tuple(global_diags), intents, setup,
                                setup_texts, loaded.topology)
            self._current = snapshot      # the atomic swap: readers see the old or the new snapshot
            self._dirty.clear()
            return ReloadResult(True, snapshot.diagnostics, sources, tuple(names), reparsed,
                                rerendered, not reuse, snapshot)

    def _render(self, program: Program, plan: Plan, uris: Mapping[str, str | None], previous: Snapshot | None,
                changed: list[FileState] | None, topology: Topology | None = None
                ) -> tuple[Rendered, dict[str, IntentRender], tuple[Manifest, ...], tuple[str, ...], tuple[str, ...]]:
        """`intentc.render.render`, with per-intent results reused when their inputs are equal.

        `changed` (the files edited since `previous`, given when its plan was
        kept) narrows the work to their intents: with the same plan and the
        same dataset URIs, no other intent's inputs can have changed."""
        tgt = get_target(self.target)
        commit, version = self.commit, self.kube_version
        setup = (tenant_manifests(program, commit, plan, self.policies, tgt.gpu_quota, tgt.tenant_gpu_ceiling(topology))
                 + [crd_manifest(version, commit)])
        if previous is not None and previous.topology is not topology:
            previous = None           # a target may render the topology itself (flavors, cliques)
        same_data = previous is not None and previous.uris == uris
        fast = previous is not None and changed is not None and same_data and previous.plan is plan
        renders: dict[str, IntentRender]
        todo: list[tuple[Intent, Placement | None, int]] = []
        batch_of = {b.intent: b for b in plan.batches}
        strategy_of = {st.intent: st for st in plan.strategies}

        def decided_of(name: str) -> tuple[Any, ...]:
            return (batch_of.get(name), strategy_of.get(name))

        if fast and previous is not None and changed is not None:
            # the plan is the same object: same SLA classes, same placements and waves
            setup.extend(m for m in previous.setup if m.ref.kind == "PriorityClass")
            renders = dict(previous.intents)
            for f in changed:
                for intent in f.result.program.intents:
                    hit = renders.get(intent.name)
                    if hit is not None and not hit.fits(intent, hit.placement, hit.wave, hit.decided):
                        todo.append((intent, hit.placement, hit.wave))
        else:
            scheduled = {name for wave in plan.waves for name in wave}
            intents = [i for i in program.intents if i.name in scheduled]
            setup.extend(priority_class_manifests(intents, commit))
            cache: Mapping[str, IntentRender] = previous.intents if previous is not None else {}
            renders = {}
            # Plan.wave_of / Plan.placement scan the plan: index once (10,000 intents).
            waves = {name: i for i, names in enumerate(plan.waves) for name in names}
            placements = {p.intent: p for p in plan.placements}
            for intent in intents:
                wave, placement = waves[intent.name], placements.get(intent.name)
                hit = cache.get(intent.name)
                if hit is None or not hit.fits(intent, placement, wave, decided_of(intent.name)) or (
                        not same_data and hit.data != _data_of(intent, uris)):
                    todo.append((intent, placement, wave))
                else:
                    renders[intent.name] = hit
        setup.extend(target_manifests(tgt, program, program.intents, topology, commit))
        for intent, placement, wave in todo:
            made, choice = intent_manifests(intent, placement, wave, version, tgt, uris, commit,
                                            batch_of.get(intent.name), self.policies, strategy_of.get(intent.name),
                                            topology)
            renders[intent.name] = IntentRender(intent, placement, wave, _data_of(intent, uris), made, choice,
                                                tuple(to_yaml(m.body) for m in made), decided_of(intent.name))
        old_by_ref = ({m.ref: (m, t) for m, t in zip(previous.setup, previous.setup_texts, strict=True)}
                      if previous is not None else {})
        setup_texts = []
        for m in setup:                   # a few objects per tenant: reuse the YAML when the body is equal
            known = old_by_ref.get(m.ref)
            setup_texts.append(known[1] if known is not None and known[0].body == m.body else to_yaml(m.body))
        rerendered = sorted(i.name for i, _, _ in todo)
        manifests = _in_apply_order(setup, renders, rerendered, previous)
        choices = sorted((r.choice for r in renders.values() if r.choice is not None), key=lambda c: c.intent)
        rendered = Rendered(tuple(manifests), str(version), tgt.name, commit, tuple(choices))
        return rendered, renders, tuple(setup), tuple(setup_texts), tuple(rerendered)

def _sort_key(m: Manifest) -> tuple[int, str, str, str]:
    return (m.step, m.ref.kind, m.ref.namespace, m.ref.name)


def _in_apply_order(setup: list[Manifest], renders: Mapping[str, IntentRender], rerendered: list[str],
                    previous: Snapshot | None) -> list[Manifest]:
    """All manifests sorted by `Manifest.sort_key`.  When an edit moved nothing
    (the same intents, and the re-rendered ones and the setup objects kept
    their identities and steps), the previous order is reused with the new
    objects swapped in: 10,000 objects need no sort for a one-file edit."""
    def shape(ms: Iterable[Manifest]) -> list[tuple[ObjectRef, int]]:
        return [(m.ref, m.step) for m in ms]
    if previous is not None and renders.keys() == previous.intents.keys() \
            and shape(setup) == shape(previous.setup) \
            and all(shape(renders[n].manifests) == shape(previous.intents[n].manifests) for n in rerendered):
        swap = {id(old): new for old, new in zip(previous.setup, setup, strict=True)}
        for n in rerendered:
            pairs = zip(previous.intents[n].manifests, renders[n].manifests, strict=True)
            swap.update((id(old), new) for old, new in pairs)
        return [swap.get(id(m), m) for m in previous.rendered.manifests]
    everything = list(setup)
    for r in renders.values():
        everything.extend(r.manifests)
    return sorted(everything, key=_sort_key)

def _data_of(intent: Intent, uris: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted((r.name, uris.get(r.name)) for r in intent.consumes + intent.produces))


def _concatenate(programs: Iterable[Program]) -> Program:
    """Per-file programs (each in position order), in file-name order: that is
    exactly `Program.canonical()` order, without sorting 10,000 declarations."""
    parts = list(programs)
    return Program(tuple(chain.from_iterable(p.tenants for p in parts)),
                   tuple(chain.from_iterable(p.datasets for p in parts)),
                   tuple(chain.from_iterable(p.intents for p in parts)),
                   tuple(chain.from_iterable(p.topologies for p in parts)))


# --------------------------------------------------------------------------
# Output directory
# --------------------------------------------------------------------------

def write_changed(snapshot: Snapshot, out_dir: str | Path, previous: Mapping[str, str] | None = None
                  ) -> tuple[list[str], list[str]]:
    """Write the snapshot's files under `out_dir`, each atomically, skipping
    files whose text is unchanged since `previous` (the last files written);
    remove manifests that are no longer produced.  Returns (written, removed)."""
    out = Path(out_dir)
    files = snapshot.files()
    old = dict(previous) if previous is not None else _existing(out)
    written = []
    for rel, text in sorted(files.items()):
        if old.get(rel) != text:
            write_atomic(out / rel, text)
            written.append(rel)
    if out.is_dir():
        mark_output(out)
    removed = []
    for rel in sorted(set(old) - set(files)):
        if rel.startswith(f"{MANIFESTS_DIR}/"):
            try:
                os.unlink(out / rel)
                removed.append(rel)
            except FileNotFoundError:
                pass
    return written, removed


def _existing(out: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for rel in ("plan.json", "graph.json"):
        if (out / rel).is_file():
            found[rel] = (out / rel).read_text(encoding="utf-8")
    mdir = out / MANIFESTS_DIR
    if mdir.is_dir():
        for f in sorted(mdir.iterdir()):
            if f.is_file() and f.suffix == ".yaml" and not f.name.startswith("."):
                found[f"{MANIFESTS_DIR}/{f.name}"] = f.read_text(encoding="utf-8")
    return found



# --------------------------------------------------------------------------
# Following the files
# --------------------------------------------------------------------------

def watch_roots(reloader: Reloader) -> list[str]:
    """What to hand to the OS watcher: the inputs and the topology's folder."""
    roots = {str(Path(p).resolve()) for p in reloader.paths if Path(p).exists()}
    roots.add(str(Path(reloader.topology_path).resolve().parent))
    return sorted(roots)


def follow(reloader: Reloader, on_result: Callable[[ReloadResult, float], None], stop: threading.Event,
           debounce_ms: int = 50) -> None:
    """Block, feeding batches of file changes to `reloader` until `stop` is set;
    `on_result` gets each result and the seconds the reload took.

    watchfiles coalesces an editor's save (write temp, rename, chmod) into
    one batch; a batch that touches no input is dropped without a reload."""
    for changes in watchfiles.watch(*watch_roots(reloader), stop_event=stop, debounce=debounce_ms,
                                    step=20, raise_interrupt=False, yield_on_timeout=False):
        paths = sorted({p for _change, p in changes})
        if not any(reloader.display_name(p) is not None or reloader.is_topology(p) for p in paths):
            continue
        started = time.perf_counter()
        result = reloader.update(paths)
        on_result(result, time.perf_counter() - started)
