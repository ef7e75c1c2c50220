"""The dependency graph between intents: edges, cycles, waves, critical path.

An edge ``u → v`` means *v depends on u* (u runs first).  Edges come from
two places, and each remembers the clause that created it so a cycle can
point at every link of the chain:

* ``trigger: after u`` in v (``reason="after"``);
* data: v ``consumes`` a dataset that u ``produces`` (``reason="data"``).

The graph is built in name order, not file order, so everything derived
from it (cycle reports, waves, the critical path, the text renderings) is
identical however the input files are ordered or named.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping

import networkx as nx

from intentc import ir
from intentc.dependencies import Edge, edges, producers, unique_intents
from intentc.diagnostics import Diagnostic, Related, Span, error
from intentc.duration import parse_duration

# Enumerating elementary cycles is exponential in the worst case; a repository
# with that many cycles needs its first few fixed before the rest matter.
MAX_CYCLES_REPORTED = 50
# Intents one cycle's message names; a longer cycle keeps its first and last half of
# these and counts the middle: a loop through every intent would otherwise name them all.
MAX_CYCLE_SHOWN = 20

# Defaults when an intent gives no `duration` (seconds).  Serving is
# long-running and never "finishes", so it adds nothing to the makespan.
DEFAULT_DURATIONS: Mapping[str, int] = {
    ir.ActionKind.BATCH.value: 30 * 60,
    ir.ActionKind.TRAINING.value: 4 * 3600,
    ir.ActionKind.INFERENCE.value: 3600,
    ir.ActionKind.SERVE.value: 0,
}


# --------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------

def duration_seconds(intent: ir.Intent) -> int:
    """The intent's estimated run time: its own `duration`, else the default for its kind."""
    if intent.constraints.duration is not None:
        parsed = parse_duration(intent.constraints.duration)
        if parsed is not None:
            return parsed
    return DEFAULT_DURATIONS.get(intent.action.kind, DEFAULT_DURATIONS[ir.ActionKind.BATCH.value])


# --------------------------------------------------------------------------
# Building the graph
# --------------------------------------------------------------------------

def build(program: ir.Program) -> tuple[nx.DiGraph, list[Diagnostic]]:
    """Intents → DiGraph plus E0501 (cycle) and E0503 (produced twice).

    The edges, each with its `reason`, `dataset` and `span`, are
    `dependencies.edges`: unknown names are the name pass's to report, and an
    `after` wins over a data dependency between the same pair.
    """
    intents = unique_intents(program)
    g: nx.DiGraph = nx.DiGraph()
    for name, intent in intents.items():
        g.add_node(name, intent=intent)
    produced, diags = producers(intents)
    found = edges(intents, produced)
    for (u, v), edge in found.items():
        g.add_edge(u, v, reason=edge.reason, dataset=edge.dataset, span=edge.span)
    diags.extend(_cycle_diagnostics(g, found))
    return g, diags


def checked(program: ir.Program) -> tuple[nx.DiGraph, list[Diagnostic]]:
    """`build`'s nodes, edges and findings, without the attributes: what the planner reads.
    The attributes (each intent, each edge's reason and clause) are only read for the
    reports, from the edges themselves; kept, they would add a dictionary per intent
    and edge to the planner's peak (docs/reload.md, Memory)."""
    intents = unique_intents(program)
    produced, diags = producers(intents)
    found = edges(intents, produced)
    g: nx.DiGraph = nx.DiGraph()
    g.add_nodes_from(intents)
    g.add_edges_from(found)
    diags.extend(_cycle_diagnostics(g, found))
    return g, diags


def dependencies(program: ir.Program) -> nx.DiGraph:
    """The nodes and edges of `build`'s graph only: none of the attributes its reports
    read (each intent, each edge's reason and clause), no findings.  For what needs
    only the shape (the incremental planner's index), at a fraction of the memory."""
    intents = unique_intents(program)
    g: nx.DiGraph = nx.DiGraph()
    g.add_nodes_from(intents)
    g.add_edges_from(edges(intents, producers(intents)[0]))
    return g


# --------------------------------------------------------------------------
# Cycles
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


def _cycle_diagnostics(g: nx.DiGraph, why: Mapping[tuple[str, str], Edge]) -> list[Diagnostic]:
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


def nodes_in_cycles(g: nx.DiGraph) -> frozenset[str]:
    """Intents on some cycle: members of a strongly connected component with an edge inside."""
    return frozenset(itertools.chain.from_iterable(cyclic_components(g)))


def _acyclic(g: nx.DiGraph, cyclic: frozenset[str] | None = None) -> nx.DiGraph:
    """`g` without the intents on cycles (`cyclic`: `nodes_in_cycles(g)`, if the caller has it)."""
    if cyclic is None:
        cyclic = nodes_in_cycles(g)
    if not cyclic:
        return g
    return g.subgraph(n for n in g if n not in cyclic)


# --------------------------------------------------------------------------
# Waves and the critical path
# --------------------------------------------------------------------------

def waves(g: nx.DiGraph, cyclic: frozenset[str] | None = None) -> tuple[tuple[str, ...], ...]:
    """Topological generations, each sorted by name; intents on cycles are left out
    (they were reported by `build`), their dependents still get a wave.  `cyclic`:
    `nodes_in_cycles(g)` when the caller has it already (a large graph takes a while)."""
    return tuple(tuple(sorted(gen)) for gen in nx.topological_generations(_acyclic(g, cyclic)))


