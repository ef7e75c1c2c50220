"""The dependency graph: edges, diagnostics, waves, critical path, renderings."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from intentc import ir
from intentc.cli import app
from intentc.diagnostics import Span
from intentc.graph import dependencies
from intentc.graph import digraph
from tests.golden_support import assert_golden

GOLDEN = Path(__file__).parent / "golden" / "graph"


def span(line: int, col: int = 3, width: int = 5, file: str = "intents/a.intent") -> Span:
    return Span(file, line, col, line, col + width)


def ref(name: str, line: int = 0, col: int = 3) -> ir.Ref:
    return ir.Ref(name, **ir.placed(span(line, col, len(name)))) if line else ir.Ref(name)


def intent(name: str, after: tuple[ir.Ref, ...] = (), consumes: tuple[ir.Ref, ...] = (),
           produces: tuple[ir.Ref, ...] = (), kind: str = "batch", duration: str | None = None,
           line: int = 1) -> ir.Intent:
    trigger = ir.Trigger("after", after) if after else ir.Trigger("push")
    return ir.Intent(name, trigger, ir.Action(kind, "img:1"), ir.Context(ir.Ref("team-a")),
                     ir.Constraints(duration=duration), consumes, produces, spans=ir.FieldSpans.at(span(line, 1, 6)))


def program(*intents: ir.Intent, datasets: tuple[str, ...] = ()) -> ir.Program:
    return ir.Program(datasets=tuple(ir.Dataset(d) for d in datasets), intents=intents)


def codes(diags: list) -> list[str]:
    return [d.code for d in diags]


# --------------------------------------------------------------------------
# Edges
# --------------------------------------------------------------------------

def test_after_edges_point_from_prerequisite_and_keep_the_clause_span() -> None:
    g, diags = digraph.build(program(intent("a"), intent("b", after=(ref("a", 7, 18),))))
    assert diags == []
    assert list(g.edges) == [("a", "b")]
    data = g.edges["a", "b"]
    assert data["reason"] == "after" and data["dataset"] is None
    assert data["span"] == span(7, 18, 1)
    assert g.nodes["b"]["intent"].name == "b"


def test_unknown_after_names_are_left_to_the_name_pass() -> None:
    g, diags = digraph.build(program(intent("b", after=(ref("ghost", 2),))))
    assert diags == [] and list(g.edges) == []


def test_data_edges_from_every_producer_and_declared_inputs_need_no_producer() -> None:
    p = program(
        intent("tok", consumes=(ref("raw", 3),), produces=(ref("tokens", 4),)),
        intent("embed", consumes=(ref("tokens", 9, 12),), produces=(ref("vectors"),)),
        intent("index", consumes=(ref("vectors", 14), ref("tokens", 15))),
        datasets=("raw",))
    g, diags = digraph.build(p)
    assert diags == []
    assert sorted(g.edges) == [("embed", "index"), ("tok", "embed"), ("tok", "index")]
    e = g.edges["tok", "embed"]
    assert (e["reason"], e["dataset"], e["span"]) == ("data", "tokens", span(9, 12, 6))


def test_after_wins_over_data_for_the_same_pair() -> None:
    g, _ = digraph.build(program(intent("a", produces=(ref("d"),)),
                               intent("b", after=(ref("a", 2),), consumes=(ref("d", 3),))))
    assert g.edges["a", "b"]["reason"] == "after"


def test_unknown_consumed_dataset_is_left_to_the_names_pass() -> None:
    """One error per problem: `resolve_names` reports E0302; the graph adds no edge and no error."""
    p = program(intent("a", produces=(ref("corpus-tokens"),)),
                intent("b", consumes=(ref("corpus-tokenz", 5, 13),)))
    g, diags = digraph.build(p)
    assert diags == [] and list(g.edges) == []


def test_dataset_produced_twice_errs_at_the_second_producer() -> None:
    p = program(intent("writer-b", produces=(ref("out", 9),)), intent("writer-a", produces=(ref("out", 3),)),
                intent("reader", consumes=(ref("out", 12),)))
    g, diags = digraph.build(p)
    assert codes(diags) == ["E0503"]
    d = diags[0]
    # Producers are ordered by name, so "writer-a" is the first one whatever the file order.
    assert d.span == span(9, 3, 3)
    assert d.related[0].span == span(3, 3, 3) and '"writer-a"' in d.related[0].message
    assert sorted(g.predecessors("reader")) == ["writer-a", "writer-b"]


def test_listing_a_dataset_twice_in_one_intent_is_not_two_producers() -> None:
    _, diags = digraph.build(program(intent("a", produces=(ref("d"), ref("d")))))
    assert diags == []


# --------------------------------------------------------------------------
# Cycles
# --------------------------------------------------------------------------

def test_cycle_lists_every_intent_and_points_at_every_clause() -> None:
    p = program(intent("c", after=(ref("b", 30),)),
                intent("a", after=(ref("c", 10),)),
                intent("b", consumes=(ref("ds", 20),)),
                intent("x", produces=(ref("ds"),), after=(ref("a", 40),)))
    _g, diags = digraph.build(p)
    assert codes(diags) == ["E0501"]
    d = diags[0]
    assert d.message == "dependency cycle: a → x → b → c → a"
    assert d.span == span(10, 3, 1)          # the clause in "a" that closes the cycle
    assert [r.span.line for r in d.related] == [40, 20, 30, 10]
    assert d.related[1].message == '"b" consumes "ds", which "x" produces'
    assert d.related[0].message == '"x" runs after "a"'


def test_self_dependency_is_a_cycle() -> None:
    _, diags = digraph.build(program(intent("a", after=(ref("a", 4),))))
    assert codes(diags) == ["E0501"]
    assert diags[0].message == "dependency cycle: a → a"
    assert diags[0].span == span(4, 3, 1)


def test_consuming_what_you_produce_is_a_cycle() -> None:
    _, diags = digraph.build(program(intent("a", consumes=(ref("d", 2),), produces=(ref("d", 3),))))
    assert codes(diags) == ["E0501"]


def test_a_long_cycle_names_its_ends_and_counts_the_middle() -> None:
    n = 45
    names = [f"i{k:02d}" for k in range(n)]
    p = program(*(intent(names[k], after=(ref(names[k - 1], k + 1),)) for k in range(n)))
    _g, diags = digraph.build(p)
    assert codes(diags) == ["E0501"]
    d = diags[0]
    half = dependencies.MAX_CYCLE_SHOWN // 2
    assert d.message == ("dependency cycle: " + " → ".join(names[:half]) + f" → … ({n - 2 * half} more) → "
                         + " → ".join(names[-half:]) + " → i00")
    assert d.span == span(1, 3, 3)          # still the clause that closes the cycle (in i00)
    assert len(d.related) == 2 * half       # the edges of the named ends only
    assert d.related[0].message == '"i01" runs after "i00"'
    assert d.related[-1].message == '"i00" runs after "i44"'
    m = dependencies.MAX_CYCLE_SHOWN
    exact = program(*(intent(names[k], after=(ref(names[(k - 1) % m], k + 1),)) for k in range(m)))
    shown = digraph.build(exact)[1][0]
    assert "…" not in shown.message and len(shown.related) == m


def test_each_elementary_cycle_is_reported_once_in_a_fixed_order() -> None:
    # two cycles sharing b: a ⇄ b and b ⇄ c, plus the big one is not elementary
    p = program(intent("a", after=(ref("b", 1),)), intent("b", after=(ref("a", 2), ref("c", 3))),
                intent("c", after=(ref("b", 4),)))
    _g, diags = digraph.build(p)
    assert [d.message for d in diags] == ["dependency cycle: a → b → a", "dependency cycle: b → c → b"]
    shuffled = program(*reversed(p.intents))
    assert [d.message for d in digraph.build(shuffled)[1]] == [d.message for d in diags]


def test_cycle_members_are_left_out_of_waves_but_their_dependents_are_not() -> None:
    p = program(intent("a", after=(ref("b", 1),)), intent("b", after=(ref("a", 2),)),
                intent("after-cycle", after=(ref("a", 3),)), intent("free"))
    g, _ = digraph.build(p)
    assert digraph.nodes_in_cycles(g) == {"a", "b"}
    assert digraph.waves(g) == (("after-cycle", "free"),)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))))
def test_cycles_are_every_elementary_cycle_when_under_the_cap(graph_spec: tuple[int, list[tuple[int, int]]]) -> None:
    """The single-loop components read off directly and the rest enumerated by
    networkx give exactly networkx's elementary cycles of the whole graph."""
    n, edge_list = graph_spec
    g = nx.DiGraph()
    g.add_nodes_from(f"n{k}" for k in range(n))
    g.add_edges_from(sorted({(f"n{u}", f"n{v}") for u, v in edge_list}))
    everything = sorted({dependencies._canonical_cycle(c) for c in nx.simple_cycles(g)}, key=lambda c: (len(c), c))
    assert dependencies.cycles(g, limit=10**6) == everything
    assert digraph.nodes_in_cycles(g) == frozenset(x for c in everything for x in c)


