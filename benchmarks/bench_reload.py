"""Hot reload with 10,000 (or --intents 100000) intents loaded: one file edited, against a full compile.

    python benchmarks/bench_reload.py [--intents 10000] [--edits 7] [--replan-edits 3] [--repeat 2]

The repository is benchmarks/bench_frontend.py's (its `generate`: one
intent per file, half DSL, half YAML, four tenants, fifty datasets,
`after` chains), with the GPU request kept on every 20th intent only and a
topology of 3 x 100 eight-GPU nodes (one per product) big enough to place
them all: 10,000 intents, ~10,000 objects, 500 GPU placements.

A `Reloader` (intentc.daemon.reload, what `intentc watch` and the daemon
keep) loads the tree once; then, for --edits different files (seeded, DSL
and YAML), the image of the file's intent is changed on disk and
`Reloader.update([file])` is timed: re-parse one file, re-run the
cross-file passes, IR diff, re-render one intent, swap the snapshot.

Baseline, same run, same tree: `compile_paths` from scratch in this
process (parse every file, passes, graph, plan, render) with the parse
cache disabled (INTENTC_CACHE_DIR set empty before intentc is imported),
best of --repeat.  It also checks the reloaded snapshot's files equal the
full compile's byte for byte.  Targets: reload >= 50x faster than the
full compile, and under 50 ms (best of the edits; the median is reported
beside it).

Planner-affecting edits (--replan-edits): the GPU count of a GPU intent
is changed.  The reload plans incrementally (plan/incremental.py: the
edited intent and those waiting for it are placed again around the kept
ones) and swaps at once; its time is the swap latency (target < 50 ms,
median).  After each swap the plan in force is checked with
tests/plan_verify.py (no GPU twice at overlapping times, none beyond a
node's GPUs, dependencies), and the full re-plan the Reloader then runs
in the background is timed until it is swapped in (or found equal).  One
more edit is timed while such a background re-plan runs (both share the
interpreter lock), reported apart.  The baseline for these is the full
re-plan itself, measured in the same run.

Writes benchmarks/results/bench_reload.json (--out to name it).  Seeded: the same files and edits every run.
"""

from __future__ import annotations

import argparse
from functools import partial
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["INTENTC_CACHE_DIR"] = ""      # before intentc is imported: no parse cache anywhere
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_frontend import PRODUCTS, generate
from benchmarks.results import write_results
from intentc.daemon.reload import Reloader
from intentc.pipeline import compile_paths
from intentc.policy import BUILTIN as BUILTIN_POLICIES

SHA = "d" * 40
GPU_EVERY = 20
NODES_PER_PRODUCT = 100
DSL_GPUS = re.compile(r'gpus \d+ x "[^"]+" within node, ')
YAML_GPUS = re.compile(r"    gpus:\n      count: \d+\n      product: \S+\n")
IMAGE = re.compile(r"vllm:\d+\.\d+")
DSL_COUNT = re.compile(r'(gpus )(\d+)( x ")')
YAML_COUNT = re.compile(r"(    gpus:\n      count: )(\d+)(\n)")


def topology_text() -> str:
    nodes = "".join(f"""    - name: {p.lower()}-{i}
      gpu: {{product: {p}, count: 8, memory: 80Gi}}
      cpu: "192"
      memory: 2Ti
      domains: {{zone: z1, rack: r{i % 4}}}
""" for p in PRODUCTS for i in range(NODES_PER_PRODUCT))
    return ("apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {name: bench}\n"
            "spec:\n  levels: [zone, rack, node]\n  nodes:\n" + nodes)


def make_repo(root: Path, n: int) -> tuple[Path, Path, list[Path]]:
    """bench_frontend's files, GPU requests dropped except on every GPU_EVERY-th intent."""
    dsl_dir, yaml_dir = generate(root / "repo", n)
    jobs = sorted(p for d in (dsl_dir, yaml_dir) for p in d.iterdir() if p.name.startswith("job-"))
    for path in jobs:
        if int(path.stem.removeprefix("job-")) % GPU_EVERY:
            pattern = DSL_GPUS if path.suffix == ".intent" else YAML_GPUS
            text, hits = pattern.subn("", path.read_text())
            assert hits == 1, path
            path.write_text(text)
    topology = root / "topology.yaml"
    topology.write_text(topology_text())
    return root / "repo", topology, jobs