def longest_chains(g: nx.DiGraph, durations: Mapping[str, int],
                   cyclic: frozenset[str] | None = None) -> tuple[dict[str, int], dict[str, str | None]]:
    """Per intent, the longest chain of summed durations ending with it, and the
    predecessor on that chain (ties to the smallest name; None for a root).
    `cyclic`: as for `waves`."""
    h = _acyclic(g, cyclic)
    dist: dict[str, int] = {}
    prev: dict[str, str | None] = {}
    for v in nx.topological_sort(h):
        best: str | None = None
        for u in h.predecessors(v):
            if best is None or (-dist[u], u) < (-dist[best], best):
                best = u
        dist[v] = durations.get(v, 0) + (dist[best] if best is not None else 0)
        prev[v] = best
    return dist, prev


def chain_end(prev: Mapping[str, str | None], end: str) -> tuple[str, ...]:
    """The chain `longest_chains` found ending with `end`, first intent first."""
    path = [end]
    while (p := prev[path[-1]]) is not None:
        path.append(p)
    return tuple(reversed(path))


def critical_path(g: nx.DiGraph, durations: Mapping[str, int],
                  cyclic: frozenset[str] | None = None) -> tuple[tuple[str, ...], int]:
    """The longest chain by summed durations, and its length (the makespan).

    Ties go to the predecessor (and the end intent) with the smallest name,
    so the answer depends neither on insertion nor on visiting order.
    `cyclic`: as for `waves`.
    """
    dist, prev = longest_chains(g, durations, cyclic)
    if not dist:
        return (), 0
    end = min(dist, key=lambda n: (-dist[n], n))
    return chain_end(prev, end), dist[end]


def durations_of(g: nx.DiGraph) -> dict[str, int]:
    """Per-node duration from the `intent` node attribute (0 where there is none)."""
    out = {}
    for n, data in g.nodes(data=True):
        intent = data.get("intent")
        out[n] = duration_seconds(intent) if isinstance(intent, ir.Intent) else 0
    return out


# --------------------------------------------------------------------------
# Text renderings (deterministic: nodes and edges in name order)
# --------------------------------------------------------------------------

def _sorted_edges(g: nx.DiGraph) -> list[tuple[str, str, dict[str, object]]]:
    return sorted(g.edges(data=True), key=lambda e: (e[0], e[1]))


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.DiGraph) -> str:
    """Graphviz DOT; each wave is one rank, data edges are dashed and labelled."""
    lines = ["digraph intents {", "  rankdir=LR;", "  node [shape=box];"]
    placed: set[str] = set()
    for i, wave in enumerate(waves(g)):
        lines.append(f"  subgraph wave_{i} {{ rank=same; {' '.join(_dot_id(n) + ';' for n in wave)} }}")
        placed.update(wave)
    for n in sorted(g.nodes):
        if n not in placed:
            lines.append(f"  {_dot_id(n)} [color=red];")
    for u, v, data in _sorted_edges(g):
        attrs = ""
        if data.get("reason") == "data":
            attrs = f" [style=dashed, label={_dot_id(str(data.get('dataset')))}]"
        lines.append(f"  {_dot_id(u)} -> {_dot_id(v)}{attrs};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(g: nx.DiGraph) -> str:
    """A Mermaid flowchart; node ids are positional so names never clash with syntax."""
    ids = {n: f"n{i}" for i, n in enumerate(sorted(g.nodes))}
    lines = ["flowchart LR"]
    for n, nid in ids.items():
        lines.append(f'  {nid}["{_mermaid_text(n)}"]')
    for u, v, data in _sorted_edges(g):
        if data.get("reason") == "data":
            lines.append(f'  {ids[u]} -.->|"{_mermaid_text(str(data.get("dataset")))}"| {ids[v]}')
        else:
            lines.append(f"  {ids[u]} --> {ids[v]}")
    return "\n".join(lines) + "\n"


def to_json(g: nx.DiGraph, waves: tuple[tuple[str, ...], ...]) -> str:
    """Intents (with wave and duration), edges (with the clause's position), waves,
    and the critical path with the makespan."""
    wave_of = {n: i for i, wave in enumerate(waves) for n in wave}
    durations = durations_of(g)
    intents = []
    for n in sorted(g.nodes):
        intent = g.nodes[n].get("intent")
        intents.append({
            "name": n,
            "wave": wave_of.get(n),
            "kind": intent.action.kind if isinstance(intent, ir.Intent) else None,
            "tenant": intent.tenant if isinstance(intent, ir.Intent) else None,
            "duration_s": durations[n],
        })
    edges = []
    for u, v, data in _sorted_edges(g):
        span = data.get("span")
        edges.append({
            "from": u, "to": v, "reason": data.get("reason"), "dataset": data.get("dataset"),
            "file": span.file if isinstance(span, Span) else None,
            "line": span.line if isinstance(span, Span) else None,
            "column": span.column if isinstance(span, Span) else None,
        })
    path, makespan = critical_path(g, durations)
    doc: dict[str, object] = {
        "intents": intents,
        "edges": edges,
        "waves": [list(w) for w in waves],
        "critical_path": {"intents": list(path), "makespan_s": makespan},
    }
    return _json_one_record_per_line(doc)


def _json_one_record_per_line(doc: Mapping[str, object]) -> str:
    """Top-level keys sorted, each list item on its own line.

    As readable in a diff as an indented dump, and written by the C encoder
    (``indent=`` switches json to its pure-Python path, several times slower
    on a large graph).
    """
    def dump(value: object) -> str:
        return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)

    parts = []
    for key in sorted(doc):
        value = doc[key]
        if isinstance(value, list) and value:
            body = ",\n".join("    " + dump(item) for item in value)
            parts.append(f"  {dump(key)}: [\n{body}\n  ]")
        else:
            parts.append(f"  {dump(key)}: {dump(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
