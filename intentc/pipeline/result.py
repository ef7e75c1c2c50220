"""What the plan and render stages make: the diagnostics, the plan, the objects.

`files()` is what the write stage puts on disk; plan.json and graph.json are
made from it on demand, since `apply` and the daemon's git mode never read
them.  Errors that belong to one tenant hold back only that tenant
(`intentc.pipeline.holdback`): the others are rendered, the result is not `ok`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from intentc.diagnostics import Diagnostic, Span, has_errors
from intentc.frontend.sources import OUTPUT_MANIFESTS
from intentc.graph import digraph
from intentc.ir import Program
from intentc.plan.jsonio import plan_to_json
from intentc.plan.model import Occupancy, Plan
from intentc.policy.catalogue import Policies
from intentc.render.model import Rendered
from intentc.render.output import KUSTOMIZATION, kustomization, manifest_files, manifest_names
from intentc.topology.load import LoadedTopology

if TYPE_CHECKING:
    import networkx as nx

MANIFESTS_DIR = OUTPUT_MANIFESTS          # discovery skips it beside the output marker

# (program, topology) -> (the topology with the cluster's GPU nodes, what is taken, why): reads a
# cluster; injected so this module stays pure.
LiveReader = Callable[[Program, LoadedTopology], tuple[LoadedTopology, Occupancy, tuple[str, ...]]]


@dataclass(frozen=True)
class CompileResult:
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    program: Program | None = None
    plan: Plan | None = None
    rendered: Rendered | None = None
    topology_unreadable: bool = False
    # What the plan was made with, for callers that plan again (apply's live binding).
    topology: LoadedTopology | None = field(default=None, compare=False)
    policies: Policies | None = field(default=None, compare=False)
    # graph.json names the files relative to this folder (a revision's export, `compile_revision`)
    files_under: str = field(default="", compare=False)

    @functools.cached_property
    def dag(self) -> nx.DiGraph | None:
        """The dependency graph with its attributes, built when first asked for (graph.json):
        applying a commit never needs it.  The daemon's git mode built it
        for every commit and copied it to relabel its files: two graphs of the whole
        program, beside the plan in force."""
        if self.rendered is None or self.program is None:
            return None
        g = digraph.build(self.program)[0]
        if self.files_under:
            for _u, _v, data in g.edges(data=True):
                span = data.get("span")
                if isinstance(span, Span) and span.file.startswith(self.files_under):
                    data["span"] = dataclasses.replace(span, file=span.file[len(self.files_under):])
        return g

    @property
    def plan_json(self) -> str:
        return plan_to_json(self.plan) if self.plan is not None else ""

    @property
    def graph_json(self) -> str:
        """Made on demand: `apply` never needs the JSON documents."""
        return digraph.to_json(self.dag, digraph.waves(self.dag)) if self.dag is not None else ""

    @property
    def ok(self) -> bool:
        return self.rendered is not None and not has_errors(self.diagnostics)

    @property
    def held_tenants(self) -> tuple[str, ...]:
        """Tenants whose errors held them back while the others were rendered."""
        return self.rendered.held_tenants if self.rendered is not None else ()

    def files(self) -> dict[str, str]:
        """Relative path → text of every output file."""
        if self.rendered is None:
            return {}
        out = {f"{MANIFESTS_DIR}/{name}": text for name, text in manifest_files(self.rendered.manifests).items()}
        out[f"{MANIFESTS_DIR}/{KUSTOMIZATION}"] = kustomization(manifest_names(self.rendered.manifests))
        out["plan.json"] = self.plan_json
        out["graph.json"] = self.graph_json
        return out
