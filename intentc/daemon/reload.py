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
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import watchfiles

from intentc import graph
from intentc.atomic import write_atomic
from intentc.compile import MANIFESTS_DIR
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.frontend import FileResult, merge, parse_source
from intentc.ir import Intent, Program, Tenant
from intentc.passes.domain import check_domain
from intentc.passes.duplicates import check_duplicates
from intentc.passes.names import resolve_names
from intentc.passes.products import check_gpu_products
from intentc.pipeline import prefer_specific
from intentc.plan import make_plan, plan_to_json
from intentc.plan.model import Placement, Plan
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion
from intentc.render.model import (
    SETUP_KINDS,
    Choice,
    Manifest,
    ObjectRef,
    Rendered,
    SetupStep,
    wave_step,
)
from intentc.render.output import manifest_filename, step_width, to_yaml
from intentc.render.stamp import stamp
from intentc.render.targets import DEFAULT_TARGET, get_target
from intentc.render.tenants import (
    namespace,
    priority_classes,
    resource_quota,
    role_binding,
)
from intentc.render.workloads import workload_objects
from intentc.sources import SOURCE_SUFFIXES, discover, read_source
from intentc.topology.load import LoadedTopology, load_topology

GLOBAL_PASSES = (check_duplicates, resolve_names, check_gpu_products)


@dataclass(frozen=True)
class FileState:
    result: FileResult
    domain: tuple[Diagnostic, ...]      # per-declaration checks of this file's declarations
    read: tuple[Diagnostic, ...] = ()   # reading / decoding problems


