"""Where the daemon's desired state comes from: a git branch, or local files.

Both sources produce a `Desired` — the compiled objects of one commit plus
the program they came from (for the drift policies) — so the reactor never
cares which one it runs with.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from intentc import collector
from intentc.daemon.reload import Reloader, ReloadResult
from intentc.diagnostics import format_text
from intentc.drift.detect import History
from intentc.drift.rollback import RepoSource, compile_revision
from intentc.ir import Program
from intentc.objectmeta import ObjectRef
from intentc.pipeline.loading import Reused
from intentc.pipeline.result import CompileResult
from intentc.plan.model import Placement, Plan
from intentc.policy import BUILTIN, Policies
from intentc.reconcile.timeouts import Budget, WaveBudgets
from intentc.render.capabilities import KubeVersion
from intentc.render.model import Manifest, Rendered
from intentc.render.packed import BodyCodec, PackedBody
from intentc.topology.load import LoadedTopology
from intentc.vcs import gitrepo

log = logging.getLogger("intentc.daemon")
HISTORY_DEPTH = 5000      # commits of the branch kept for stale / foreign checks


@dataclass(frozen=True)
class Preview:
    """What re-binding a rollout's waves on live state needs (reconcile/live_binding.py):
    the commit's plan is the preview, made on the topology file."""

    plan: Plan
    topology: LoadedTopology
    rendered: Rendered
    policies: Policies


@dataclass(frozen=True)
class Desired:
    commit: str
    manifests: tuple[Manifest, ...]
    program: Program
    origin: str                      # "git" | "local"
    by_ref: Mapping[ObjectRef, Manifest] = field(default_factory=dict, compare=False, repr=False)
    held: tuple[str, ...] = ()       # tenants held back by their errors: neither applied nor pruned
    # intent -> its planned placement (the Intent objects' status shows it)
    placements: Mapping[str, Placement] = field(default_factory=dict, compare=False, repr=False)
    # intent -> how long its wave may take to become healthy (reconcile/timeouts.py): from
    # its `duration` and `slack`, as `intentc apply` derives it, not one flat limit
    budgets: Mapping[str, Budget] = field(default_factory=dict, compare=False, repr=False)
    preview: Preview | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, commit: str, manifests: tuple[Manifest, ...], program: Program, origin: str,
           held: tuple[str, ...] = (), plan: Plan | None = None) -> Desired:
        placements = {p.intent: p for p in plan.placements} if plan is not None else {}
        budgets: Mapping[str, Budget] = WaveBudgets(program, plan) if plan is not None else {}
        return cls(commit, manifests, program, origin, {m.ref: m for m in manifests}, held, placements, budgets)

    @property
    def kinds(self) -> frozenset[tuple[str, str]]:
        return frozenset((m.ref.api_version, m.ref.kind) for m in self.manifests)


def from_compile(result: CompileResult, origin: str) -> Desired | None:
    """What to roll out; a commit whose errors each belong to one tenant rolls
    out for the other tenants (intentc.pipeline.holdback), as `intentc apply` does."""
    if result.rendered is None or result.program is None or (not result.ok and not result.held_tenants):
        return None
    desired = Desired.of(result.rendered.commit, result.rendered.manifests, result.program, origin,
                         result.held_tenants, result.plan)
    if result.plan is None or result.topology is None:
        return desired
    return replace(desired, preview=Preview(result.plan, result.topology, result.rendered,
                                            result.policies or BUILTIN))