def _rss_mb() -> float | None:
    """This process's resident memory now (the Reloader holds the loaded tree)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def rewrite(path: Path, pattern: re.Pattern[str], new: str) -> None:
    text, hits = pattern.subn(new, path.read_text(), count=1)
    assert hits == 1, path
    path.write_text(text)


def time_edits(reloader: Reloader, files: list[Path], edit: Callable[[Path, int], None]) -> list[float]:
    times = []
    for k, path in enumerate(files):
        edit(path, k)
        t0 = time.perf_counter()
        result = reloader.update([path])
        times.append(time.perf_counter() - t0)
        if not result.ok:
            raise SystemExit(f"the edit of {path} did not compile: {[str(d) for d in result.diagnostics[:3]]}")
        if len(result.reparsed) != 1 or result.replanned or result.rerendered != (path.stem,):
            raise SystemExit(f"unexpected reload work for {path.name}: reparsed {result.reparsed}, "
                             f"replanned {result.replanned}, rerendered {result.rerendered[:5]}")
    return times


def gpu_edit(path: Path, k: int) -> None:
    """A different GPU count for the file's intent (1, 2, 4 or 8, never the one it has)."""
    pattern = DSL_COUNT if path.suffix == ".intent" else YAML_COUNT
    old = int(pattern.search(path.read_text()).group(2))          # type: ignore[union-attr]
    new = [c for c in (1, 2, 4, 8) if c != old][k % 3]
    rewrite(path, pattern, rf"\g<1>{new}\g<3>")


def verify(reloader: Reloader) -> list[str]:
    """tests/plan_verify.py's independent checks on the plan in force."""
    from intentc.plan.jsonio import plan_to_obj
    from tests.plan_verify import order_violations, over_capacity, overlaps
    snap = reloader.current
    assert snap is not None
    doc = plan_to_obj(snap.plan)
    after = {i.name: [r.name for r in i.trigger.after] for i in snap.program.intents}
    gpus = {n.name: n.gpu_count for n in snap.topology.nodes} if snap.topology is not None else {}
    return overlaps(doc)[:3] + over_capacity(doc, gpus)[:3] + order_violations(doc, after)[:3]


def time_replans(reloader: Reloader, files: list[Path], contended: Path | None) -> dict[str, Any]:
    """GPU-count edits: swap latency of the incremental plan, then the background full re-plan."""
    swaps, fulls, notes, replaced = [], [], [], []
    swapped_in = 0
    for k, path in enumerate(files):
        gpu_edit(path, k)
        t0 = time.perf_counter()
        result = reloader.update([path])
        swaps.append(time.perf_counter() - t0)
        if not result.ok or not result.replanned:
            raise SystemExit(f"the GPU edit of {path} did not re-plan: {[str(d) for d in result.diagnostics[:3]]}")
        notes.append(result.plan_note)
        replaced.append(len(result.rerendered))
        print(f"GPU edit of {path.name}: swapped in {swaps[-1] * 1000:.2f} ms ({result.plan_note}, "
              f"{len(result.rerendered)} intents rendered)", flush=True)
        broken = verify(reloader)
        if broken:
            raise SystemExit(f"the incremental plan breaks an invariant: {broken}")
        before = reloader.current
        t1 = time.perf_counter()
        reloader.settle()
        fulls.append(time.perf_counter() - t1)
        swapped_in += reloader.current is not before
        print(f"  background full re-plan: {fulls[-1]:.1f} s, "
              f"{'swapped in (it differs)' if reloader.current is not before else 'equal, kept'}", flush=True)
        broken = verify(reloader)
        if broken:
            raise SystemExit(f"the full plan swapped in breaks an invariant: {broken}")
    out: dict[str, Any] = {
        "replan_edit": "GPU count of one GPU intent (the planner reads it: incremental plan, then a full "
                       "re-plan in the background)",
        "replan_notes": notes, "rerendered_each": replaced,
        "replan_swap_ms_each": [round(t * 1000, 2) for t in swaps],
        "replan_swap_ms_median": round(statistics.median(swaps) * 1000, 2),
        "background_full_replan_s_each": [round(t, 2) for t in fulls],
        "background_full_replan_s_median": round(statistics.median(fulls), 2),
        "full_plans_swapped_in": swapped_in,
        "rss_after_replans_mb": _rss_mb(),
        "target_replan_under_50ms_met": statistics.median(swaps) < 0.050,
    }
    if contended is not None:
        # one edit lands while the background full re-plan of the one before runs
        gpu_edit(files[0], len(files))
        reloader.update([files[0]])
        time.sleep(1.0)
        gpu_edit(contended, 1)
        t0 = time.perf_counter()
        result = reloader.update([contended])
        out["replan_swap_ms_during_background_replan"] = round((time.perf_counter() - t0) * 1000, 2)
        print(f"GPU edit while a full re-plan runs: {out['replan_swap_ms_during_background_replan']} ms", flush=True)
        assert result.ok and result.replanned
        reloader.settle()
    return out


