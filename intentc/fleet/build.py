"""`intentc compile --clusters DIR`: one parse, one plan and render per cluster.

The repository is parsed and checked once; each cluster then gets the
intents it selects (`fleet.select`) planned on its own topology and
rendered for its own target by the ordinary compile (`compile_checked`),
so a cluster's output is byte for byte what `intentc compile --topology T
--render-target R` gives for those intents.  Outputs go to DIR/<cluster>/.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from intentc.compile import CompileResult, compile_checked, write_outputs
from intentc.diagnostics import Diagnostic, has_errors, sorted_diagnostics
from intentc.fleet.clusters import Cluster, Fleet
from intentc.fleet.select import select
from intentc.pipeline import check
from intentc.policy.load import load_policies
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


def compile_fleet(paths: Sequence[str], fleet: Fleet, commit: str,
                  kube_version: KubeVersion = DEFAULT_KUBE_VERSION, seed: int = 0, jobs: int | None = None,
                  exclude: Sequence[str] = (), done: Done = lambda _: None) -> FleetResult:
    checked = check(paths, jobs=jobs, exclude=exclude)
    policy = load_policies(paths)
    selection = select(checked.program, fleet)
    diags = sorted_diagnostics(list(fleet.diagnostics) + list(selection.diagnostics))
    sources = {**fleet.sources, **checked.sources}
    if has_errors(diags):
        return FleetResult(fleet, tuple(sorted_diagnostics(diags + list(checked.diagnostics))), sources)
    results = []
    for cluster in fleet.clusters:
        wanted = selection.by_cluster[cluster.name]
        program = dataclasses.replace(checked.program,
                                      intents=tuple(i for i in checked.program.intents if i.name in wanted))
        result = compile_checked(dataclasses.replace(checked, program=program), policy, cluster.topology,
                                 commit, kube_version, cluster.target, seed)
        results.append((cluster, result))
        done(cluster.name)
    return FleetResult(fleet, tuple(diags), sources, tuple(results))


def write_fleet(result: FleetResult, out_dir: str | Path) -> dict[str, list[str]]:
    """Each cluster's outputs under `out_dir`/<cluster>/ (write_outputs, atomic per cluster)."""
    return {cluster.name: write_outputs(r, Path(out_dir) / cluster.name)
            for cluster, r in result.results if r.rendered is not None}