@dataclass(frozen=True)
class IntentRender:
    """One intent's manifests and the inputs they were rendered from (the cache key)."""

    key: tuple[Any, ...]
    manifests: tuple[Manifest, ...]
    choice: Choice | None


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
    intents: Mapping[str, IntentRender] = field(repr=False, default_factory=dict)
    texts: Mapping[ObjectRef, tuple[Manifest, str]] = field(repr=False, default_factory=dict)  # ref -> YAML

    def files(self) -> dict[str, str]:
        """Output path -> text, exactly `CompileResult.files()` of a full compile."""
        width = step_width(self.rendered.manifests)
        out = {f"{MANIFESTS_DIR}/{manifest_filename(m, width)}": self.texts[m.ref][1]
               for m in self.rendered.manifests}
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

    Image, command, model settings, replicas, port, tags and drift policy
    are absent: changing them cannot move a placement or a wave."""
    return (intent.name, intent.tenant, intent.trigger, intent.action.kind, intent.constraints,
            intent.consumes, intent.produces)


def _tenant_key(tenant: Tenant) -> tuple[Any, ...]:
    return (tenant.name, tenant.tier, tenant.weight, tenant.quota_gpus)


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class Reloader:
    def __init__(self, paths: Sequence[str], topology: str, commit: str,
                 kube_version: KubeVersion = DEFAULT_KUBE_VERSION, target: str = DEFAULT_TARGET,
                 seed: int = 0) -> None:
        self.paths = tuple(paths)
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
            if any(part.startswith(".") for part in rel.parts[:-1]) or not full.name.endswith(SOURCE_SUFFIXES):
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
        result = parse_source(source)
        _, domain = check_domain(result.program)
        self._files[name] = FileState(result, tuple(domain), tuple(read_diags))
        self._texts[name] = source.text
        self._hashes[name] = digest
        return True

    def _load_topology(self) -> None:
        loaded, diags = load_topology(self.topology_path)
        try:
            text: str | None = Path(self.topology_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
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
            program, parse_diags = merge(f.result for f in ordered)
            diags: list[Diagnostic] = list(self._discovery)
            for f in ordered:
                diags.extend(f.read)
                diags.extend(f.domain)
            diags.extend(parse_diags)
            for p in GLOBAL_PASSES:
                diags.extend(p(program)[1])
            diags = list(prefer_specific(diags)) + list(topo_diags)
            sources = dict(self._texts)
            if topo_text is not None:
                sources[Path(self.topology_path).as_posix()] = topo_text

            def failed(found: Sequence[Diagnostic]) -> ReloadResult:
                return ReloadResult(False, tuple(sorted_diagnostics(found)), sources, tuple(names), reparsed,
                                    (), False, self._current)
            if loaded is None or has_errors(diags):
                return failed(diags)
            plan_key = (tuple(_planning_key(i) for i in program.intents),
                        tuple(_tenant_key(t) for t in program.tenants), self._topology_generation, self.seed)
            # A kept plan keeps its warnings, which is only right while they
            # point into files that did not change.
            reuse = (previous is not None and previous.plan_key == plan_key
                     and not any(d.span.file in self._dirty for d in previous.plan_diagnostics))
            if reuse and previous is not None:
                plan, plan_json, graph_json = previous.plan, previous.plan_json, previous.graph_json
                plan_diags = list(previous.plan_diagnostics)
            else:
                g, graph_diags = graph.build(program)
                plan, found = make_plan(program, loaded, self.seed)
                plan_diags = graph_diags + found
                plan_json, graph_json = plan_to_json(plan), graph.to_json(g, graph.waves(g))
            diags = sorted_diagnostics(diags + plan_diags)
            if has_errors(diags):
                return failed(diags)
            rendered, intents, texts, rerendered = self._render(program, plan, previous)
            self._generation += 1
            snapshot = Snapshot(self._generation, program, plan, rendered, tuple(diags), plan_json, graph_json,
                                plan_key, tuple(plan_diags), intents, texts)
            self._current = snapshot      # the atomic swap: readers see the old or the new snapshot
            self._dirty.clear()
            return ReloadResult(True, snapshot.diagnostics, sources, tuple(names), reparsed,
                                rerendered, not reuse, snapshot)

    def _render(self, program: Program, plan: Plan, previous: Snapshot | None
                ) -> tuple[Rendered, dict[str, IntentRender], dict[ObjectRef, tuple[Manifest, str]], tuple[str, ...]]:
        """`intentc.render.render`, with per-intent results reused when their inputs are equal."""
        tgt = get_target(self.target)
        commit, version = self.commit, self.kube_version
        manifests: list[Manifest] = []
        for t in program.tenants:
            manifests.append(_manifest(namespace(t), SetupStep.NAMESPACES, commit, t.name))
            for body in (role_binding(t), resource_quota(t)):
                if body is not None:
                    manifests.append(_manifest(body, SETUP_KINDS[body["kind"]], commit, t.name))
        scheduled = {name for wave in plan.waves for name in wave}
        intents = [i for i in program.intents if i.name in scheduled]
        for body in priority_classes([i.constraints.sla for i in intents if i.constraints.sla]):
            manifests.append(_manifest(body, SetupStep.PRIORITY_CLASSES, commit))
        uris = {d.name: d.uri for d in program.datasets}
        cache: Mapping[str, IntentRender] = previous.intents if previous is not None else {}
        renders: dict[str, IntentRender] = {}
        rerendered: list[str] = []
        choices: list[Choice] = []
        # Plan.wave_of / Plan.placement scan the plan: index once (10,000 intents).
        waves = {name: i for i, names in enumerate(plan.waves) for name in names}
        placements = {p.intent: p for p in plan.placements}
        for intent in intents:
            wave = waves[intent.name]
            placement: Placement | None = placements.get(intent.name)
            data = tuple(sorted((r.name, uris.get(r.name)) for r in intent.consumes + intent.produces))
            key = (intent, placement, wave, data, commit, str(version), tgt.name)
            hit = cache.get(intent.name)
            if hit is None or hit.key != key:
                bodies, choice = workload_objects(intent, placement, wave, version, tgt, uris)
                hit = IntentRender(key, tuple(_manifest(b, wave_step(wave), commit, intent.tenant, intent.name)
                                              for b in bodies), choice)
                rerendered.append(intent.name)
            renders[intent.name] = hit
            manifests.extend(hit.manifests)
            if hit.choice is not None:
                choices.append(hit.choice)
        manifests.sort(key=_sort_key)
        old_texts = previous.texts if previous is not None else {}
        texts: dict[ObjectRef, tuple[Manifest, str]] = {}
        for m in manifests:
            known = old_texts.get(m.ref)
            # a reused render hands back the very same Manifest object: no need to look inside
            if known is not None and (known[0] is m or known[0].body == m.body):
                texts[m.ref] = (m, known[1])
            else:
                texts[m.ref] = (m, to_yaml(m.body))
        rendered = Rendered(tuple(manifests), str(version), tgt.name, commit,
                            tuple(sorted(choices, key=lambda c: c.intent)))
        return rendered, renders, texts, tuple(sorted(rerendered))


def _manifest(body: dict[str, Any], step: int, commit: str, tenant: str | None = None,
              intent: str | None = None) -> Manifest:
    stamped, digest = stamp(body, commit)
    return Manifest(ObjectRef.of(stamped), step, stamped, digest, intent, tenant)


def _sort_key(m: Manifest) -> tuple[int, str, str, str]:
    return (m.step, m.ref.kind, m.ref.namespace, m.ref.name)


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
