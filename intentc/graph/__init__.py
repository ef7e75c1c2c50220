"""The dependency graph between intents: which waits for which, and what follows from it.

`dependencies` reads the edges off the IR (`after`, and data a producer
makes for a consumer) and reports a dataset produced twice (E0503) and
dependency cycles (E0501) without building a graph, which is all `intentc
check` needs.  `digraph` turns the edges into a networkx `DiGraph` for
everything that walks it: waves, the critical path, the planner's shape,
the DOT / Mermaid / JSON renderings.

The package itself imports nothing, so that `check` never loads networkx
through it.
"""
