"""Apply 500 objects to a real kube-apiserver: intentc vs `kubectl apply --server-side`.

    KUBEBUILDER_ASSETS="$(hack/testenv/setup)" python benchmarks/bench_apply.py

A synthetic repository (10 tenants, 466 batch intents in 3 waves, SLA classes
P0-P3, so the tenants allow P0 with `max_sla`) compiles to 500 workload objects
(10 Namespaces, 10 RoleBindings, 10 ResourceQuotas, 4 PriorityClasses, 466
Jobs) and the `Intent` CRD every compile writes.
`--tenants` and `--intents` make it smaller (the smoke test,
tests/test_bench_smoke_kube.py).  The run exits 1 when the repository does
not compile cleanly to all of those objects, or when a tool's first apply
did not write every one of them: a benchmark that applied less than it
says measured nothing.  Each tool gets a fresh etcd + API server, applies
the same manifests once (first apply), then three more times (no-op
re-applies, median reported).  Write requests are read from the API
server's own `apiserver_request_total` (non-dry-run POST/PUT/PATCH/APPLY/
DELETE on the resources involved), so they are what the server saw.

Measured three ways for intentc: the reconciler alone (in process, the
compiled manifests as input), and the `intentc apply` command end to end
(interpreter start, compile, connect, apply) — the command-vs-command
figure is the one compared with kubectl.  Targets: no-op re-apply sends 0
writes; first apply no slower than kubectl; no-op re-apply >= 3x faster.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.results import write_results  # noqa: E402
from intentc.pipeline import compile_paths, write_outputs  # noqa: E402
from intentc.kube.client import KubeClient  # noqa: E402
from intentc.reconcile.sync import ApplyOptions, Reconciler  # noqa: E402
from intentc.render.capabilities import KubeVersion  # noqa: E402
from intentc.render.model import Manifest  # noqa: E402
from tests.kube_env import WORKLOAD_RESOURCES, KubeEnv, assets_dir, write_requests  # noqa: E402
from tests.topologies import topology  # noqa: E402

TENANTS = 10
INTENTS = 466
SHA = "b" * 40
NOOP_RUNS = 3
GPU_EVERY = 37          # one intent in this many asks for a GPU

TOPOLOGY = topology("bench", [f"node-{i}" for i in range(4)])


def expected_objects(tenants: int = TENANTS, intents: int = INTENTS) -> int:
    """A Namespace, RoleBinding and ResourceQuota per tenant, a PriorityClass per SLA class used, a Job per
    intent and the suspended power-capped step of each GPU Job's fallback chain (every 37th intent,
    `write_repo`): the objects whose writes the API server's metrics count (`write_requests`; not the CRD)."""
    return 3 * tenants + min(intents, 4) + intents + len(range(0, intents, GPU_EVERY))


def counted(manifests: Sequence[Manifest]) -> int:
    """The compiled objects of the kinds `write_requests` counts."""
    return sum(1 for m in manifests
               if m.ref.kind.lower() + ("es" if m.ref.kind.endswith("s") else "s") in WORKLOAD_RESOURCES)


def write_repo(root: Path, tenants_n: int = TENANTS, intents_n: int = INTENTS) -> tuple[Path, Path]:
    intents = root / "intents"
    intents.mkdir(parents=True)
    # max_sla P0: the jobs use every class, and a silver tenant's default ceiling is P1
    tenants = "".join(f'tenant bench-{t} {{\n  tier: silver\n  quota: gpus 8, cpu 512, memory 4Ti\n'
                      f'  group: "bench-{t}-devs"\n  max_sla: P0\n}}\n\n' for t in range(tenants_n))
    (intents / "tenants.intent").write_text(tenants)
    blocks = []
    for i in range(intents_n):
        wave = i % 3
        trigger = "on push" if wave == 0 else f"after job-{i - 1}"
        gpus = ', gpus 1 x "H100-80GB"' if i % GPU_EVERY == 0 else ""
        blocks.append(f'intent job-{i} {{\n  trigger: {trigger}\n'
                      f'  action: batch image "ghcr.io/acme/step:{i % 7}" command ["run", "--shard", "{i}"]\n'
                      f'  context: tenant bench-{i % tenants_n}\n'
                      f'  constraints: cpu 2, memory 4Gi{gpus}, sla P{i % 4}\n}}\n')
    (intents / "jobs.intent").write_text("\n".join(blocks))
    topology = root / "topology.yaml"
    topology.write_text(TOPOLOGY)
    return intents, topology


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def writes(env: KubeEnv) -> int:
    return sum(write_requests(env.metrics()).values())


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")