def bench(n: int, edits: int, replan_edits: int, repeat: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-reload-") as tmp:
        repo, topology, jobs = make_repo(Path(tmp), n)
        reloader = Reloader([str(repo)], str(topology), SHA)
        t0 = time.perf_counter()
        loaded = reloader.load()
        load_s = time.perf_counter() - t0
        if not loaded.ok or loaded.snapshot is None:
            raise SystemExit(f"the generated tree does not compile: {[str(d) for d in loaded.diagnostics[:3]]}")
        rss_loaded = _rss_mb()
        objects = len(loaded.snapshot.rendered.manifests)
        gpu_placements = sum(1 for p in loaded.snapshot.plan.placements if p.gpu_count)
        print(f"{n} intents in {len(jobs) + 1} files, {objects} objects, "
              f"{gpu_placements} GPU placements; initial load {load_s:.2f}s, RSS then {rss_loaded} MB; "
              f"{os.cpu_count()} CPUs", flush=True)

        rng = random.Random(seed)
        picked = rng.sample(jobs, edits)
        image_s = time_edits(reloader, picked, lambda p, k: rewrite(p, IMAGE, f"vllm:9.{k}"))
        with_gpus = [p for p in jobs if not int(p.stem.removeprefix("job-")) % GPU_EVERY and p not in picked]
        chosen = rng.sample(with_gpus, replan_edits + 1)
        replans = time_replans(reloader, chosen[:-1], chosen[-1]) if replan_edits else {}

        full_s = float("inf")
        full = None
        if repeat == 0:                 # --repeat 0: no baseline compile (at 100k it is minutes)
            return _figures(n, objects, gpu_placements, len(jobs), load_s, rss_loaded, edits, image_s, replans,
                            replan_edits, None, 0, None)
        for _ in range(repeat):
            t0 = time.perf_counter()
            full = compile_paths([str(repo)], str(topology), SHA)
            full_s = min(full_s, time.perf_counter() - t0)
        assert full is not None and full.ok, "the edited tree does not compile from scratch"
        snapshot = reloader.current
        assert snapshot is not None
        identical = snapshot.files() == full.files()
        if not identical:
            raise SystemExit("the reloaded snapshot differs from a full compile of the same tree")
    return _figures(n, objects, gpu_placements, len(jobs), load_s, rss_loaded, edits, image_s, replans,
                    replan_edits, full_s, repeat, identical)


def _figures(n: int, objects: int, gpu_placements: int, files: int, load_s: float, rss_loaded: float | None,
             edits: int, image_s: list[float], replans: dict[str, Any], replan_edits: int, full_s: float | None,
             repeat: int, identical: bool | None) -> dict[str, Any]:
    best, median = min(image_s), statistics.median(image_s)
    out: dict[str, Any] = {
        "intents": n, "objects": objects, "gpu_placements": gpu_placements, "files": files + 1, "cpus": os.cpu_count(),
        "initial_load_s": round(load_s, 3), "rss_after_load_mb": rss_loaded,
        "edit": "image of one intent, one file (no re-plan)", "edits": edits,
        "reload_ms_each": [round(t * 1000, 2) for t in image_s],
        "reload_ms_best": round(best * 1000, 2), "reload_ms_median": round(median * 1000, 2),
        "target_under_50ms_met": best < 0.050,
        **replans,
        "rss_end_mb": _rss_mb(),
    }
    if full_s is not None:
        out.update({"baseline": "compile_paths from scratch, in process, parse cache disabled",
                    "full_compile_s": round(full_s, 3), "full_compile_repeat": repeat,
                    "speedup_best": round(full_s / best, 1), "speedup_median": round(full_s / median, 1),
                    "target_50x_met": full_s / best >= 50, "identical_to_full_compile": identical})
    print(f"{'':<52} {'ms':>10} {'vs base':>8}")
    if full_s is not None:
        print(f"{f'full compile (best of {repeat})':<52} {full_s * 1000:>10.1f} {'1x':>8}")
        print(f"{f'reload, image edit (best of {edits})':<52} {best * 1000:>10.2f} {out['speedup_best']:>7}x")
        print(f"{'reload, image edit (median)':<52} {median * 1000:>10.2f} {out['speedup_median']:>7}x")
    else:
        print(f"{f'reload, image edit (best / median of {edits})':<52} {best * 1000:>10.2f} {median * 1000:>8.2f}")
    if replans:
        rm = replans["replan_swap_ms_median"]
        bg = replans["background_full_replan_s_median"]
        out["replan_speedup_vs_full_replan"] = round(bg * 1000 / rm, 1)
        print(f"{'  the full re-plan (background, median): baseline':<52} {bg * 1000:>10.1f} {'1x':>8}")
        print(f"{f'reload, GPU edit: incremental plan (median of {replan_edits})':<52} {rm:>10.2f} "
              f"{out['replan_speedup_vs_full_replan']:>7}x")
        if "replan_swap_ms_during_background_replan" in replans:
            print(f"{'  a GPU edit while a full re-plan runs':<52} "
                  f"{replans['replan_swap_ms_during_background_replan']:>10.2f}")
        print(f"incremental swap < 50 ms (median): {'met' if replans['target_replan_under_50ms_met'] else 'MISSED'}")
    if full_s is not None:
        print(f"targets: >= 50x {'met' if out['target_50x_met'] else 'MISSED'}; "
              f"< 50 ms {'met' if out['target_under_50ms_met'] else 'MISSED'}; "
              f"reloaded files identical to the full compile: {identical}", flush=True)
    return out


def common_text() -> str:
    """bench_frontend's tenants and datasets, as the DSL file `synthetic_program` reads them from."""
    from benchmarks.bench_frontend import TENANTS
    common = "".join(f"tenant {t} {{ tier: {['gold', 'silver', 'bronze', 'silver'][k]} }}\n"
                     for k, t in enumerate(TENANTS))
    return common + "".join(f'dataset ds-{k} {{ uri: "s3://bench/ds-{k}" }}\n' for k in range(50))


def synthetic_program(n: int) -> Any:
    """bench_frontend's repository as IR, built without parsing (at 100k, on a shared
    2-core machine, parsing every file takes most of an hour): the same tenants, datasets,
    chains of `after`, GPU requests on every GPU_EVERY-th intent, SLA classes, one file each."""
    from dataclasses import replace

    from benchmarks.bench_frontend import TENANTS
    from intentc import ir
    from intentc.diagnostics import Span
    from intentc.frontend import parse_source
    from intentc.frontend.sources import SourceFile
    rng = random.Random(n)
    from benchmarks.bench_frontend import dsl_intent
    head = parse_source(SourceFile("common.intent", common_text())).program
    template = parse_source(SourceFile("t.intent", dsl_intent(1, random.Random(0)))).program.intents[0]
    intents = []
    for i in range(n):
        name = f"job-{i:05d}"
        gpus = ir.GpuRequest(rng.choice([1, 2, 4, 8]), product=rng.choice(PRODUCTS), within="node") \
            if i % GPU_EVERY == 0 else None
        after = (ir.Ref(f"job-{i - 1:05d}"),) if i % 5 and i > 0 else ()
        intents.append(replace(
            template, name=name,
            trigger=ir.Trigger("after" if after else "push", after=after),
            context=replace(template.context, tenant=ir.Ref(TENANTS[i % 4])),
            constraints=replace(template.constraints, gpus=gpus, sla=f"P{i % 4}", duration=None),
            consumes=(ir.Ref(f"ds-{i % 50}"),), produces=(ir.Ref(f"out-{i:05d}"),),
            spans=ir.FieldSpans.at(Span(f"{name}.intent", 2, 1, 2, 1))))
    return ir.Program(head.tenants, head.datasets, tuple(intents))


def _one_file(intent: Any, name: str) -> list[Any]:
    """Every intent of file `name` when it holds just `intent` (one intent per file here)."""
    return [intent] if name == intent.span.file else []


def bench_planner(n: int, edits: int, seed: int) -> dict[str, Any]:
    """The planning step alone at n intents: the full planner (the baseline, and what the
    background re-plan costs) against the incremental plan of a GPU-count edit, wall and
    CPU time (this process's thread: the machine is shared), each plan checked with
    tests/plan_verify.py."""
    from dataclasses import replace

    from intentc import ir
    from intentc.graph import digraph
    from intentc.plan.incremental import PlanIndex, Replanned
    from intentc.plan.jsonio import plan_to_obj
    from intentc.plan.planner import make_plan
    from intentc.topology.load import load_topology
    from tests.plan_verify import order_violations, over_capacity, overlaps
    with tempfile.TemporaryDirectory(prefix="bench-replan-") as tmp:
        topo_path = Path(tmp) / "topology.yaml"
        topo_path.write_text(topology_text())
        loaded, _ = load_topology(str(topo_path))
    assert loaded is not None
    program = synthetic_program(n)
    w0, c0 = time.perf_counter(), time.thread_time()
    plan, diags = make_plan(program, loaded)
    full_wall, full_cpu = time.perf_counter() - w0, time.thread_time() - c0
    assert not plan.unplaced, plan.unplaced[:3]
    w0, c0 = time.perf_counter(), time.thread_time()
    index = PlanIndex(program, plan, digraph.build(program)[0], loaded, 0, BUILTIN_POLICIES)
    index_wall, index_cpu = time.perf_counter() - w0, time.thread_time() - c0
    print(f"{n} intents (IR built directly), {sum(1 for p in plan.placements if p.gpu_count)} GPU placements; "
          f"full plan {full_wall:.1f} s wall / {full_cpu:.1f} s CPU; index {index_wall:.2f} s", flush=True)
    by_name = {i.name: k for k, i in enumerate(program.intents)}
    with_gpus = [i for i in program.intents if i.gpu_count]
    rng = random.Random(seed)
    walls, cpus, replaced = [], [], []
    intents = list(program.intents)
    for k, old in enumerate(rng.sample(with_gpus, edits)):
        assert old.constraints.gpus is not None
        count = [c for c in (1, 2, 4, 8) if c != old.gpu_count][k % 3]
        new = replace(old, constraints=replace(old.constraints, gpus=replace(old.constraints.gpus, count=count)))
        intents[by_name[new.name]] = new
        w0, c0 = time.perf_counter(), time.thread_time()
        got = index.replan([new], partial(_one_file, new))
        assert isinstance(got, Replanned), got
        index.apply(got)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.thread_time() - c0)
        replaced.append(len(got.replaced))
        doc = plan_to_obj(got.plan)
        after = {i.name: [r.name for r in i.trigger.after] for i in intents}
        broken = overlaps(doc)[:3] + over_capacity(doc, {x.name: x.gpu_count for x in loaded.topology.nodes})[:3] \
            + order_violations(doc, after)[:3]
        if broken:
            raise SystemExit(f"the incremental plan breaks an invariant: {broken}")
        print(f"GPU edit of {new.name} ({old.gpu_count} -> {count}): incremental plan {walls[-1] * 1000:.2f} ms "
              f"wall, {cpus[-1] * 1000:.2f} ms CPU, {len(got.replaced)} intents re-placed", flush=True)
    program = ir.Program(program.tenants, program.datasets, tuple(intents))
    out = {
        "intents": n, "what": "planning step alone, IR built without parsing (synthetic_program)",
        "full_plan_wall_s": round(full_wall, 2), "full_plan_cpu_s": round(full_cpu, 2),
        "index_build_wall_s": round(index_wall, 2), "index_build_cpu_s": round(index_cpu, 2),
        "incremental_ms_wall_each": [round(t * 1000, 2) for t in walls],
        "incremental_ms_cpu_each": [round(t * 1000, 2) for t in cpus],
        "incremental_ms_wall_median": round(statistics.median(walls) * 1000, 2),
        "incremental_ms_cpu_median": round(statistics.median(cpus) * 1000, 2),
        "replaced_each": replaced,
        "speedup_cpu_vs_full_plan": round(full_cpu / statistics.median(cpus), 1),
        "rss_mb": _rss_mb(),
    }
    print(f"incremental plan: median {out['incremental_ms_wall_median']} ms wall, "
          f"{out['incremental_ms_cpu_median']} ms CPU; full plan {full_cpu:.1f} s CPU "
          f"({out['speedup_cpu_vs_full_plan']}x)", flush=True)
    return out


