"""Which intent waits for which, and what `intentc check` reports about it,
without building a graph.

`intentc.graph.digraph` turns these edges into a networkx `DiGraph` for everything
that walks the graph (waves, the critical path, the plan, the renderings).
`check` needs only the two findings: a dataset produced twice (E0503) and
dependency cycles (E0501).  Importing networkx is a large part of what
`intentc check` spends before it reads a file, so a repository
without cycles is told so by a plain topological count (`has_cycle`) and
networkx is imported only to describe the cycles of one that has some.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from intentc import ir
from intentc.diagnostics import Diagnostic, Related, Span, error, excerpt

if TYPE_CHECKING:
    import networkx as nx

# Enumerating elementary cycles is exponential in the worst case; a repository
# with that many cycles needs its first few fixed before the rest matter.
MAX_CYCLES_REPORTED = 50
# Intents one cycle's message names; a longer cycle keeps its first and last half of
# these and counts the middle: a loop through every intent would otherwise name them all.
MAX_CYCLE_SHOWN = 20


class Edge(NamedTuple):
    """Why `v` waits for `u`: `trigger: after u` ("after") or a dataset `u` produces ("data")."""

    reason: str
    dataset: str | None
    span: Span


def unique_intents(program: ir.Program) -> dict[str, ir.Intent]:
    """First declaration of each name wins; duplicates are the name pass's E0304."""
    out: dict[str, ir.Intent] = {}
    for intent in program.intents:
        out.setdefault(intent.name, intent)
    return dict(sorted(out.items()))


def _unique_refs(refs: tuple[ir.Ref, ...]) -> Iterable[ir.Ref]:
    if len(refs) < 2:           # most intents: nothing to drop (300,000 calls at 100,000 intents)
        return refs
    seen: set[str] = set()
    out = []
    for r in refs:
        if r.name not in seen:
            seen.add(r.name)
            out.append(r)
    return out


def producers(intents: Mapping[str, ir.Intent]) -> tuple[dict[str, list[tuple[str, ir.Ref]]], list[Diagnostic]]:
    """dataset → [(producing intent, its `produces` ref)], in name order; E0503 for extra producers."""
    out: dict[str, list[tuple[str, ir.Ref]]] = {}
    diags: list[Diagnostic] = []
    for name, intent in intents.items():
        for ref in _unique_refs(intent.produces):
            out.setdefault(ref.name, []).append((name, ref))
    for dataset in sorted(d for d, prods in out.items() if len(prods) > 1):    # not all 100,000 outputs
        prods = out[dataset]
        first, first_ref = prods[0]
        for other, ref in prods[1:]:
            diags.append(error(
                "E0503", f'dataset "{excerpt(dataset)}" is produced by both "{excerpt(first)}" and "{excerpt(other)}"', ref.span,
                hint="give each output its own dataset name, or let one intent produce it",
                related=[Related(f'"{first}" produces it here', first_ref.span)]))
    return out, diags


def edges(intents: Mapping[str, ir.Intent],
          produced: Mapping[str, list[tuple[str, ir.Ref]]]) -> dict[tuple[str, str], Edge]:
    """(u, v) → why v waits for u, in the order `digraph.build` adds them (so that cycles
    are enumerated in a fixed order): every `after` first, then data.

    Unknown names in `after` and consumed datasets that nothing produces or
    declares are skipped: the name-resolution pass reports them (E0303, E0302).
    When both an `after` and a data dependency link the same pair, the `after`
    clause is kept as the edge's reason (it is the explicit one).
    """
    out: dict[tuple[str, str], Edge] = {}
    for name, intent in intents.items():
        for ref in _unique_refs(intent.trigger.after):
            if ref.name in intents:
                out.setdefault((ref.name, name), Edge("after", None, ref.span))
    for name, intent in intents.items():
        for ref in _unique_refs(intent.consumes):
            for producer, _ in produced.get(ref.name, ()):
                out.setdefault((producer, name), Edge("data", ref.name, ref.span))
    return out


def links(intents: Mapping[str, ir.Intent],
          produced: Mapping[str, list[tuple[str, ir.Ref]]]) -> Iterator[tuple[str, str]]:
    """The (u, v) pairs of `edges`, repeats included, without their reasons: all
    that a cycle check needs (no `Edge` and no span per edge: at 100,000 intents
    `edges` was a fifth of check's global passes)."""
    for name, intent in intents.items():
        for ref in intent.trigger.after:
            if ref.name in intents:
                yield ref.name, name
        for ref in intent.consumes:
            for producer, _ in produced.get(ref.name, ()):
                yield producer, name


def has_cycle(links: Iterable[tuple[str, str]]) -> bool:
    """Whether the links close a cycle: Kahn's algorithm over the intents that have
    a link at all (an intent without one cannot be on a cycle).  A repeated link
    counts twice into a node's in-degree and is taken away twice, so repeats need
    no removing.  graphlib's `TopologicalSorter` builds a record per intent,
    which is most of its cost; plain lists and counts are not."""
    waiting: dict[str, list[str]] = {}
    indegree: dict[str, int] = {}
    for u, v in links:
        waiting.setdefault(u, []).append(v)
        indegree[v] = indegree.get(v, 0) + 1
    ready = [u for u in waiting if u not in indegree]
    left = len(indegree)
    while ready:
        for v in waiting.get(ready.pop(), ()):
            n = indegree[v] - 1
            indegree[v] = n
            if n == 0:
                left -= 1
                ready.append(v)
    return left > 0