class GitSource:
    """Follow `branch` of a repository: a local path is read in place, a URL
    is mirrored (bare) under `workdir` and fetched on every poll."""

    def __init__(self, repo: str, branch: str, paths: tuple[str, ...], topology: str, workdir: str | Path,
                 render_target: str, seed: int, cluster: tuple[str, tuple[tuple[str, str], ...]] | None = None) -> None:
        self.url = repo
        self.branch = branch
        self.workdir = Path(workdir)
        self.local = gitrepo.is_local_repository(repo)
        # a URL is cloned at the first poll, not here: a remote that is down when the daemon
        # starts is then a failed poll, retried with backoff, instead of a crash loop
        self.path = str(Path(repo).expanduser()) if self.local else str(gitrepo.mirror_path(repo, self.workdir))
        self.source = RepoSource(self.path, paths, topology, render_target=render_target, seed=seed, cluster=cluster)
        # the parse results of the last commit compiled: the next commit's unchanged files
        # share them (`pipeline.loading.load`'s `reuse`), as the commit in force still holds them
        self._reuse: Reused = {}

    def poll(self) -> str:
        """The branch's current SHA (after a fetch, for a mirror)."""
        if self.local:
            return gitrepo.branch_head(self.path, self.branch)
        gitrepo.mirror(self.url, self.workdir)
        return gitrepo.fetch_branch(self.path, self.branch)

    def history(self, head: str) -> History:
        return History(gitrepo.rev_list(self.path, head, HISTORY_DEPTH))

    def compile(self, sha: str, kube_version: KubeVersion, in_force: Plan | None = None,
                objects: Mapping[ObjectRef, Manifest] | None = None) -> CompileResult:
        """`in_force`: the plan of the commit in force, whose records the new plan shares where
        it decides alike (`make_plan`'s `previous`); `objects`: its objects by ref, whose packed
        bytes the new objects share where they are alike (`BodyCodec`'s `like`).  The daemon
        holds both commits while it compiles."""
        codec = BodyCodec(like=_packed_in(objects) if objects else None)
        try:
            return compile_revision(replace(self.source, kube_version=kube_version), sha, self.workdir, self._reuse,
                                    in_force, codec)
        finally:
            # Loading the files freezes the heap it leaves (`pipeline.loading`, `collector.After.FREEZE`:
            # right for a one-shot CLI run).  Frozen objects are never collected, so in a
            # daemon compiling every commit each freeze kept whatever cyclic garbage was
            # pending then (open git repositories with their `cat-file` processes, drift
            # diff trees, the previous commit's objects): the soak's growth.  Hand them
            # back to the collector, and collect: unfrozen objects do not count towards the
            # next full collection, so without one that garbage still piled up commit after
            # commit; a full collection of the daemon's heap costs far less than the compile).
            gc.unfreeze()
            gc.collect()
            collector.trim()    # the compile's freed tables, which the C heap would otherwise keep


def _packed_in(objects: Mapping[ObjectRef, Manifest]) -> Callable[[object], PackedBody | None]:
    def packed(ref: object) -> PackedBody | None:
        m = objects.get(ref) if isinstance(ref, ObjectRef) else None
        return m.content if m is not None and isinstance(m.content, PackedBody) else None
    return packed


class LocalSource:
    """The working tree of `paths`, recompiled incrementally on every save."""

    def __init__(self, paths: tuple[str, ...], topology: str, commit: str, kube_version: KubeVersion,
                 render_target: str, seed: int) -> None:
        self.reloader = Reloader(paths, topology, commit, kube_version, render_target, seed)

    def load(self) -> ReloadResult:
        return self.reloader.load()

    def accept(self, result: ReloadResult) -> Desired | None:
        """`desired`, having said what the reload was: a change that does not compile (the
        plan in force stays), or how the plan was made (incremental, or the full one)."""
        if not result.ok:
            log.error("change does not compile; keeping the plan in force:\n%s",
                      format_text(list(result.diagnostics), dict(result.sources)).rstrip())
            return None
        if result.plan_note and result.snapshot is not None:
            # "incremental plan: N intents re-placed" (a full re-plan follows in the background),
            # or "full plan swapped in for the incremental one"
            log.info("generation %d: %s", result.snapshot.generation, result.plan_note)
        return self.desired(result)

    def desired(self, result: ReloadResult) -> Desired | None:
        """The snapshot in force, with what re-binding it on live state needs (as a commit of
        the branch has it): its plan is the preview, its topology the one it was planned on."""
        snap = result.snapshot
        if not result.ok or snap is None:
            return None
        desired = Desired.of(snap.rendered.commit, snap.rendered.manifests, snap.program, "local", plan=snap.plan)
        if snap.loaded is None:
            return desired
        return replace(desired, preview=Preview(snap.plan, snap.loaded, snap.rendered, self.reloader.policies))


def say_not_compiled(head: str, in_force: str | None, compiled: CompileResult) -> None:
    log.error("commit %s does not compile; keeping %s in force:\n%s", head[:12], in_force[:12] if in_force else "nothing",
              format_text(list(compiled.diagnostics), compiled.sources).rstrip())


def say_held(head: str, desired: Desired, compiled: CompileResult) -> None:
    log.error("commit %s: tenants held back by their errors (neither applied nor pruned): %s\n%s",
              head[:12], ", ".join(desired.held),
              format_text([d for d in compiled.diagnostics if d.is_error], compiled.sources).rstrip())