def bench_seeded(n: int, edits: int, seed: int) -> dict[str, Any]:
    """`Reloader.update` end to end at n intents, its state seeded from IR built without
    parsing (`synthetic_program`: one intent per file, as the generator writes them) and
    then compiled by the Reloader itself (plan, render, snapshot).  Each edit writes a real
    file for one GPU intent (bench_frontend's text for it, the GPU count changed) and times
    `update([file])`: read, parse, passes, incremental plan, render, swap.  No background
    re-plan (its cost is --planner-only's full plan)."""
    from benchmarks.bench_frontend import dsl_intent
    program = synthetic_program(n)
    with tempfile.TemporaryDirectory(prefix="bench-seeded-") as tmp:
        root, reloader, seed_s = _seeded(Path(tmp), program, common_text())
        print(f"{n} intents seeded and compiled by the Reloader in {seed_s:.1f} s; RSS {_rss_mb()} MB", flush=True)
        rng = random.Random(seed)
        walls, cpus, notes = [], [], []
        for i in sorted(rng.sample(range(0, n, GPU_EVERY), edits)):
            path = root / f"job-{i:05d}.intent"
            text = dsl_intent(i, random.Random(i))
            old = int(DSL_COUNT.search(text).group(2))       # type: ignore[union-attr]
            path.write_text(DSL_COUNT.sub(rf"\g<1>{[c for c in (1, 2, 4, 8) if c != old][i % 3]}\g<3>", text))
            w0, c0 = time.perf_counter(), time.thread_time()
            fresh = reloader.update([path])
            walls.append(time.perf_counter() - w0)
            cpus.append(time.thread_time() - c0)
            # (only now is the previous result, and the snapshot it holds, let go: freeing it is
            # the caller's work, not the swap's)
            result = fresh
            if not result.ok:
                raise SystemExit(f"the edit did not compile: {[str(d) for d in result.diagnostics[:3]]}")
            notes.append(result.plan_note)
            print(f"GPU edit of {path.name}: swapped in {walls[-1] * 1000:.2f} ms wall, {cpus[-1] * 1000:.2f} ms "
                  f"CPU ({result.plan_note}, {len(result.rerendered)} intents rendered)", flush=True)
            broken = verify(reloader)
            if broken:
                raise SystemExit(f"the incremental plan breaks an invariant: {broken}")
    out = {"intents": n, "what": "Reloader.update end to end, state seeded from IR built without parsing",
           "seed_and_first_compile_s": round(seed_s, 1), "notes": notes,
           "update_ms_wall_each": [round(t * 1000, 2) for t in walls],
           "update_ms_cpu_each": [round(t * 1000, 2) for t in cpus],
           "update_ms_wall_median": round(statistics.median(walls) * 1000, 2),
           "update_ms_cpu_median": round(statistics.median(cpus) * 1000, 2),
           "target_under_50ms_met_wall": statistics.median(walls) < 0.050,
           "target_under_50ms_met_cpu": statistics.median(cpus) < 0.050, "rss_mb": _rss_mb()}
    print(f"GPU edit, end to end: median {out['update_ms_wall_median']} ms wall, {out['update_ms_cpu_median']} ms CPU",
          flush=True)
    return out


