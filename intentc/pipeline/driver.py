"""The compile driver: one object per run, owning what the stages share.

Every command, the fleet and the daemon's reloader go through a `Driver`: it
holds the run's inputs and what is made once for them — the parse cache and
its memo (through `pipeline.loading`), the check, the repository's tag rules,
each Topology file read — and walks the stages (`stages.STAGES`) as far as a
command needs.  So finding the one Topology file among the inputs and then
compiling is one check, not two, and a fleet plans every cluster on one.

This module imports the stages only when a run needs them: `intentc check`
answered from the memo loads neither the passes nor the planner.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Sequence

from intentc.progress import Progress, silent

if TYPE_CHECKING:
    from intentc.diagnostics import Diagnostic
    from intentc.frontend import Loaded
    from intentc.ir import Intent
    from intentc.pipeline.checked import Checked
    from intentc.pipeline.loading import Reused
    from intentc.pipeline.memo import Summary
    from intentc.pipeline.result import CompileResult, LiveReader
    from intentc.pipeline.stages import Request, Stage, TopologyFile, Unit
    from intentc.plan.model import Plan
    from intentc.policy.catalogue import Policies
    from intentc.render.capabilities import KubeVersion
    from intentc.render.packed import BodyCodec

    # the repository's tag rules as `policy.load.load_policies` reads them: catalogue, findings, texts
    PolicyFiles = tuple[Policies, list[Diagnostic], dict[str, str]]


class Driver:
    """The stages' shared state for one set of inputs (see the module docstring).  Not
    frozen: it keeps what it made, so that a second stage asking reuses the first's."""

    def __init__(self, paths: Sequence[str], jobs: int | None = None, exclude: Sequence[str] = (),
                 cache_dir: str | None = None, use_cache: bool = True, progress: Progress = silent,
                 reuse: Reused | None = None, checked: Checked | None = None,
                 policy: PolicyFiles | None = None) -> None:
        """`reuse`: see `pipeline.loading.load`; `checked`: a program checked already (a
        revision's, `intentc diff`); `policy`: its tag rules (default: read from `paths`)."""
        self.paths = tuple(paths)
        self.jobs = jobs
        self.exclude = tuple(exclude)
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.progress = progress
        self.reuse = reuse
        self._checked = checked
        self._policy = policy
        self._topologies: dict[str, TopologyFile] = {}

    def revision(self, checked: Checked, policy: PolicyFiles) -> Driver:
        """A driver for another revision's checked program and tag rules, sharing the
        Topology files this one read."""
        other = Driver(self.paths, self.jobs, self.exclude, self.cache_dir, self.use_cache, self.progress,
                       checked=checked, policy=policy)
        other._topologies = self._topologies
        return other

    # -- the check ------------------------------------------------------------------------
    def summary(self) -> Summary:
        """The check's findings and counts, from the memo or patched when the inputs allow
        (`pipeline.memo`): all `intentc check` prints without --topology."""
        from intentc.pipeline.memo import summarize

        return summarize(self.paths, self.jobs, self.cache_dir, self.use_cache, self.progress, self.exclude)

    def load(self) -> Loaded:
        """The load stage: the files read, parsed and checked one by one, through the parse cache."""
        from intentc.pipeline.loading import load

        return load(self.paths, jobs=self.jobs, cache_dir=self.cache_dir, use_cache=self.use_cache,
                    progress=self.progress, exclude=self.exclude, reuse=self.reuse)

    @property
    def has_checked(self) -> bool:
        return self._checked is not None

    def check(self, loaded: Loaded | None = None) -> Checked:
        """The check stage, run once: of `loaded`, else of the files loaded now."""
        if self._checked is None:
            from intentc.pipeline.checked import check_loaded

            self._checked = check_loaded(loaded if loaded is not None else self.load())
        return self._checked

    def topology_files(self) -> list[str]:
        """The files among the inputs that declare a Topology, from the check."""
        return sorted({t.span.file for t in self.check().program.topologies})

    # -- what the plan stage reads --------------------------------------------------------
    @property
    def policy(self) -> PolicyFiles:
        """The repository's tag rules (the nearest `policies/`), read once."""
        if self._policy is None:
            from intentc.policy.load import load_policies

            self._policy = load_policies(self.paths)
        return self._policy

    def topology(self, path: str, fresh: bool = False) -> TopologyFile:
        """The Topology file at `path`, read once (`fresh`: again, it changed)."""
        known = self._topologies.get(path)
        if known is None or fresh:
            from intentc.frontend.sources import read_text
            from intentc.pipeline.stages import TopologyFile
            from intentc.topology.load import load_topology

            loaded, diags = load_topology(path)
            known = self._topologies[path] = TopologyFile(path, loaded, tuple(diags), read_text(path))
        return known

    # -- the stages -----------------------------------------------------------------------
    def run(self, start: Request | Unit, until: Stage) -> Unit:
        """The stages in order (`stages.STAGES`) from where `start` is (a request: from the
        load) up to `until`, or until one stops the run."""
        from intentc.pipeline.stages import STAGES, Unit

        unit = start if isinstance(start, Unit) else Unit(start)
        order = [step.stage for step in STAGES]
        first = 0 if unit.reached is None else order.index(unit.reached) + 1
        for step in STAGES[first:order.index(until) + 1]:
            if unit.stopped:
                break
            unit = dataclasses.replace(step.run(self, unit), reached=step.stage)
        return unit

    def compile(self, request: Request) -> CompileResult:
        """Check, plan and render: the result `compile` writes and `apply` applies."""
        from intentc.pipeline.stages import Stage

        result = self.run(request, Stage.RENDER).result
        assert result is not None
        return result


def check(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
          use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = (),
          reuse: Reused | None = None) -> Checked:
    """Everything `intentc check` reports: parse, semantic passes, dependency findings (files
    matching `exclude` left out).  `progress` hears how parsing, the long part, advances;
    `reuse`: see `pipeline.loading.load`."""
    return Driver(paths, jobs, exclude, cache_dir, use_cache, progress, reuse).check()


def compile_paths(paths: Sequence[str], topology: str, commit: str, kube_version: KubeVersion | None = None,
                  target: str | None = None, seed: int = 0, jobs: int | None = None, exclude: Sequence[str] = (),
                  live: LiveReader | None = None, only: Callable[[Intent], bool] | None = None,
                  pack: BodyCodec | None = None, reuse: Reused | None = None,
                  previous: Plan | None = None) -> CompileResult:
    """Check, plan and render (files matching `exclude` left out), on a driver of its own;
    `kube_version` and `target` default to the oldest supported version and the default
    render target (`stages.Request`)."""
    from intentc.pipeline.stages import Request

    request = Request(topology, commit, seed=seed, live=live, only=only, pack=pack, previous=previous)
    if kube_version is not None:
        request = dataclasses.replace(request, kube_version=kube_version)
    if target is not None:
        request = dataclasses.replace(request, target=target)
    return Driver(paths, jobs, exclude, reuse=reuse).compile(request)