def measure(name: str, env: KubeEnv, apply: Callable[[], object], noop_runs: int = NOOP_RUNS) -> dict[str, float]:
    w0 = writes(env)
    first = timed(apply)
    w1 = writes(env)
    noops, noop_writes = [], []
    for _ in range(noop_runs):
        before = writes(env)
        noops.append(timed(apply))
        noop_writes.append(writes(env) - before)
    out = {"first_s": first, "first_writes": w1 - w0, "noop_s": statistics.median(noops),
           "noop_writes": max(noop_writes)}
    print(f"  {name:<28} first {first:6.2f}s ({w1 - w0} writes)   no-op {out['noop_s']:6.2f}s "
          f"({out['noop_writes']} writes)", flush=True)
    return out


def fresh_env(assets: Path, tmp: Path, label: str) -> KubeEnv:
    return KubeEnv(assets, tmp / label).start()


def problems(n: int, expected: int, results: dict[str, dict[str, float]]) -> list[str]:
    """What makes the run's figures not the ones it claims (empty: they are)."""
    found = [] if n == expected else [f"compiled {n} objects, not {expected}"]
    found += [f"{tool}: the first apply wrote {int(r['first_writes'])} objects, not all {n}"
              for tool, r in results.items() if r["first_writes"] < n]
    return found


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tenants", type=int, default=TENANTS)
    ap.add_argument("--intents", type=int, default=INTENTS)
    ap.add_argument("--noop-runs", type=int, default=NOOP_RUNS, help="no-op re-applies, median reported")
    args = ap.parse_args(argv)
    assets = assets_dir()
    if assets is None:
        print("needs KUBEBUILDER_ASSETS (run hack/testenv/setup)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmpdir:
        tmp = Path(tmpdir)
        intents, topology = write_repo(tmp / "repo", args.tenants, args.intents)
        t0 = time.perf_counter()
        result = compile_paths([str(intents)], str(topology), SHA, KubeVersion(1, 37))
        compile_s = time.perf_counter() - t0
        errors = [str(d) for d in result.diagnostics if d.is_error]
        if result.rendered is None or errors:
            print(f"the benchmark's repository does not compile cleanly ({len(errors)} errors):", *errors[:5],
                  sep="\n", file=sys.stderr)
            return 1
        out = tmp / "build"
        write_outputs(result, out)
        n = counted(result.rendered.manifests)
        expected = expected_objects(args.tenants, args.intents)
        print(f"{n} objects and the CRD ({args.tenants} tenants, {args.intents} Jobs); compile {compile_s:.2f}s; "
              f"{os.cpu_count()} CPUs", flush=True)
        runs = args.noop_runs

        results = {}
        env = fresh_env(assets, tmp, "kubectl")
        try:
            kenv = {**os.environ, "KUBECONFIG": str(env.kubeconfig), "HOME": str(tmp / "home")}
            kubectl = [str(env.kubectl), "apply", "--server-side", "-f", str(out / "manifests")]
            run([str(env.kubectl), "get", "namespaces"], kenv)       # warm kubectl's discovery cache
            results["kubectl"] = measure("kubectl apply --server-side", env, lambda: run(kubectl, kenv), runs)
        finally:
            env.stop()

        env = fresh_env(assets, tmp, "intentc-lib")
        try:
            client = KubeClient.connect(str(env.kubeconfig))
            opts = ApplyOptions(target="bench", wait=False)
            rendered = result.rendered
            results["reconciler"] = measure("intentc reconciler (lib)", env,
                                            lambda: Reconciler(client, opts).apply(rendered), runs)
        finally:
            env.stop()

        env = fresh_env(assets, tmp, "intentc-cli")
        try:
            cli = [sys.executable, "-m", "intentc", "apply", str(intents), "-t", str(topology), "--commit", SHA,
                   "--kubeconfig", str(env.kubeconfig), "--no-wait", "--target", "bench"]
            cenv = {**os.environ, "PYTHONPATH": str(ROOT)}
            results["cli"] = measure("intentc apply (command)", env, lambda: run(cli, cenv), runs)
        finally:
            env.stop()

    k = results["kubectl"]
    wrong = problems(n, expected, results)
    write_results("bench_apply", {"objects": n, "baseline": "kubectl apply --server-side -f DIR", "runs": results,
                                  "problems": wrong})
    print()
    for label, key in (("reconciler, same manifests", "reconciler"), ("command, incl. start-up + compile", "cli")):
        r = results[key]
        print(f"intentc {label}:")
        print(f"  first apply    {r['first_s']:.2f}s vs kubectl {k['first_s']:.2f}s -> "
              f"{k['first_s'] / r['first_s']:.2f}x (target >= 1: {'met' if r['first_s'] <= k['first_s'] else 'MISSED'})")
        print(f"  no-op re-apply {r['noop_s']:.2f}s vs kubectl {k['noop_s']:.2f}s -> "
              f"{k['noop_s'] / r['noop_s']:.1f}x (target >= 3: {'met' if k['noop_s'] >= 3 * r['noop_s'] else 'MISSED'})")
        print(f"  no-op writes   {r['noop_writes']} vs kubectl {k['noop_writes']} "
              f"(target 0: {'met' if r['noop_writes'] == 0 else 'MISSED'})")
    for p in wrong:
        print(f"not measured as claimed: {p}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
