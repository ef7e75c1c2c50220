"""The dependency graph as the planner reads it: per intent what it waits for, its wave,
the critical path, and the intents on cycles, without a networkx graph where there is no
cycle to describe.

The planner reads only the shape of the graph (`make_plan`).  A networkx `DiGraph` holds
an attribute dictionary and a successor and a predecessor dictionary per intent: the
planner's largest table while the graph lives (the daemon's full
re-plan, docs/reload.md, Memory).  Here the shape is one tuple of names per intent, and
the waves come from the same walk that finds a cycle.  A program with a cycle is handed
to `graph` (networkx), which describes its cycles (E0501) and leaves the intents on them
out of the waves; the results are the same either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from intentc import ir
from intentc.diagnostics import Diagnostic
from intentc.graph import digraph
from intentc.graph.dependencies import links, producers, unique_intents
from intentc.plan.metrics import longest_chain

NONE: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Shape:
    """What `make_plan` reads of the dependency graph."""

    after: dict[str, tuple[str, ...]]    # per intent: what it waits for, sorted (none on a cycle)
    waves: tuple[tuple[str, ...], ...]   # topological generations, each sorted (no intent on a cycle)
    wave_of: dict[str, int]
    cyclic: frozenset[str]
    path: tuple[str, ...]                # the critical path and its length in seconds
    path_s: int


def shape(program: ir.Program, durations: Mapping[str, int]) -> tuple[Shape, list[Diagnostic]]:
    """The plan's view of the dependency graph, and `digraph.checked`'s findings (E0503, E0501)."""
    intents = unique_intents(program)
    produced, diags = producers(intents)
    waits: dict[str, list[str]] = {}      # lists, not sets: most intents wait for one or none
    for u, v in links(intents, produced):
        waits.setdefault(v, []).append(u)
    del produced
    after = {name: _sorted_once(waits[name]) if name in waits else NONE for name in intents}
    del waits
    depth = _depths(intents, after)
    if depth is None:
        return _with_cycles(program, durations)
    by_wave: list[list[str]] = []
    for name, k in depth.items():
        while len(by_wave) <= k:
            by_wave.append([])
        by_wave[k].append(name)
    del depth
    waves = tuple(tuple(sorted(names)) for names in by_wave)
    del by_wave
    path, path_s = _critical_path(waves, after, durations)
    return Shape(after, waves, _wave_of(waves), frozenset(), path, path_s), diags


def _sorted_once(names: list[str]) -> tuple[str, ...]:
    """The names sorted, each once (a link may repeat: an `after` and a dataset)."""
    return (names[0],) if len(names) == 1 else tuple(sorted(set(names)))


def _wave_of(waves: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {name: i for i, wave in enumerate(waves) for name in wave}


def _depths(intents: Mapping[str, object], after: Mapping[str, tuple[str, ...]]) -> dict[str, int] | None:
    """Per intent, its topological generation (0 for one that waits for nothing, else one
    more than the latest of what it waits for); None when the links close a cycle."""
    depth: dict[str, int] = {}
    for root in intents:
        if root in depth:
            continue
        on_path = {root}
        stack = [(root, iter(after[root]))]
        while stack:
            node, rest = stack[-1]
            for u in rest:
                if u in on_path:
                    return None
                if u not in depth:
                    on_path.add(u)
                    stack.append((u, iter(after[u])))
                    break
            else:
                stack.pop()
                on_path.discard(node)
                depth[node] = 1 + max((depth[u] for u in after[node]), default=-1)
    return depth


def _critical_path(waves: tuple[tuple[str, ...], ...], after: Mapping[str, tuple[str, ...]],
                   durations: Mapping[str, int]) -> tuple[tuple[str, ...], int]:
    """`digraph.critical_path` over an acyclic shape: the longest chain by summed durations,
    ties to the smallest name (the answer does not depend on the visiting order)."""
    return longest_chain((v for wave in waves for v in wave), after.__getitem__, durations, after)


def _with_cycles(program: ir.Program, durations: Mapping[str, int]) -> tuple[Shape, list[Diagnostic]]:
    """A program with a cycle: networkx describes the cycles and finds who is on one."""
    g, diags = digraph.checked(program)
    cyclic = digraph.nodes_in_cycles(g)
    waves = digraph.waves(g, cyclic)
    path, path_s = digraph.critical_path(g, durations, cyclic)
    after = {name: NONE if name in cyclic else tuple(sorted(u for u in g.predecessors(name) if u not in cyclic))
             for name in sorted(g)}
    g.clear()                   # its views refer back to it: emptied now, the collector is paused
    return Shape(after, waves, _wave_of(waves), cyclic, path, path_s), diags