def test_a_loop_through_thousands_of_intents_is_read_off_whole() -> None:
    n = 5000
    g = nx.DiGraph()
    g.add_edges_from((f"j{k:04d}", f"j{(k + 1) % n:04d}") for k in range(n))
    g.add_edges_from([("a", "b"), ("b", "a"), ("b", "c"), ("c", "b"), ("j0000", "a")])   # and a second component
    found = dependencies.cycles(g)
    assert found[:2] == [("a", "b"), ("b", "c")]
    assert found[2] == tuple(f"j{k:04d}" for k in range(n))


def test_cycle_enumeration_is_capped() -> None:
    # a complete digraph on 7 nodes has thousands of elementary cycles
    names = [f"n{i}" for i in range(7)]
    p = program(*(intent(n, after=tuple(ref(m, 1) for m in names if m != n)) for n in names))
    _, diags = digraph.build(p)
    assert len(diags) == dependencies.MAX_CYCLES_REPORTED
    assert "only the first" in (diags[-1].hint or "")


@st.composite
def any_program(draw: st.DrawFn) -> ir.Program:
    """Intents with any `after` (unknown names and self-loops too) and datasets
    produced and consumed from a small pool, so cycles and double producers occur."""
    names = [f"i{k}" for k in range(draw(st.integers(1, 7)))]
    known = names + ["ghost"]
    pool = ["d0", "d1", "d2"]
    refs = lambda choices: st.lists(st.sampled_from(choices), max_size=3)  # noqa: E731
    return program(*(intent(n, after=tuple(ref(a, i + 1) for a in draw(refs(known))),
                            consumes=tuple(ref(c, i + 1) for c in draw(refs(pool))),
                            produces=tuple(ref(c, i + 1) for c in draw(refs(pool))), line=i + 1)
                     for i, n in enumerate(names)))


