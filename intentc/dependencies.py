"""Which intent waits for which, and what `intentc check` reports about it,
without building a graph.

`intentc.graph` turns these edges into a networkx `DiGraph` for everything
that walks the graph (waves, the critical path, the plan, the renderings).
`check` needs only the two findings: a dataset produced twice (E0503) and
dependency cycles (E0501).  Importing networkx is a large part of what
`intentc check` spends before it reads a file, so a repository
without cycles is told so by a plain topological count (`has_cycle`) and
networkx is imported only to describe the cycles of one that has some.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from intentc import ir
from intentc.diagnostics import Diagnostic, Related, Span, error, excerpt


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
    """(u, v) → why v waits for u, in the order `graph.build` adds them (so that cycles
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
    """What `graph.build` reports (E0503, then E0501 per cycle), the graph built only
    when there is a cycle to describe."""
    intents = unique_intents(program)
    produced, diags = producers(intents)
    if has_cycle(links(intents, produced)):
        from intentc import graph

        return graph.build(program)[1]
    return diags
