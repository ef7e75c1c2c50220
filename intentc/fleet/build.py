"""`intentc compile --clusters DIR`: one parse, one plan and render per cluster.

The repository is parsed and checked once, by one compile driver; each
cluster then gets the intents it selects (`fleet.select`) planned on its own
topology and rendered for its own target by the driver's later stages, on
that one check, so a cluster's output is byte for byte what `intentc compile --topology T
--render-target R` gives for those intents.  Outputs go to DIR/<cluster>/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.fleet.clusters import Cluster, Fleet
from intentc.fleet.select import Selection, select
from intentc.pipeline.checked import Checked
from intentc.pipeline.driver import Driver
from intentc.pipeline.outputs import write_outputs
from intentc.pipeline.result import CompileResult
from intentc.pipeline.stages import Request
from intentc.render.capabilities import DEFAULT_KUBE_VERSION, KubeVersion

# Told each cluster's name as its compile finishes (progress; the CLI prints nothing by default).
Done = Callable[[str], None]


@dataclass(frozen=True)
class FleetResult:
    fleet: Fleet
    diagnostics: tuple[Diagnostic, ...]                  # the repository's, the fleet's, the selection's
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    results: tuple[tuple[Cluster, CompileResult], ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.results) and not has_errors(self.diagnostics) and all(r.ok for _, r in self.results)


@dataclass(frozen=True)
class Prepared:
    """The repository checked once (by `driver`, which every cluster's compile shares), and
    which intents each cluster gets."""

    driver: Driver = field(compare=False)
    selection: Selection
    diagnostics: tuple[Diagnostic, ...]          # the fleet's and the selection's
    sources: dict[str, str]

    @property
    def checked(self) -> Checked:
        return self.driver.check()


def prepare(paths: Sequence[str], fleet: Fleet, jobs: int | None = None, exclude: Sequence[str] = ()) -> Prepared:
    driver = Driver(paths, jobs, exclude)
    checked = driver.check()
    selection = select(checked.program, fleet)
    diags = sorted_diagnostics(list(fleet.diagnostics) + list(selection.diagnostics))
    return Prepared(driver, selection, tuple(diags), {**fleet.sources, **checked.sources})


def compile_cluster(prep: Prepared, cluster: Cluster, commit: str,
                    kube_version: KubeVersion = DEFAULT_KUBE_VERSION, seed: int = 0) -> CompileResult:
    """The ordinary compile of the intents `cluster` selects, on its topology, for its target."""
    wanted = prep.selection.by_cluster[cluster.name]
    return prep.driver.compile(Request(cluster.topology, commit, kube_version, cluster.target, seed,
                                       only=lambda i: i.name in wanted))


def compile_fleet(paths: Sequence[str], fleet: Fleet, commit: str,
                  kube_version: KubeVersion = DEFAULT_KUBE_VERSION, seed: int = 0, jobs: int | None = None,
                  exclude: Sequence[str] = (), done: Done = lambda _: None) -> FleetResult:
    prep = prepare(paths, fleet, jobs, exclude)
    diags = list(prep.diagnostics)
    if has_errors(diags):
        return FleetResult(fleet, tuple(sorted_diagnostics(diags + list(prep.checked.diagnostics))), prep.sources)
    results = []
    for cluster in fleet.clusters:
        results.append((cluster, compile_cluster(prep, cluster, commit, kube_version, seed)))
        done(cluster.name)
    return FleetResult(fleet, tuple(diags), prep.sources, tuple(results))


def write_fleet(result: FleetResult, out_dir: str | Path) -> dict[str, list[str]]:
    """Each cluster's outputs under `out_dir`/<cluster>/ (write_outputs, atomic per cluster)."""
    return {cluster.name: write_outputs(r, Path(out_dir) / cluster.name)
            for cluster, r in result.results if r.rendered is not None}