@settings(max_examples=200, deadline=None)
@given(any_program())
def test_check_reports_what_the_graph_does_without_building_it(p: ir.Program) -> None:
    """`pipeline.check` takes E0501/E0503 from `dependencies.diagnostics`, which builds
    the networkx graph only when its own count finds a cycle: the same diagnostics, in order."""
    g, diags = digraph.build(p)
    assert dependencies.diagnostics(p) == diags
    intents = dependencies.unique_intents(p)
    produced = dependencies.producers(intents)[0]
    links = dependencies.edges(intents, produced)
    assert dependencies.has_cycle(dependencies.links(intents, produced)) == bool(digraph.nodes_in_cycles(g))
    assert set(dependencies.links(intents, produced)) == set(links)
    assert links == {(u, v): dependencies.Edge(d["reason"], d["dataset"], d["span"]) for u, v, d in g.edges(data=True)}


# --------------------------------------------------------------------------
# Waves and the critical path
# --------------------------------------------------------------------------

def test_waves_are_generations_sorted_by_name() -> None:
    p = program(intent("z-prep"), intent("a-prep"), intent("train", after=(ref("z-prep", 1), ref("a-prep", 1))),
                intent("eval", after=(ref("train", 2),)), intent("serve", after=(ref("train", 3),)))
    g, _ = digraph.build(p)
    assert digraph.waves(g) == (("a-prep", "z-prep"), ("train",), ("eval", "serve"))


@st.composite
def dags(draw: st.DrawFn) -> tuple[list[str], set[tuple[str, str]]]:
    n = draw(st.integers(1, 9))
    names = [f"i{k}" for k in draw(st.permutations(range(n)))]
    # edges only go forward in this hidden order, so the graph is acyclic
    edges = {(names[a], names[b]) for a in range(n) for b in range(a + 1, n) if draw(st.booleans())}
    return names, edges


