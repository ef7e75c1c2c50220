"""What a change does to the dependency graph: edges, cycles, waves.

Both graphs come from `intentc.graph.digraph.build`, the same function the compiler
and the planner use, so "an edge" means exactly what it means everywhere
else (an `after` clause, or a dataset one intent produces and another
consumes).  Waves are the planner's waves (`Plan.waves` is `digraph.waves`),
so they are reported here even when no topology is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from intentc.graph import dependencies
from intentc.graph import digraph
from intentc.ir import Program


@dataclass(frozen=True, order=True)
class Edge:
    source: str                 # runs first
    target: str
    reason: str                 # "after" | "data"
    dataset: str | None = None


@dataclass(frozen=True)
class WaveMove:
    intent: str
    old: int                    # wave index in the base (0 runs first)
    new: int


@dataclass(frozen=True)
class GraphDiff:
    added: tuple[Edge, ...] = ()
    removed: tuple[Edge, ...] = ()
    new_cycles: tuple[tuple[str, ...], ...] = ()
    fixed_cycles: tuple[tuple[str, ...], ...] = ()
    waves: tuple[WaveMove, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.new_cycles or self.fixed_cycles or self.waves)


@dataclass(frozen=True)
class GraphView:
    """The parts of a graph a diff compares, computed once per side."""

    edges: frozenset[Edge]
    cycles: frozenset[tuple[str, ...]]
    wave_of: dict[str, int]


def view(program: Program) -> GraphView:
    g, _ = digraph.build(program)       # diagnostics are the compiler's to report, not the diff's
    return view_of(g)


def view_of(g: nx.DiGraph) -> GraphView:
    edges = frozenset(Edge(u, v, str(d.get("reason", "")), d.get("dataset")) for u, v, d in g.edges(data=True))
    waves = digraph.waves(g)
    cycles = frozenset() if nx.is_directed_acyclic_graph(g) else frozenset(dependencies.cycles(g))
    return GraphView(edges, cycles, {n: i for i, w in enumerate(waves) for n in w})


def diff_graphs(base: GraphView, head: GraphView) -> GraphDiff:
    moves = tuple(WaveMove(n, base.wave_of[n], head.wave_of[n])
                  for n in sorted(set(base.wave_of) & set(head.wave_of))
                  if base.wave_of[n] != head.wave_of[n])
    return GraphDiff(
        added=tuple(sorted(head.edges - base.edges)),
        removed=tuple(sorted(base.edges - head.edges)),
        new_cycles=tuple(sorted(head.cycles - base.cycles, key=lambda c: (len(c), c))),
        fixed_cycles=tuple(sorted(base.cycles - head.cycles, key=lambda c: (len(c), c))),
        waves=moves,
    )