def diagnostics(program: ir.Program) -> list[Diagnostic]:
    """What `digraph.build` reports (E0503, then E0501 per cycle), the graph built only
    when there is a cycle to describe."""
    intents = unique_intents(program)
    produced, diags = producers(intents)
    if has_cycle(links(intents, produced)):
        import networkx as nx    # only a repository with a cycle pays for it

        found = edges(intents, produced)
        g: nx.DiGraph = nx.DiGraph()
        g.add_nodes_from(intents)
        g.add_edges_from(found)
        return diags + cycle_diagnostics(g, found)
    return diags


# --------------------------------------------------------------------------
# Cycles (E0501): described on the networkx graph of the intents that have one
# --------------------------------------------------------------------------

def _canonical_cycle(cycle: list[str]) -> tuple[str, ...]:
    """Rotate so the smallest name comes first: one spelling per cycle."""
    i = cycle.index(min(cycle))
    return tuple(cycle[i:] + cycle[:i])


def cycles(g: nx.DiGraph, limit: int = MAX_CYCLES_REPORTED) -> list[tuple[str, ...]]:
    """Elementary cycles, each once, shortest first then by names.

    The strongly connected components that hold a cycle are taken in the order
    of their first name.  One with as many edges as intents is a single cycle,
    read off by following each intent's one successor inside it, which is linear:
    networkx's enumeration must also prove there is no other, and grows faster
    than the loop.  The others are
    enumerated by networkx (Johnson's algorithm) on the component alone, in a
    fixed order (the graph is built in name order).  At most `limit` are
    enumerated, so more than `limit` results means "more exist".
    """
    import networkx as nx    # `g` is one already: its module is loaded

    found: list[list[str]] = []
    for component in cyclic_components(g):
        if len(found) >= limit:
            break
        members = set(component)
        inside = {u: [v for v in g.succ[u] if v in members] for u in component}
        if sum(map(len, inside.values())) == len(component):
            found.append(_loop(inside, component[0]))
        else:
            found.extend(itertools.islice(nx.simple_cycles(g.subgraph(component)), limit - len(found)))
    return sorted({_canonical_cycle(c) for c in found}, key=lambda c: (len(c), c))


def _loop(inside: Mapping[str, list[str]], start: str) -> list[str]:
    """The one cycle of a component in which every intent has one successor."""
    cycle = [start]
    node = inside[start][0]
    while node != start:
        cycle.append(node)
        node = inside[node][0]
    return cycle


def cyclic_components(g: nx.DiGraph) -> list[list[str]]:
    """The strongly connected components that hold a cycle (two intents or more, or
    one that waits for itself), each sorted by name, in the order of their first."""
    import networkx as nx    # `g` is one already: its module is loaded

    if nx.is_directed_acyclic_graph(g):
        # the common case, in one topological pass: Tarjan's bookkeeping (several dicts of
        # every intent) would add to the planner's peak (docs/reload.md)
        return []
    return sorted(sorted(c) for c in nx.strongly_connected_components(g)
                  if len(c) > 1 or g.has_edge(next(iter(c)), next(iter(c))))


def _edge_note(why: Mapping[tuple[str, str], Edge], u: str, v: str) -> str:
    data = why[u, v]
    if data.reason == "data":
        return f'"{v}" consumes "{data.dataset}", which "{u}" produces'
    return f'"{v}" runs after "{u}"'


def cycle_diagnostics(g: nx.DiGraph, why: Mapping[tuple[str, str], Edge]) -> list[Diagnostic]:
    """E0501 per cycle of `g`, whose edges are `why`'s (their reasons and clauses)."""
    diags = []
    found = cycles(g, MAX_CYCLES_REPORTED + 1)
    truncated = len(found) > MAX_CYCLES_REPORTED
    found = found[:MAX_CYCLES_REPORTED]
    for cycle in found:
        edges = list(zip(cycle, cycle[1:] + cycle[:1]))
        closing = edges[-1]                       # the edge back into the first intent
        span: Span = why[closing].span
        related = [Related(_edge_note(why, u, v), why[u, v].span) for u, v in _shown(edges)]
        if len(cycle) == 1:
            hint = ("an intent cannot wait for itself: remove the `after` or read and write "
                    "different datasets")
        else:
            hint = "remove one of these dependencies to break the cycle"
        if truncated and cycle == found[-1]:
            hint += f" (only the first {MAX_CYCLES_REPORTED} cycles are reported)"
        diags.append(error("E0501", f"dependency cycle: {_chain(cycle)}", span, hint=hint, related=related))
    return diags


def _chain(cycle: tuple[str, ...]) -> str:
    """``a → b → c → a``; past `MAX_CYCLE_SHOWN` intents, the middle is counted, not named."""
    names = (*cycle, cycle[0])
    if len(cycle) <= MAX_CYCLE_SHOWN:
        return " → ".join(names)
    half = MAX_CYCLE_SHOWN // 2
    return (" → ".join(names[:half]) + f" → … ({len(cycle) - 2 * half:,} more) → "
            + " → ".join(names[-half - 1:]))


def _shown(edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The edges a cycle's notes point at: all of them, or the first and last
    `MAX_CYCLE_SHOWN // 2` when `_chain` elides the middle."""
    half = MAX_CYCLE_SHOWN // 2
    return edges if len(edges) <= MAX_CYCLE_SHOWN else edges[:half] + edges[-half:]