def _dag_program(names: list[str], edges: set[tuple[str, str]], seed: int) -> ir.Program:
    rng = random.Random(seed)
    durations = {n: ["10m", "1h", "90s", None][int(n[1:]) % 4] for n in names}
    intents = [intent(n, after=tuple(ref(u, 1) for u, v in sorted(edges) if v == n), duration=durations[n])
               for n in names]
    rng.shuffle(intents)
    return program(*intents)


@settings(max_examples=60, deadline=None)
@given(dags(), st.integers(0, 2**16))
def test_waves_and_critical_path_are_independent_of_program_order(
        dag: tuple[list[str], set[tuple[str, str]]], seed: int) -> None:
    names, edges = dag
    g1, d1 = digraph.build(_dag_program(names, edges, seed))
    g2, _ = digraph.build(_dag_program(names, edges, seed + 1))
    assert d1 == []
    w = digraph.waves(g1)
    assert w == digraph.waves(g2)
    wave_of = {n: i for i, wave in enumerate(w) for n in wave}
    assert sorted(wave_of) == sorted(names)
    assert all(wave_of[u] < wave_of[v] for u, v in edges)
    assert all(list(wave) == sorted(wave) for wave in w)

    durations = digraph.durations_of(g1)
    path, makespan = digraph.critical_path(g1, durations)
    assert (path, makespan) == digraph.critical_path(g2, digraph.durations_of(g2))
    assert all(g1.has_edge(u, v) for u, v in itertools.pairwise(path))
    assert sum(durations[n] for n in path) == makespan
    # brute force: no path is longer
    best = max(sum(durations[n] for n in p)
               for s in names for t in names
               for p in (nx.all_simple_paths(g1, s, t) if s != t else [[s]]))
    assert makespan == best


def test_critical_path_ties_go_to_the_smallest_name() -> None:
    p = program(intent("b"), intent("a"), intent("end", after=(ref("a", 1), ref("b", 1))))
    g, _ = digraph.build(p)
    assert digraph.critical_path(g, digraph.durations_of(g)) == (("a", "end"), 3600)
    assert digraph.critical_path(nx.DiGraph(), {}) == ((), 0)


def test_duration_defaults_per_action_kind() -> None:
    assert digraph.duration_seconds(intent("a", kind="batch")) == 1800
    assert digraph.duration_seconds(intent("a", kind="training")) == 14400
    assert digraph.duration_seconds(intent("a", kind="inference")) == 3600
    assert digraph.duration_seconds(intent("a", kind="serve")) == 0
    assert digraph.duration_seconds(intent("a", kind="training", duration="45m")) == 2700
    # an invalid duration is the domain pass's E0415; the estimate falls back to the default
    assert digraph.duration_seconds(intent("a", kind="training", duration="soon")) == 14400


# --------------------------------------------------------------------------
# Renderings
# --------------------------------------------------------------------------

def _pipeline_program() -> ir.Program:
    return program(
        intent("tokenize-corpus", consumes=(ref("corpus-raw", 2),), produces=(ref("corpus-tokens", 3),),
               duration="45m"),
        intent("embed-corpus", after=(ref("tokenize-corpus", 8),), consumes=(ref("corpus-tokens", 9),),
               produces=(ref("vectors", 10),), kind="inference"),
        intent("train-ranker", consumes=(ref("vectors", 14), ref("labels", 15)), kind="training",
               duration="6h"),
        intent("serve-ranker", after=(ref("train-ranker", 20),), kind="serve"),
        intent('odd"name'),
        datasets=("corpus-raw", "labels"))


def test_renderings_are_golden_and_order_independent() -> None:
    p = _pipeline_program()
    g, diags = digraph.build(p)
    assert diags == []
    w = digraph.waves(g)
    assert_golden(GOLDEN / "pipeline.dot", digraph.to_dot(g))
    assert_golden(GOLDEN / "pipeline.mmd", digraph.to_mermaid(g))
    assert_golden(GOLDEN / "pipeline.json", digraph.to_json(g, w))
    g2, _ = digraph.build(program(*reversed(p.intents), datasets=("labels", "corpus-raw")))
    assert digraph.to_dot(g2) == digraph.to_dot(g)
    assert digraph.to_mermaid(g2) == digraph.to_mermaid(g)
    assert digraph.to_json(g2, digraph.waves(g2)) == digraph.to_json(g, w)
    doc = json.loads(digraph.to_json(g, w))
    assert doc["critical_path"] == {"intents": ["tokenize-corpus", "embed-corpus", "train-ranker",
                                                "serve-ranker"], "makespan_s": 2700 + 3600 + 6 * 3600}