def _seeded(tmp: Path, program: Any, common: str) -> tuple[Path, Reloader, float]:
    """A Reloader (no background re-plan) on tmp/repo and the benchmark's topology, seeded
    with `program` (`_seed`): the repository root, the Reloader, the seconds it took."""
    root = tmp / "repo"
    root.mkdir()
    topo_path = tmp / "topology.yaml"
    topo_path.write_text(topology_text())
    reloader = Reloader([str(root)], str(topo_path), SHA, background=False)
    return root, reloader, _seed(reloader, root, program, common)


def _seed(reloader: Reloader, root: Path, program: Any, common: str) -> float:
    """The Reloader's table filled with `program`, one file per intent (as bench_seeded),
    common.intent (tenants, datasets) written to disk too (tenant edits read it); then
    compiled by the Reloader itself.  Returns the seconds it took."""
    from dataclasses import replace

    from intentc import collector
    from intentc.daemon.reload.state import FileState
    from intentc.diagnostics import Span
    from intentc.frontend import parse_source
    from intentc.frontend.sources import SourceFile
    from intentc.ir import FieldSpans, Program
    w0 = time.perf_counter()
    with collector.paused(collector.After.FREEZE):
        path = f"{root.as_posix()}/common.intent"
        (root / "common.intent").write_text(common)
        head = parse_source(SourceFile(path, common)).program
        reloader._table.set(path, FileState(Program(head.tenants, head.datasets), (), ()), common)
        for intent in program.intents:
            name = f"{root.as_posix()}/{intent.span.file}"
            placed = replace(intent, spans=FieldSpans.at(Span(name, 2, 1, 2, 1)))
            reloader._table.set(name, FileState(Program(intents=(placed,)), (), ()))
        reloader._load_topology()
        first = reloader._compile((), (), True)
    if not first.ok:
        raise SystemExit(f"the seeded program does not compile: {[str(d) for d in first.diagnostics[:3]]}")
    return time.perf_counter() - w0


