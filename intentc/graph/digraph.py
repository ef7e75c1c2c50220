"""The dependency graph between intents: edges, waves, critical path.

An edge ``u → v`` means *v depends on u* (u runs first).  Edges come from
two places, and each remembers the clause that created it so a cycle can
point at every link of the chain:

* ``trigger: after u`` in v (``reason="after"``);
* data: v ``consumes`` a dataset that u ``produces`` (``reason="data"``).

The graph is built in name order, not file order, so everything derived
from it (cycle reports, waves, the critical path, the text renderings) is
identical however the input files are ordered or named.  The edges and
the cycle findings (E0501, E0503) are `dependencies`', which `check` uses
without a graph.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping

import networkx as nx

from intentc import ir
from intentc.diagnostics import Diagnostic, Span
from intentc.graph.dependencies import cycle_diagnostics, cyclic_components, edges, producers, unique_intents
from intentc.ir.duration import parse_duration

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
    diags.extend(cycle_diagnostics(g, found))
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
    diags.extend(cycle_diagnostics(g, found))
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