def test_renderings_quote_names() -> None:
    g, _ = digraph.build(program(intent('odd"name')))
    assert '"odd\\"name"' in digraph.to_dot(g)
    assert '["odd#quot;name"]' in digraph.to_mermaid(g)


# --------------------------------------------------------------------------
# Command line, through files
# --------------------------------------------------------------------------

def _frontend_ready() -> bool:
    try:
        import intentc.frontend.dsl
        import intentc.frontend.yaml  # noqa: F401
    except ImportError:
        return False
    return True


needs_frontend = pytest.mark.skipif(not _frontend_ready(), reason="front end not built yet")

TENANT = """apiVersion: intentc.dev/v1alpha1
kind: Tenant
metadata: {name: team-a}
spec: {tier: gold}
"""


def _yaml_intent(name: str, after: list[str] = (), consumes: list[str] = (), produces: list[str] = ()) -> str:
    lines = ["apiVersion: intentc.dev/v1alpha1", "kind: Intent", f"metadata: {{name: {name}}}", "spec:"]
    lines.append("  trigger: " + ("{after: [" + ", ".join(after) + "]}" if after else "push"))
    lines.append('  action: {kind: batch, image: "img:1"}')
    lines.append("  context: {tenant: team-a}")
    if consumes:
        lines.append(f"  consumes: [{', '.join(consumes)}]")
    if produces:
        lines.append(f"  produces: [{', '.join(produces)}]")
    return "\n".join(lines) + "\n"


@needs_frontend
def test_graph_command_prints_json_and_reports_cycles(tmp_path: Path) -> None:
    (tmp_path / "tenant.yaml").write_text(TENANT)
    (tmp_path / "a.yaml").write_text(_yaml_intent("prep", produces=["ds"]))
    (tmp_path / "b.yaml").write_text(_yaml_intent("train", consumes=["ds"]))
    runner = CliRunner()
    ok = runner.invoke(app, ["graph", str(tmp_path), "-o", "json"])
    assert ok.exit_code == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["waves"] == [["prep"], ["train"]]
    assert doc["edges"][0]["file"].endswith("b.yaml")

    (tmp_path / "c.yaml").write_text(_yaml_intent("loop-a", after=["loop-b"]))
    (tmp_path / "d.yaml").write_text(_yaml_intent("loop-b", after=["loop-a"]))
    bad = runner.invoke(app, ["graph", str(tmp_path), "-o", "dot"])
    assert bad.exit_code == 1
    assert "error[E0501]: dependency cycle: loop-a → loop-b → loop-a" in bad.stderr
    assert bad.stdout.startswith("digraph intents {")


DSL = """tenant team-a {
  tier: gold
}

intent prep {
  trigger: after train
  action: batch image "img:1"
  context: tenant team-a
  consumes: raw-data
  produces: features
}

intent train {
  trigger: on push
  action: training image "img:1"
  context: tenant team-a
  consumes: features
}
"""


@needs_frontend
def test_dsl_cycle_and_missing_dataset_point_at_their_clauses(tmp_path: Path) -> None:
    (tmp_path / "a.intent").write_text(DSL)
    result = CliRunner().invoke(app, ["graph", str(tmp_path), "-o", "json", "--diagnostics-format", "json"])
    assert result.exit_code == 1
    diags = {d["code"]: d for d in json.loads(result.stderr)}
    cycle = diags["E0501"]
    assert cycle["message"] == "dependency cycle: prep → train → prep"
    assert (cycle["line"], cycle["column"]) == (6, 18)                    # `after train` in prep
    assert [(r["line"], r["column"]) for r in cycle["related"]] == [(17, 13), (6, 18)]
    # `consumes: raw-data`: reported once, by the names pass
    assert (diags["E0302"]["line"], diags["E0302"]["column"]) == (9, 13)
    assert json.loads(result.stdout)["waves"] == []
