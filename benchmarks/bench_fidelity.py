"""Plan fidelity on the test bed: does the cluster run the schedule `intentc plan` forecasts?

    KUBEBUILDER_ASSETS="$(hack/testenv/setup)" python benchmarks/bench_fidelity.py [--smoke]
        [--ms-per-hour 5000] [--shapes chain,fanout,mix] [--targets device-plugin,kueue,dra]

The test bed (tests/kube_env.py: kube-apiserver, controller-manager,
kube-scheduler, kwok, Kueue) with 16 kwok GPU nodes (`topology()`): 12 HGX
H100 nodes (8 GPUs each, racks r1 and r2, each node its own NVLink domain)
and 4 GB200 trays (4 GPUs each) forming one multi-node NVLink domain in
rack r3; with DRA ResourceSlices, so all three render targets can run.
kwok holds every Job pod Running for its intent's planned duration, scaled:
intentc renders `intentc.dev/planned-duration-seconds` on each Job's pod
template, and the stage (tests/kwok_stages.py) is configured here with
`--ms-per-hour` milliseconds of cluster time per plan hour.  intentc's
output is not rewritten.

Shapes (seeded, deterministic; `--smoke` sizes in brackets):

* `chain` — one tenant, a chain of 10 [6] intents of 1-3 h, 8 GPUs within node;
* `fanout` — a root, 16 [4] branches of two stages (1-4 h, then 1 h; 2-8
  GPUs within node), a join after every branch;
* `mix` — 160 [24] intents of four tenants with GPU quotas (oversubscribed):
  16-GPU gangs within rack, 8 GB200 within nvlink, 8/4/2/1 H100 within node,
  SLA classes P0-P3 within each tier's limit, some `after` edges.

Each shape runs under each target with `intentc apply --wait` as a user
runs it (a subprocess; `--only-topology-nodes`, its own tenants and
inventory target), once as intentc releases intents now (each when its
own prerequisites end) and once with the previous whole-wave release — the
baseline, reachable only through apply's hidden `--release waves`
(reconcile/release.py), in the same run, on the same cluster.  `--modes
daemon` commits the same intents to a git repository and lets `intentc
daemon` (git mode, polling every second, leader election on) roll them out
instead, until every planned Job has ended.  `--modes
intents,poll` compares per-intent release as it learns that Jobs ended —
from a watch (reconcile/watched.py) — with the same release reading them
once a second instead (apply's hidden `--release poll`, the behaviour
before the watch).

What happened is read from the API server only, after each apply: Jobs'
`status.startTime` / `completionTime` (fallback variants that never ran
left out), their pods' `spec.nodeName`, Kueue's Workloads (admission time
and assignment), and under `dra` the ResourceClaims' allocations (a watch,
since a claim goes with its pod).  Compared with the plan `compile` makes
of the same inputs: per-intent start error as a fraction of the planned
makespan (median, p90, max), actual/planned makespan, order inversions
(pairs the plan starts in one order and the cluster, by more than the 1-s
timestamp resolution, in the other), node agreement (device-plugin, dra),
device agreement (dra), `within` scopes kept and domain agreement at the
`within` level.  Cluster times are converted to plan time with the scale;
the actual start of the first intent is plan time 0.

Goals (issue 40): actual/planned makespan <= 1.05, p90 start error <= 5 %
of the makespan, 0 `within` scopes broken, >= 95 % of intents on their
planned nodes under device-plugin and dra.  Writes
benchmarks/results/bench_fidelity.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.proc import loadavg, measure  # noqa: E402
from benchmarks.results import results_dir, write_results  # noqa: E402
from intentc.pipeline import compile_paths  # noqa: E402
from intentc.plan.model import Plan  # noqa: E402
from intentc.render.capabilities import KubeVersion  # noqa: E402
from intentc.objectmeta import INTENT_LABEL  # noqa: E402
from tests.kube_env import KubeEnv, assets_dir  # noqa: E402
from tests.kube_nodes import add_topology  # noqa: E402
from tests.kube_support import WatchRecorder, recorded_jobs  # noqa: E402
from tests.kwok_stages import planned_duration_stages  # noqa: E402

SHA = "d" * 40
SEED = 40
TARGETS = ("device-plugin", "kueue", "dra")
SHAPES = ("chain", "fanout", "mix")
MODES = ("intents", "waves")          # waves: the baseline (apply --release waves, hidden)
# daemon: the same intents committed to git and rolled out by `intentc daemon` (git mode)
# poll: per intent, Jobs read once a second (apply --release poll); edges: per intent on the graph's
# edges alone, Kueue ordering the rest itself (apply --release edges, the kueue target before);
# unordered: per intent without a quota-bound tenant's start order (apply --release unordered)
BASELINES = ("waves", "poll", "edges", "unordered")
FALLBACK_OF = "intentc.dev/fallback-of"
GOALS = {"makespan_ratio_max": 1.05, "p90_start_error_max": 0.05, "within_broken_max": 0, "node_agreement_min": 0.95}


def topology() -> str:
    nodes = []
    for i in range(1, 13):
        rack = "r1" if i <= 6 else "r2"
        nodes.append(f"    - name: h{i:02d}\n      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}\n"
                     f'      cpu: "192"\n      memory: 2Ti\n      domains: {{zone: z1, rack: {rack}, nvlink: h{i:02d}}}\n')
    for i in range(1, 5):
        nodes.append(f"    - name: gb{i}\n      gpu: {{product: GB200, count: 4, memory: 192Gi}}\n"
                     f'      cpu: "144"\n      memory: 1Ti\n      domains: {{zone: z1, rack: r3, nvlink: nvl-a}}\n')
    return ("apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {name: fidelity}\nspec:\n"
            "  levels: [zone, rack, nvlink, node]\n  nodes:\n" + "".join(nodes))


def job(name: str, tenant: str, hours: int, gpus: int, product: str = "H100-80GB", scope: str = "node",
        after: tuple[str, ...] = (), sla: str | None = None) -> str:
    trigger = f"after {', '.join(after)}" if after else "on push"
    extra = f", sla {sla}" if sla else ""
    return (f"intent {name} {{\n  trigger: {trigger}\n  action: batch image \"registry.example/{name}:1\"\n"
            f"  context: tenant {tenant}\n  constraints: cpu 1, memory 1Gi, gpus {gpus} x \"{product}\" within "
            f"{scope}, duration {hours}h{extra}\n}}\n")


def chain(p: str, n: int) -> str:
    out = f"tenant {p}-a {{ tier: gold }}\n"
    for i in range(n):
        out += job(f"c{i:02d}", f"{p}-a", 1 + (i * 7) % 3, 8, after=(f"c{i - 1:02d}",) if i else ())
    return out


def fanout(p: str, k: int) -> str:
    out = f"tenant {p}-a {{ tier: gold }}\n" + job("root", f"{p}-a", 1, 8)
    for i in range(k):
        out += job(f"b{i:02d}", f"{p}-a", 1 + (i * 5) % 4, (2, 4, 8)[i % 3], after=("root",))
        out += job(f"b{i:02d}-post", f"{p}-a", 1, (2, 4, 8)[(i + 1) % 3], after=(f"b{i:02d}",))
    return out + job("join", f"{p}-a", 1, 8, after=tuple(f"b{i:02d}-post" for i in range(k)))


TIERS = (("gold", 48, ("P0", "P1", "P2", "P3")), ("silver", 32, ("P1", "P2", "P3")),
         ("silver", 24, ("P1", "P2", "P3")), ("bronze", 16, ("P2", "P3")))


def mix(p: str, n: int) -> str:
    rng = random.Random(SEED)
    out = "".join(f"tenant {p}-t{i} {{ tier: {tier}\n  quota: gpus {quota} }}\n"
                  for i, (tier, quota, _) in enumerate(TIERS))
    names: dict[int, list[str]] = {i: [] for i in range(len(TIERS))}
    for k in range(n):
        t = k % len(TIERS)
        kind = rng.choices(("rack", "nvlink", "node8", "node4", "small"), weights=(1, 1, 3, 3, 4))[0]
        gpus, product, scope = {"rack": (16, "H100-80GB", "rack"), "nvlink": (8, "GB200", "nvlink"),
                                "node8": (8, "H100-80GB", "node"), "node4": (rng.choice((4, 2)), "GB200", "node"),
                                "small": (rng.choice((1, 2, 4)), "H100-80GB", "node")}[kind]
        after = (rng.choice(names[t]),) if names[t] and rng.random() < 0.3 else ()
        name = f"m{k:03d}"
        out += job(name, f"{p}-t{t}", rng.choice((1, 1, 2, 3)), gpus, product, scope, after,
                   rng.choice(TIERS[t][2]))
        names[t].append(name)
    return out


def sizes(smoke: bool) -> dict[str, int]:
    return {"chain": 6, "fanout": 4, "mix": 24} if smoke else {"chain": 10, "fanout": 16, "mix": 160}


def at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def measured(env: KubeEnv, namespaces: list[str], claims: WatchRecorder | None) -> dict[str, Any]:
    """What the API server says ran: per intent, start, completion, pods' nodes; Kueue's
    admissions; DRA allocations."""
    out: dict[str, dict[str, Any]] = {}
    for ns in namespaces:
        for j in env.kubectl_json("get", "jobs", "-n", ns)["items"]:
            if FALLBACK_OF in (j["metadata"].get("annotations") or {}):
                continue
            intent = j["metadata"]["labels"][INTENT_LABEL]
            st = j.get("status") or {}
            rec = out.setdefault(intent, {"start": [], "end": [], "nodes": set(), "admitted": [], "devices": set(),
                                          "created": []})
            rec["created"].append(at(j["metadata"]["creationTimestamp"]))
            if st.get("startTime"):
                rec["start"].append(at(st["startTime"]))
            if st.get("completionTime"):
                rec["end"].append(at(st["completionTime"]))
        for pod in env.kubectl_json("get", "pods", "-n", ns)["items"]:
            intent = (pod["metadata"].get("labels") or {}).get(INTENT_LABEL)
            if intent in out and pod["spec"].get("nodeName"):
                out[intent]["nodes"].add(pod["spec"]["nodeName"])
        try:
            workloads = env.kubectl_json("get", "workloads.kueue.x-k8s.io", "-n", ns)["items"]
        except RuntimeError:
            workloads = []
        for w in workloads:
            intent = (w["metadata"].get("labels") or {}).get(INTENT_LABEL) or _owner_intent(w, out)
            for c in (w.get("status") or {}).get("conditions", []):
                if c["type"] == "Admitted" and c["status"] == "True" and intent in out:
                    out[intent]["admitted"].append(at(c["lastTransitionTime"]))
                if c["type"] == "QuotaReserved" and c["status"] == "False" and intent in out:
                    out[intent]["pending"] = str(c.get("message", ""))[:200]
    if claims is not None:
        for c in claims.events:
            intent = (c["metadata"].get("labels") or {}).get(INTENT_LABEL)
            alloc = ((c.get("status") or {}).get("allocation") or {}).get("devices") or {}
            if intent in out and c["metadata"]["namespace"] in namespaces:
                for r in alloc.get("results", []):
                    out[intent]["devices"].add((r["pool"], int(str(r["device"]).rpartition("-")[2])))
    return out


def quota_refusals(env: KubeEnv, namespaces: list[str]) -> int:
    """Creations the namespaces' ResourceQuota refused: pods (the Job controller's FailedCreate
    events) and, under dra, their ResourceClaims (the claim controller's
    FailedResourceClaimCreation).  Each is retried after a backoff that doubles from a second."""
    count = 0
    for ns in namespaces:
        for e in env.kubectl_json("get", "events", "-n", ns)["items"]:
            if e.get("reason") in ("FailedCreate", "FailedResourceClaimCreation") \
                    and "exceeded quota" in str(e.get("message", "")):
                count += int(e.get("count") or 1)
    return count


def _owner_intent(w: dict[str, Any], known: dict[str, Any]) -> str | None:
    for o in w["metadata"].get("ownerReferences", []):
        if o["kind"] == "Job":
            name = str(o["name"])
            return next((i for i in sorted(known, key=len, reverse=True) if name == i or name.startswith(i + "-")),
                        None)
    return None


def compare(plan: Plan, within: dict[str, str], domains: dict[str, dict[str, str]], got: dict[str, Any],
            ms_per_hour: int, target: str, trace: bool = False) -> dict[str, Any]:
    """The cluster's run against the plan, in plan time; with `trace`, per intent (latest
    start first): planned start, Job created, Job started, planned end, Job completed, in
    plan hours from the first start, so a late start shows whether apply released it late
    (created) or the cluster started it late (started)."""
    scale = 3600.0 / (ms_per_hour / 1000.0)          # plan seconds per cluster second
    placed = {p.intent: p for p in plan.placements if p.end_s is not None}
    ran = {n: r for n, r in got.items() if n in placed and r["start"]}
    missing = sorted(set(placed) - set(ran))
    if not ran:
        return {"intents_planned": len(placed), "intents_ran": 0, "missing": missing[:10],
                "planned_makespan_h": round(plan.metrics.makespan_s / 3600, 2), "goals_missed": ["nothing ran"]}
    t0 = min(min(r["start"]) for r in ran.values())
    start = {n: (min(r["start"]) - t0) * scale for n, r in ran.items()}
    ends = [max(r["end"]) for r in ran.values() if r["end"]]
    makespan = plan.metrics.makespan_s
    actual_makespan = (max(ends) - t0) * scale if ends else float("nan")
    errors = [abs(start[n] - placed[n].start_s) / makespan for n in ran]
    names = sorted(ran)
    pairs = inversions = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            pa, pb = placed[a].start_s, placed[b].start_s
            if pa == pb:
                continue
            pairs += 1
            first, second = (a, b) if pa < pb else (b, a)
            if min(ran[first]["start"]) > min(ran[second]["start"]) + 1:      # 1-s timestamp resolution
                inversions += 1
    on_plan = [n for n in names if ran[n]["nodes"] == set(placed[n].nodes)]
    scoped = [n for n in names if n in within and ran[n]["nodes"]]
    broken = [n for n in scoped if len({domains[x][within[n]] for x in ran[n]["nodes"]}) > 1]
    planned_domain = {n: dict(placed[n].domains).get(within[n]) or
                      (placed[n].nodes[0] if within[n] == "node" and placed[n].nodes else None) for n in scoped}
    same_domain = [n for n in scoped if n not in broken
                   and {domains[x][within[n]] for x in ran[n]["nodes"]} == {planned_domain[n]}]
    out: dict[str, Any] = {
        "intents_planned": len(placed), "intents_ran": len(ran), "missing": missing[:10],
        "planned_makespan_h": round(makespan / 3600, 2),
        "makespan_ratio": round(actual_makespan / makespan, 3),
        "start_error": {"median": round(statistics.median(errors), 4), "p90": round(percentile(errors, 0.9), 4),
                        "max": round(max(errors), 4)},
        "order_inversions": inversions, "ordered_pairs": pairs,
        "node_agreement": round(len(on_plan) / len(names), 3),
        "within_scoped": len(scoped), "within_broken": len(broken),
        "domain_agreement": round(len(same_domain) / len(scoped), 3) if scoped else None,
        "quantum_of_plan_s": round(scale, 1),
    }
    if trace:
        def hours(t: float | None) -> float | None:
            return None if t is None else round((t - t0) * scale / 3600, 2)
        rows = [[n, round(placed[n].start_s / 3600, 2), hours(min(ran[n]["created"])),
                 hours(min(ran[n]["start"])), round((placed[n].end_s or 0) / 3600, 2),
                 hours(max(ran[n]["end"], default=None))] for n in names]
        out["trace"] = sorted(rows, key=lambda r: -((r[3] or 0) - r[1]))
    if target == "kueue":
        out["admitted"] = sum(1 for n in names if ran[n]["admitted"])
    if target == "dra":
        exact = [n for n in names if ran[n]["devices"] ==
                 {(a.node, g) for a in placed[n].allocations for g in a.gpus}]
        out["device_agreement"] = round(len(exact) / len(names), 3)
    out["goals_missed"] = [g for g, bad in (
        ("makespan", out["makespan_ratio"] > GOALS["makespan_ratio_max"]),
        ("p90_start_error", out["start_error"]["p90"] > GOALS["p90_start_error_max"]),
        ("within", len(broken) > GOALS["within_broken_max"]),
        ("nodes", target != "kueue" and out["node_agreement"] < GOALS["node_agreement_min"])) if bad]
    return out


def run_one(env: KubeEnv, work: Path, shape: str, size: int, target: str, mode: str, ms_per_hour: int,
            run_id: int, trace: bool = False) -> dict[str, Any]:
    p = f"f{run_id:02d}"
    repo = work / p
    (repo / "intents").mkdir(parents=True)
    text = {"chain": chain, "fanout": fanout, "mix": mix}[shape](p, size)
    (repo / "intents" / "main.intent").write_text(text)
    topo = work / "cluster.yaml"
    result = compile_paths([str(repo / "intents")], str(topo), SHA, KubeVersion(1, 37), target)
    assert result.plan is not None and result.program is not None and result.topology is not None, \
        [d.message for d in result.diagnostics]
    errors = [d.message for d in result.diagnostics if d.severity.value == "error"]
    assert not errors and not result.plan.unplaced, (errors, result.plan.unplaced)
    (repo / "plan.json").write_text(json.dumps({"placements": [
        {"intent": x.intent, "start_s": x.start_s, "end_s": x.end_s, "nodes": list(x.nodes)}
        for x in result.plan.placements]}, indent=1))
    within = {i.name: i.constraints.gpus.within for i in result.program.intents
              if i.constraints.gpus is not None and i.constraints.gpus.within}
    domains = {n.name: {**{lv: str(n.domain(lv)) for lv in ("zone", "rack", "nvlink")}, "node": n.name}
               for n in result.topology.topology.nodes}
    namespaces = sorted({i.tenant for i in result.program.intents})
    claims = WatchRecorder(env, "resourceclaims") if target == "dra" else None
    cmd = [sys.executable, "-m", "intentc", "apply", str(repo / "intents"), "-t", str(topo), "--kubeconfig",
           str(env.kubeconfig), "--commit", SHA, "--target", p, "--render-target", target, "-o", "json",
           "--only-topology-nodes"] + (["--release", mode] if mode in BASELINES else [])
    began = time.time()
    # an apply that cannot finish (work the cluster never admits) is cut off at twice the
    # planned makespan plus a minute, and what ran until then is measured
    limit = 2 * result.plan.metrics.makespan_s / 3600 * ms_per_hour / 1000 + 60
    if mode == "daemon":
        used, doc = follow_with_daemon(env, work, repo, topo, p, target, limit, namespaces,
                                       {x.intent for x in result.plan.placements if x.end_s is not None})
    else:
        used = measure(cmd, ok=(0, 1), stdout=True, timeout=limit)
        printed = used.pop("stdout").decode()
        doc = json.loads(printed[printed.find("{"):]) if "{" in printed else {}
    for ns in namespaces:        # apply counts a Job done from its pods, a second before the
        recorded_jobs(env, ns)   # Job controller records its completionTime, which is read here
    if claims is not None:
        claims.stop()
    got = measured(env, namespaces, claims)
    refused = quota_refusals(env, namespaces)
    # each run on a clean cluster: its namespaces (pods, Jobs, Workloads) and Kueue queues go
    env.kubectl_run("delete", "namespace", "--wait=false", *namespaces, check=False)
    if target == "kueue":
        env.kubectl_run("delete", "clusterqueues.kueue.x-k8s.io", *namespaces, "--wait=false", check=False)
    row = {"shape": shape, "intents": len(result.program.intents), "target": target, "release": mode,
           "apply_exit": used["exit"], "apply_timed_out": bool(used.get("timed_out")),
           "apply_limit_s": round(limit), "apply_wall_s": used["wall_s"], "apply_cpu_s": used["cpu_s"],
           "load": [used["load_before"], used["load_after"]], "apply_result": doc.get("result"),
           "apply_message": str(doc.get("message", ""))[:300], "cluster_s": round(time.time() - began, 1),
           "kueue_pending": sorted({r["pending"] for r in got.values() if r.get("pending")})[:3],
           "quota_refusals": refused}
    row.update(compare(result.plan, within, domains, got, ms_per_hour, target, trace))
    return row


def follow_with_daemon(env: KubeEnv, work: Path, repo: Path, topo: Path, target_name: str, target: str,
                       limit: float, namespaces: list[str], planned: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The intents committed to a git repository that `intentc daemon` follows (git mode, as
    its Deployment runs: polling every second, leader election on): what its first rollout
    did, until every planned intent's Job has ended or `limit` seconds passed."""
    import git

    from tests.daemon_proc import DaemonProc

    (repo / "cluster.yaml").write_text(topo.read_text())
    g = git.Repo.init(repo, initial_branch="main")
    g.index.add(["intents/main.intent", "cluster.yaml"])
    actor = git.Actor("bench", "bench@example.com")
    g.index.commit("intents", author=actor, committer=actor)
    began, load_before = time.monotonic(), loadavg()
    daemon = DaemonProc(target_name, repo, target_name, env.kubeconfig, work, "--render-target", target,
                        "--only-topology-nodes", "--metrics-listen=", topology="cluster.yaml")
    ended = False
    try:
        while time.monotonic() - began < limit and daemon.proc.poll() is None:
            jobs = [j for ns in namespaces for j in env.kubectl_json("get", "jobs", "-n", ns)["items"]
                    if FALLBACK_OF not in (j["metadata"].get("annotations") or {})]
            done = {j["metadata"]["labels"][INTENT_LABEL] for j in jobs
                    if any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                           for c in (j.get("status") or {}).get("conditions") or [])}
            if planned <= done:
                ended = True
                break
            time.sleep(1)
    finally:
        code = daemon.stop()
    used = {"exit": code, "timed_out": not ended, "wall_s": round(time.monotonic() - began, 3), "cpu_s": None,
            "load_before": load_before, "load_after": loadavg()}
    return used, {"result": "succeeded" if ended else "not finished", "message": ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="small shapes (6 / 9 / 24 intents)")
    ap.add_argument("--ms-per-hour", type=int, default=5000, help="cluster milliseconds per plan hour")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--modes", default=",".join(MODES),
                    help="intents, daemon (intentc daemon in git mode), waves (whole-wave baseline), "
                         "poll (per intent, polling baseline), edges (per intent on graph edges only: "
                         "Kueue's own order), unordered (per intent, no tenant start order)")
    ap.add_argument("--out", default="bench_fidelity", help="results name (benchmarks/results/NAME.json)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in the results file (same scale) and run only the others")
    ap.add_argument("--trace", action="store_true",
                    help="record per intent: planned start, Job created, started, planned end, completed")
    args = ap.parse_args()
    assets = assets_dir()
    if assets is None:
        raise SystemExit('needs the test bed: export KUBEBUILDER_ASSETS="$(hack/testenv/setup)"')
    rows: list[dict[str, Any]] = []
    done: set[tuple[str, str, str]] = set()
    if args.resume and (results_dir() / f"{args.out}.json").exists():
        old = json.loads((results_dir() / f"{args.out}.json").read_text())
        if old["ms_per_hour"] == args.ms_per_hour and old["smoke"] == args.smoke:
            rows = list(old["runs"])
            done = {(r["shape"], r["target"], r["release"]) for r in rows}
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        work = Path(tmp)
        (work / "cluster.yaml").write_text(topology())
        stages = planned_duration_stages(assets, work / "kwok", args.ms_per_hour)
        env = KubeEnv(assets, work / "env", ("controller-manager", "scheduler", "kwok"), (stages,))
        try:
            env.start()
            env.start_kueue()
            add_topology(env, str(work / "cluster.yaml"), dra=True)
            n = 0
            for shape in args.shapes.split(","):
                for target in args.targets.split(","):
                    for mode in args.modes.split(","):
                        n += 1
                        if (shape, target, mode) in done:
                            continue
                        row = run_one(env, work, shape, sizes(args.smoke)[shape], target, mode, args.ms_per_hour, n,
                                      args.trace)
                        rows.append(row)
                        print(json.dumps(row, sort_keys=True), flush=True)
                        write_results(args.out, document(args, rows))     # a cut-off run keeps what it had
        finally:
            env.stop()
    print(write_results(args.out, document(args, rows)))
    short = [f"{r['shape']}/{r['target']}/{r['release']}" for r in rows if r["intents_ran"] != r["intents_planned"]]
    if short:      # a makespan of intents that did not all run is not the plan's
        raise SystemExit(f"not every planned intent ran: {', '.join(short)}")


def document(args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"benchmark": "bench_fidelity", "smoke": args.smoke, "ms_per_hour": args.ms_per_hour,
            "nodes": "12 x 8 H100-80GB (racks r1, r2) + 4 x 4 GB200 (one NVLink domain, rack r3)",
            "goals": GOALS, "load_end": loadavg(), "runs": rows, "date": time.strftime("%Y-%m-%d", time.gmtime())}


if __name__ == "__main__":
    main()
