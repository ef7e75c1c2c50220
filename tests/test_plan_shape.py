"""`plan.shape`: the planner's view of the dependency graph, without networkx where the
graph is acyclic, is what the networkx graph (`digraph.checked`) gives: each intent's
dependencies, the waves, the critical path, the intents on cycles and the findings."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from intentc import ir
from intentc.graph import digraph
from intentc.plan.shape import shape
from tests.test_plan import job, program


def _random_program(seed: int, cycles: bool) -> ir.Program:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    names = [f"i{k:02d}" for k in range(n)]
    intents = []
    for k, name in enumerate(names):
        # acyclic: only earlier intents (in a shuffled order); with cycles: any, itself included
        pool = names if cycles else names[:k]
        after = tuple(ir.Ref(rng.choice(pool)) for _ in range(rng.randint(0, 3))) if pool else ()
        consumes = tuple(ir.Ref(f"d{rng.randrange(8)}") for _ in range(rng.randint(0, 2)))
        produces = (ir.Ref(f"d{rng.randrange(8)}"),) if rng.random() < 0.4 else ()
        base = job(name, gpus=rng.randint(0, 2), duration=rng.choice([None, "30m", "2h", "1d"]),
                   kind=rng.choice(["batch", "training", "serve"]))
        intents.append(replace(base, trigger=ir.Trigger("after" if after else "push", after=after),
                               consumes=consumes, produces=produces))
    rng.shuffle(intents)
    return program(*intents)


def _by_networkx(p: ir.Program, durations: dict[str, int]) -> tuple[object, ...]:
    g, diags = digraph.checked(p)
    cyclic = digraph.nodes_in_cycles(g)
    waves = digraph.waves(g, cyclic)
    after = {n: () if n in cyclic else tuple(sorted(u for u in g.predecessors(n) if u not in cyclic))
             for n in sorted(g)}
    return after, waves, cyclic, digraph.critical_path(g, durations, cyclic), diags


@pytest.mark.parametrize("cycles", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_the_shape_is_the_networkx_graphs(seed: int, cycles: bool) -> None:
    p = _random_program(seed, cycles)
    durations = {i.name: digraph.duration_seconds(i) for i in p.intents}
    got, diags = shape(p, durations)
    after, waves, cyclic, (path, path_s), want_diags = _by_networkx(p, durations)
    assert got.after == after
    assert got.waves == waves
    assert got.wave_of == {n: k for k, wave in enumerate(waves) for n in wave}
    assert got.cyclic == cyclic
    assert (got.path, got.path_s) == (path, path_s)
    assert diags == want_diags


def test_random_programs_have_chains_and_cycles() -> None:
    """The cases above are not trivial: deep waves without cycles, cycles with them."""
    deepest = max(len(shape(_random_program(s, False), {})[0].waves) for s in range(60))
    with_cycles = sum(1 for s in range(60) if shape(_random_program(s, True), {})[0].cyclic)
    assert deepest >= 4 and with_cycles >= 30