def _job_text(i: int, gpus: bool, trigger: str | None = None, consumes: str | None = None) -> str:
    """bench_frontend's DSL text for job i, GPUs kept only when `gpus`, the trigger or the
    consumed dataset replaced when given."""
    from benchmarks.bench_frontend import dsl_intent
    text = dsl_intent(i, random.Random(i))
    if not gpus:
        text = DSL_GPUS.sub("", text)
    if trigger is not None:
        text = re.sub(r"  trigger: [^\n]*\n", f"  trigger: {trigger}\n", text)
    if consumes is not None:
        text = re.sub(r"  consumes: [^\n]*\n", f"  consumes: {consumes}\n", text)
    return text


# Each kind: (what it is, edit k -> (files written or deleted, the note's expected start)).
EditMaker = Callable[[Path, int, int, int], list[Path]]


def _edit_kinds() -> dict[str, tuple[str, EditMaker]]:
    def gpu(root: Path, n: int, i: int, k: int) -> list[Path]:
        text = _job_text(i, True)
        old = int(DSL_COUNT.search(text).group(2))       # type: ignore[union-attr]
        path = root / f"job-{i:05d}.intent"
        path.write_text(DSL_COUNT.sub(rf"\g<1>{[c for c in (1, 2, 4, 8) if c != old][k % 3]}\g<3>", text))
        return [path]

    def after_added(root: Path, n: int, i: int, k: int) -> list[Path]:
        path = root / f"job-{i:05d}.intent"       # a chain's first (GPU) intent made to wait for the chain before
        path.write_text(_job_text(i, True, trigger=f"after job-{i - 1:05d}"))
        return [path]

    def after_dropped(root: Path, n: int, i: int, k: int) -> list[Path]:
        path = root / f"job-{i + 2:05d}.intent"   # the middle of a chain starts on push
        path.write_text(_job_text(i + 2, False, trigger="on push"))
        return [path]

    def data_edge(root: Path, n: int, i: int, k: int) -> list[Path]:
        path = root / f"job-{i:05d}.intent"       # consumes what an intent of another chain produces
        path.write_text(_job_text(i, True, consumes=f"out-{i - 7:05d}"))
        return [path]

    def new(root: Path, n: int, i: int, k: int) -> list[Path]:
        path = root / f"job-{n + k:05d}.intent"   # a new file: a new GPU intent
        path.write_text(_job_text(n + k, True, trigger="on push"))
        return [path]

    def removed(root: Path, n: int, i: int, k: int) -> list[Path]:
        gone, next_ = root / f"job-{i:05d}.intent", root / f"job-{i + 1:05d}.intent"
        gone.unlink(missing_ok=True)             # a GPU intent removed; the one after it starts on push
        next_.write_text(_job_text(i + 1, False, trigger="on push"))
        return [gone, next_]

    def tenant(root: Path, n: int, i: int, k: int) -> list[Path]:
        from benchmarks.bench_frontend import TENANTS
        path = root / "common.intent"             # a tenant's quota (above its peak) and weight changed
        text = path.read_text()
        t = TENANTS[k % len(TENANTS)]
        tier = ["gold", "silver", "bronze", "silver"][k % len(TENANTS)]
        text = re.sub(rf"tenant {t} {{[^}}]*}}", f"tenant {t} {{\n  tier: {tier}\n  weight: {k + 1}\n"
                                                  f"  quota: gpus {100000 + k}\n}}", text)
        path.write_text(text)
        return [path]
    return {
        "gpu": ("GPU count of one GPU intent", gpu),
        "after_added": ("an `after` added to a chain's first intent (it and its chain re-placed)", after_added),
        "after_dropped": ("an `after` dropped from an intent mid-chain (it and the rest of its chain)",
                          after_dropped),
        "data_edge": ("the dataset an intent consumes changed to another intent's output (a data edge)", data_edge),
        "new_intent": ("a new file with a new GPU intent", new),
        "removed_intent": ("a GPU intent's file deleted, the intent after it edited to start on push", removed),
        "tenant": ("a tenant's quota and weight changed (the kept plan fits the quota)", tenant),
    }


def bench_kinds(n: int, edits: int, baseline_edits: int, seed: int, kinds: list[str]) -> dict[str, Any]:
    """`Reloader.update` end to end per edit kind at n intents (state seeded as bench_seeded):
    the incremental swap (median of `edits` edits per kind, each on a different intent),
    and the baseline, main at b1d2aaf, where each of these kinds went to the full planner
    (`_incremental` made to fall back), `baseline_edits` of each, same run, same state."""
    from intentc.plan.incremental import Fallback
    program = synthetic_program(n)
    common = common_text()
    makers = _edit_kinds()
    out: dict[str, Any] = {"intents": n, "what": "Reloader.update end to end per edit kind, state seeded from IR "
                           "built without parsing; baseline: the same edit with the incremental planner off "
                           "(the full planner, as main at b1d2aaf for these kinds)", "kinds": {},
                           "loadavg_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-kinds-") as tmp:
        root, reloader, seed_s = _seeded(Path(tmp), program, common)
        out["seed_and_first_compile_s"] = round(seed_s, 1)
        print(f"{n} intents seeded and compiled in {out['seed_and_first_compile_s']} s; RSS {_rss_mb()} MB; "
              f"load average {os.getloadavg()}", flush=True)
        rng = random.Random(seed)
        heads = rng.sample(range(20, n - 20, GPU_EVERY), len(kinds) * (edits + baseline_edits))
        incremental = reloader._incremental
        for kind in kinds:
            what, make = makers[kind]
            runs: dict[str, list[float]] = {"incremental": [], "baseline": []}
            cpu: dict[str, list[float]] = {"incremental": [], "baseline": []}
            notes = []
            for k in range(edits + baseline_edits):
                mode = "incremental" if k < edits else "baseline"
                reloader._incremental = incremental if mode == "incremental" else (  # type: ignore[method-assign]
                    lambda previous, changes: Fallback("baseline: the full planner"))
                i = heads.pop()
                paths = make(root, n, i, k)
                w0, c0 = time.perf_counter(), time.thread_time()
                result = reloader.update(paths)
                runs[mode].append(time.perf_counter() - w0)
                cpu[mode].append(time.thread_time() - c0)
                if not result.ok:
                    raise SystemExit(f"{kind} edit did not compile: {[str(d) for d in result.diagnostics[:3]]}")
                if mode == "incremental":
                    notes.append(result.plan_note)
                    if not result.plan_note.startswith("incremental plan: "):
                        raise SystemExit(f"{kind} edit was not planned incrementally: {result.plan_note!r}")
                print(f"{kind} edit {k} ({mode}): {runs[mode][-1] * 1000:.1f} ms wall, {cpu[mode][-1] * 1000:.1f} ms "
                      f"CPU ({result.plan_note or 'full plan'}, "
                      f"{len(result.rerendered)} intents rendered)", flush=True)
                broken = verify(reloader)
                if broken:
                    raise SystemExit(f"the plan in force breaks an invariant: {broken}")
            reloader._incremental = incremental                                      # type: ignore[method-assign]
            row: dict[str, Any] = {"what": what, "notes": notes,
                   "swap_ms_each": [round(t * 1000, 1) for t in runs["incremental"]],
                   "swap_ms_median": round(statistics.median(runs["incremental"]) * 1000, 1),
                   "swap_ms_min": round(min(runs["incremental"]) * 1000, 1),
                   "swap_cpu_ms_min": round(min(cpu["incremental"]) * 1000, 1),
                   "swap_cpu_ms_each": [round(t * 1000, 1) for t in cpu["incremental"]],
                   "swap_cpu_ms_median": round(statistics.median(cpu["incremental"]) * 1000, 1),
                   "baseline_cpu_ms_each": [round(t * 1000, 1) for t in cpu["baseline"]],
                   "baseline_ms_each": [round(t * 1000, 1) for t in runs["baseline"]]}
            if runs["baseline"]:
                row["baseline_ms_median"] = round(statistics.median(runs["baseline"]) * 1000, 1)
                row["speedup"] = round(row["baseline_ms_median"] / row["swap_ms_median"], 1)
            out["kinds"][kind] = row
    out["loadavg_end"] = os.getloadavg()
    out["rss_mb"] = _rss_mb()
    print(f"{'edit kind':<16} {'swap ms (median)':>17} {'CPU ms':>8} {'min ms':>7} {'min CPU':>8} "
          f"{'baseline ms':>12} {'x':>7}")
    for kind, row in out["kinds"].items():
        print(f"{kind:<16} {row['swap_ms_median']:>17} {row['swap_cpu_ms_median']:>8} {row['swap_ms_min']:>7} "
              f"{row['swap_cpu_ms_min']:>8} "
              f"{row.get('baseline_ms_median', '-'):>12} {row.get('speedup', '-'):>7}")
    print(f"load average at start {out['loadavg_start']}, at end {out['loadavg_end']}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intents", type=int, default=10000)
    ap.add_argument("--edits", type=int, default=7, help="image edits, each to a different file")
    ap.add_argument("--replan-edits", type=int, default=5, help="GPU-count edits (incremental re-plan)")
    ap.add_argument("--out", default="bench_reload", help="results file name (benchmarks/results/NAME.json)")
    ap.add_argument("--repeat", type=int, default=2, help="full compiles, best reported (0: none)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--seeded", action="store_true",
                    help="Reloader.update end to end on a state seeded from IR built without parsing")
    ap.add_argument("--kinds", default="",
                    help="comma-separated edit kinds (gpu, after_added, after_dropped, data_edge, new_intent, "
                         "removed_intent, tenant) or 'all': Reloader.update per kind on a seeded state, with "
                         "the full-planner baseline (--baseline-edits of each)")
    ap.add_argument("--baseline-edits", type=int, default=1)
    ap.add_argument("--planner-only", action="store_true",
                    help="time the planning step alone (full plan vs incremental) on IR built without parsing")
    args = ap.parse_args()
    if args.kinds:
        kinds = list(_edit_kinds()) if args.kinds == "all" else args.kinds.split(",")
        write_results(args.out, bench_kinds(args.intents, args.replan_edits, args.baseline_edits, args.seed, kinds))
        return 0
    if args.seeded:
        write_results(args.out, bench_seeded(args.intents, args.replan_edits, args.seed))
        return 0
    if args.planner_only:
        write_results(args.out, bench_planner(args.intents, args.replan_edits, args.seed))
        return 0
    result = bench(args.intents, args.edits, args.replan_edits, args.repeat, args.seed)
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
