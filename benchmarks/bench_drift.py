"""Drift detection: 10,000 objects as data, and 1,000 against a real API server.

    python benchmarks/bench_drift.py [--objects 10000] [--repeat 5] [--baseline-sample 1000]
    KUBEBUILDER_ASSETS="$(hack/testenv/setup)" python benchmarks/bench_drift.py

Part (a), pure detection.  A synthetic repository (10 tenants; batch Jobs
and serve Deployments + Services, CPU only) is compiled with
`compile_paths`; its first `--objects` rendered manifests are the desired
state.  Each is turned into what the API server would hold after intentc's
server-side apply: a `managedFields` entry for manager `intentc` listing
the fields it applied (a FieldsV1 trie built from the body), server
defaults nobody owns (dnsPolicy, imagePullPolicy, strategy, clusterIP, …),
`uid` / `resourceVersion`, a `status` written by `kube-controller-manager`
and, on some objects, an annotation added by another manager (never drift).
A seeded ~1% is then disturbed: an image changed by `kubectl-edit`
(-> modified), objects deleted (-> missing), hand-made copies carrying
intentc's labels (-> orphan).  `detect()` is timed (best of --repeat) and
its counts are checked against what was planted.

Baseline, same data, same run: what a generic differ does, one
`deepdiff.DeepDiff(desired, live)` per object pair (no notion of field
ownership, so every defaulted field and every status is a "difference").
DeepDiff is slow, so it is timed on a seeded sample of --baseline-sample
pairs and compared per object.  Target: 10,000 objects under 1 second.

Part (b), against etcd + kube-apiserver from $KUBEBUILDER_ASSETS (skipped
when unset).  The repository of benchmarks/bench_apply.py, grown to 1,000
objects, is applied with intentc's reconciler; then, on that in-sync
cluster, the `intentc drift` command (a fresh process: interpreter
start-up, compile, LIST per kind, detect; parse cache warmed by one untimed
run) is timed against `kubectl diff --server-side -f DIR` on the same
manifests (one server-side dry-run apply per object, then `diff`; kubectl's
discovery cache warmed), best of --kube-repeat each.  The in-process
`observe()` (no start-up, no compile) is reported beside them.

Writes benchmarks/results/bench_drift.json.  Seeded: the same data every run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("INTENTC_CACHE_DIR", "")   # no parse cache written to ~/.cache by part (a)

from deepdiff import DeepDiff

from benchmarks.results import write_results
from intentc.drift.detect import DriftClass, History, detect
from intentc.objectmeta import ObjectRef
from intentc.pipeline import compile_paths, write_outputs
from intentc.render.capabilities import KubeVersion

T = TypeVar("T")
SHA = "c" * 40
TENANTS = 10
DISTURBED = 0.01            # share of objects disturbed, split over the three classes below
APPLIED_AT = "2024-05-01T10:00:00Z"
EDITED_AT = "2024-05-02T09:30:00Z"

TOPOLOGY = """apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {name: bench}
spec:
  levels: [zone, rack, node]
  nodes:
""" + "".join(f"""    - name: node-{i}
      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}
      cpu: "192"
      memory: 2Ti
      domains: {{zone: z1, rack: r{i % 2}}}
""" for i in range(4))


# --------------------------------------------------------------------------
# Desired state: a compiled synthetic repository
# --------------------------------------------------------------------------

def intents_for(objects: int) -> int:
    """Intents needed for about `objects` objects: every fourth intent is a
    serve (Deployment + Service), the rest batch Jobs (one each), plus
    3 objects per tenant and a few PriorityClasses."""
    return int((objects - 3 * TENANTS) / 1.25) + 8


def write_repo(root: Path, intents: int) -> tuple[Path, Path]:
    src = root / "intents"
    src.mkdir(parents=True)
    (src / "tenants.intent").write_text("".join(
        f'tenant t-{t} {{\n  tier: silver\n  quota: gpus 8, cpu 4096, memory 16Ti\n  group: "t-{t}-devs"\n'
        f'  max_sla: P0\n}}\n\n'
        for t in range(TENANTS)))
    per_file = 500
    for start in range(0, intents, per_file):
        blocks = []
        for i in range(start, min(start + per_file, intents)):
            trigger = "on push" if i % 3 == 0 else f"after w-{i - 1}"
            if i % 4 == 1:
                action = f'serve image "ghcr.io/acme/api:{i % 11}" replicas {1 + i % 3} port {8000 + i % 5}'
            else:
                action = f'batch image "ghcr.io/acme/step:{i % 7}" command ["run", "--shard", "{i}"]'
            blocks.append(f"intent w-{i} {{\n  trigger: {trigger}\n  action: {action}\n"
                          f"  context: tenant t-{i % TENANTS}\n"
                          f"  constraints: cpu {1 + i % 4}, memory {2 + i % 6}Gi, sla P{i % 4}\n}}\n")
        (src / f"w-{start // per_file:03d}.intent").write_text("\n".join(blocks))
    topology = root / "topology.yaml"
    topology.write_text(TOPOLOGY)
    return src, topology


def desired_state(work: Path, objects: int) -> tuple[list[dict[str, Any]], float]:
    """The first `objects` rendered manifests (apply order), and the compile time."""
    src, topology = write_repo(work / "repo", intents_for(objects))
    t0 = time.perf_counter()
    result = compile_paths([str(src)], str(topology), SHA, KubeVersion(1, 37))
    compile_s = time.perf_counter() - t0
    if result.rendered is None:
        raise SystemExit("the synthetic repository does not compile:\n" +
                         "\n".join(str(d) for d in result.diagnostics if d.is_error))
    manifests = result.rendered.manifests
    if len(manifests) < objects:
        raise SystemExit(f"only {len(manifests)} objects rendered, {objects} wanted")
    return [dict(m.body) for m in manifests[:objects]], compile_s


# --------------------------------------------------------------------------
# Live state: what the API server holds after intentc's server-side apply
# --------------------------------------------------------------------------

# Lists of maps merged by key (the `k:` entries of a FieldsV1 trie); every
# other list is atomic (one leaf: `f:command`, `f:subjects`).
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "env": ("name",), "volumes": ("name",),
    "volumeMounts": ("mountPath",), "containerPorts": ("containerPort", "protocol"),
    "servicePorts": ("port", "protocol"),
}


def fields_trie(value: Any, key: str = "") -> dict[str, Any]:
    """The FieldsV1 set a server-side apply of `value` records for its manager."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_trie(v, k) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        if key == "ports":
            key = "containerPorts" if "containerPort" in value[0] else "servicePorts"
        keys = MERGE_KEYS.get(key)
        if keys is not None:
            return {"k:" + json.dumps({k: item[k] for k in keys if k in item}, sort_keys=True,
                                      separators=(",", ":")): {".": {}, **fields_trie(item)}
                    for item in value}
    return {}


def _pod_defaults(template: dict[str, Any]) -> None:
    spec = template["spec"]
    spec.update({"dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "securityContext": {},
                 "terminationGracePeriodSeconds": 30})
    for c in spec["containers"]:
        c.update({"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                  "terminationMessagePolicy": "File"})


def as_live(desired: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    """`desired` as read back from the server: intentc's managedFields entry,
    defaults nobody owns, server metadata, a controller-written status, and
    on some objects an annotation another manager added (none of it drift)."""
    live = json.loads(json.dumps(desired))
    meta = live["metadata"]
    uid = f"{i:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
    managed = [{"manager": "intentc", "operation": "Apply", "apiVersion": live["apiVersion"], "time": APPLIED_AT,
                "fieldsType": "FieldsV1", "fieldsV1": fields_trie(desired)}]
    meta.update({"uid": uid, "resourceVersion": str(1000 + i), "creationTimestamp": APPLIED_AT,
                 "managedFields": managed})
    kind, spec = live["kind"], live.get("spec")
    controller: dict[str, Any] = {}
    if kind == "Job":
        meta["generation"] = 1
        spec["selector"] = {"matchLabels": {"controller-uid": uid}}
        spec["template"]["metadata"]["labels"].update({"controller-uid": uid, "job-name": meta["name"]})
        _pod_defaults(spec["template"])
        live["status"] = {"startTime": APPLIED_AT, "active": 1}
        controller = {"f:status": {"f:active": {}, "f:startTime": {}}}
    elif kind == "Deployment":
        meta["generation"] = 1
        meta["annotations"]["deployment.kubernetes.io/revision"] = "1"
        spec.update({"progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}})
        _pod_defaults(spec["template"])
        r = spec["replicas"]
        live["status"] = {"observedGeneration": 1, "replicas": r, "readyReplicas": r, "availableReplicas": r,
                          "updatedReplicas": r}
        controller = {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}},
                      "f:status": {f"f:{k}": {} for k in live["status"]}}
    elif kind == "Service":
        spec.update({"clusterIP": f"10.0.{i // 250 % 250}.{i % 250 + 1}", "sessionAffinity": "None"})
        live["status"] = {"loadBalancer": {}}
    elif kind == "Namespace":
        live["spec"] = {"finalizers": ["kubernetes"]}
        live["status"] = {"phase": "Active"}
    if controller:
        managed.append({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": live["apiVersion"],
                        "time": APPLIED_AT, "fieldsType": "FieldsV1", "fieldsV1": controller})
    if rng.random() < 0.02:
        meta["annotations"]["ops.acme.io/owner"] = "sre"
        managed.append({"manager": "kubectl-annotate", "operation": "Update", "apiVersion": live["apiVersion"],
                        "time": EDITED_AT, "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:metadata": {"f:annotations": {"f:ops.acme.io/owner": {}}}}})
    return live


def edit_image(live: dict[str, Any], manager: str) -> None:
    """`kubectl edit` of the first container's image: the value changes and the
    field's ownership moves from intentc to `manager`."""
    container = live["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "docker.io/library/busybox:latest"
    key = "k:" + json.dumps({"name": container["name"]}, separators=(",", ":"))
    own = live["metadata"]["managedFields"][0]["fieldsV1"]
    del own["f:spec"]["f:template"]["f:spec"]["f:containers"][key]["f:image"]
    live["metadata"]["managedFields"].append(
        {"manager": manager, "operation": "Update", "apiVersion": live["apiVersion"], "time": EDITED_AT,
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {key: {"f:image": {}}}}}}}})


def hand_made(live: dict[str, Any]) -> dict[str, Any]:
    """A copy created by hand (`kubectl create`) that kept intentc's labels."""
    stray = json.loads(json.dumps(live))
    stray["metadata"]["name"] += "-by-hand"
    stray["metadata"]["uid"] = stray["metadata"]["uid"][:-4] + "beef"
    stray["metadata"]["managedFields"] = [
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": live["apiVersion"], "time": EDITED_AT,
         "fieldsType": "FieldsV1", "fieldsV1": fields_trie({k: v for k, v in live.items() if k != "status"})}]
    return stray


def live_state(desired: list[dict[str, Any]], seed: int) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Live objects for `desired`, a seeded 1% disturbed; and the counts planted."""
    rng = random.Random(seed)
    live = [as_live(d, i, rng) for i, d in enumerate(desired)]
    with_pods = [i for i, b in enumerate(live) if "template" in (b.get("spec") or {})]
    third = max(1, round(len(desired) * DISTURBED / 3))
    chosen = rng.sample(with_pods, 3 * third)
    edited, deleted, copied = chosen[:third], set(chosen[third:2 * third]), chosen[2 * third:]
    for i in edited:
        edit_image(live[i], "kubectl-edit")
    strays = [hand_made(live[i]) for i in copied]
    kept = [b for i, b in enumerate(live) if i not in deleted] + strays
    rng.shuffle(kept)                   # a LIST returns objects in no particular order
    planted = {DriftClass.MODIFIED.value: len(edited), DriftClass.MISSING.value: len(deleted),
               DriftClass.ORPHAN.value: len(strays),
               DriftClass.IN_SYNC.value: len(desired) - len(edited) - len(deleted)}
    return kept, planted


# --------------------------------------------------------------------------
# Part (a): detect() vs DeepDiff per pair
# --------------------------------------------------------------------------

def best_of_cpu(repeat: int, fn: Callable[[], T]) -> tuple[float, float, T]:
    """Best wall time, best CPU time of this process (the stable figure on a
    shared machine), and the last result."""
    wall = cpu = float("inf")
    for _ in range(max(1, repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def bench_detect(objects: int, repeat: int, sample: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-drift-") as tmp:
        desired, compile_s = desired_state(Path(tmp), objects)
    live, planted = live_state(desired, seed)
    inventory = [ObjectRef.of(d) for d in desired]
    history = History((SHA, *(f"{k:040x}" for k in range(1, 50))))
    print(f"(a) {len(desired)} desired objects (compiled in {compile_s:.1f}s), {len(live)} live objects; "
          f"planted {planted}", flush=True)

    detect_s, detect_cpu_s, report = best_of_cpu(repeat, lambda: detect(desired, live, inventory, history))
    counts = {c.value: n for c, n in report.counts().items() if n}
    if counts != planted:
        raise SystemExit(f"detect() found {counts}, planted {planted}: the benchmark data or detect() is wrong")
    managers = sorted({m for f in report.drifted for m in f.managers})

    by_ref = {ObjectRef.of(b): b for b in live}
    pairs = [(d, by_ref[ObjectRef.of(d)]) for d in desired if ObjectRef.of(d) in by_ref]
    picked = random.Random(seed).sample(pairs, min(sample, len(pairs)))
    t0 = time.perf_counter()
    flagged = sum(1 for d, v in picked if DeepDiff(d, v))
    base_s = time.perf_counter() - t0
    base_per_obj = base_s / len(picked)
    ours_per_obj = detect_s / len(desired)
    out = {
        "objects_desired": len(desired), "objects_live": len(live), "planted": planted, "found": counts,
        "modified_managers": managers, "repeat": repeat,
        "detect_s": round(detect_s, 4), "detect_cpu_s": round(detect_cpu_s, 4),
        "detect_objects_per_s": round(len(desired) / detect_s),
        "target_under_1s": detect_s < 1.0,
        "baseline": "deepdiff.DeepDiff(desired, live) per object pair (no field ownership)",
        "baseline_sample_pairs": len(picked), "baseline_sample_s": round(base_s, 3),
        "baseline_objects_per_s": round(len(picked) / base_s),
        "baseline_pairs_reported_different": flagged,
        "baseline_extrapolated_s": round(base_per_obj * len(desired), 2),
        "speedup_vs_baseline": round(base_per_obj / ours_per_obj, 1),
    }
    print(f"    {'':<40} {f's per {len(desired)}':>13} {'objects/s':>10}")
    print(f"    {f'intentc detect() (best of {repeat})':<40} {detect_s:>13.3f} {out['detect_objects_per_s']:>10}"
          f"   (CPU {detect_cpu_s:.3f} s)")
    print(f"    {f'DeepDiff per pair ({len(picked)}-pair sample)':<40} {out['baseline_extrapolated_s']:>13.2f} "
          f"{out['baseline_objects_per_s']:>10}")
    print(f"    ratio {out['speedup_vs_baseline']}x; {len(desired)} objects under 1 s: "
          f"{'met' if out['target_under_1s'] else 'MISSED'}; "
          f"DeepDiff flagged {flagged} of {len(picked)} pairs (defaults, status, managedFields), "
          f"detect() found {counts}", flush=True)
    return out


# --------------------------------------------------------------------------
# Part (b): `intentc drift` vs `kubectl diff --server-side` on a real API server
# --------------------------------------------------------------------------

KUBE_OBJECTS = 1000


def timed_run(cmd: list[str], env: dict[str, str], ok: tuple[int, ...]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    took = time.perf_counter() - t0
    if res.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:4])} ... exited {res.returncode}:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return took, res.returncode, res.stdout


def best_run(cmd: list[str], env: dict[str, str], ok: tuple[int, ...], repeat: int) -> tuple[float, int, str]:
    runs = [timed_run(cmd, env, ok) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def bench_kube(repeat: int, objects: int = KUBE_OBJECTS) -> dict[str, Any]:
    from benchmarks import bench_apply
    from intentc.drift.managed import observe
    from intentc.kube.client import KubeClient
    from intentc.reconcile.sync import ApplyOptions, Reconciler
    from tests.kube_env import KubeEnv, assets_dir

    assets = assets_dir()
    if assets is None:
        msg = "skipped: KUBEBUILDER_ASSETS is not set (run hack/testenv/setup)"
        print(f"(b) {msg}", flush=True)
        return {"skipped": msg}
    # bench_apply's repository is 34 setup objects + its Jobs: grown to `objects` (1,000 by default)
    tenants = min(bench_apply.TENANTS, max(1, objects // 50))
    with tempfile.TemporaryDirectory(prefix="bench-drift-kube-") as tmpdir:
        tmp = Path(tmpdir)
        intents, topology = bench_apply.write_repo(tmp / "repo", tenants, objects - 3 * tenants - 4)
        result = compile_paths([str(intents)], str(topology), bench_apply.SHA, KubeVersion(1, 37))
        rendered = result.rendered
        if rendered is None or any(d.is_error for d in result.diagnostics):   # a tenant with errors is held back
            raise SystemExit("\n".join(str(d) for d in result.diagnostics if d.is_error))
        n = len(rendered.manifests)
        write_outputs(result, tmp / "build")
        env = KubeEnv(assets, tmp / "kube").start()
        try:
            client = KubeClient.connect(str(env.kubeconfig))
            t0 = time.perf_counter()
            applied = Reconciler(client, ApplyOptions(target="bench", wait=False)).apply(rendered)
            apply_s = time.perf_counter() - t0
            if applied.exit_code != 0:
                raise SystemExit(f"the reconciler failed:\n{applied.to_json()[-2000:]}")
            print(f"(b) {n} objects applied with intentc's reconciler in {apply_s:.1f}s; "
                  f"{os.cpu_count()} CPUs", flush=True)

            penv = {**os.environ, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(env.kubeconfig),
                    "HOME": str(tmp / "home"), "INTENTC_CACHE_DIR": str(tmp / "cache")}
            cli = [sys.executable, "-m", "intentc", "drift", str(intents), "--topology", str(topology),
                   "--kubeconfig", str(env.kubeconfig), "--commit", bench_apply.SHA, "--target", "bench",
                   "--format", "json"]
            kubectl = [str(env.kubectl), "diff", "--server-side", "--field-manager", "intentc",
                       "-f", str(tmp / "build" / "manifests")]
            timed_run(cli, penv, (0,))                           # warm the parse cache
            timed_run([str(env.kubectl), "get", "namespaces"], penv, (0,))   # warm kubectl's discovery cache
            cli_s, cli_rc, cli_out = best_run(cli, penv, (0, 1), repeat)
            kubectl_s, kubectl_rc, kubectl_out = best_run(kubectl, penv, (0, 1), repeat)
            lib_s, _, (report, _) = best_of_cpu(repeat, lambda: observe(client, rendered.manifests, "bench", None))
            client.close()
        finally:
            env.stop()
    counts = json.loads(cli_out)["counts"]
    out = {
        "objects": n, "reconciler_first_apply_s": round(apply_s, 2), "repeat": repeat,
        "intentc_drift_cli_s": round(cli_s, 3), "intentc_drift_cli_exit": cli_rc, "intentc_drift_counts": counts,
        "intentc_observe_in_process_s": round(lib_s, 3),
        "observe_in_sync": not report.has_drift,
        "baseline": "kubectl diff --server-side --field-manager intentc -f DIR (same manifests)",
        "kubectl_diff_s": round(kubectl_s, 3), "kubectl_diff_exit": kubectl_rc,
        "kubectl_diff_output_bytes": len(kubectl_out),
        "speedup_cli_vs_kubectl_diff": round(kubectl_s / cli_s, 2),
        "speedup_in_process_vs_kubectl_diff": round(kubectl_s / lib_s, 2),
    }
    print(f"    {'':<52} {'s':>8} {'exit':>5}")
    print(f"    {'intentc drift (command: start-up + compile + detect)':<52} {cli_s:>8.2f} {cli_rc:>5}")
    print(f"    {'intentc observe() (in process, no compile)':<52} {lib_s:>8.2f} {'':>5}")
    print(f"    {'kubectl diff --server-side':<52} {kubectl_s:>8.2f} {kubectl_rc:>5}")
    print(f"    ratio kubectl / intentc: command {out['speedup_cli_vs_kubectl_diff']}x, "
          f"in process {out['speedup_in_process_vs_kubectl_diff']}x; intentc counts {counts}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=10000, help="desired objects for part (a)")
    ap.add_argument("--repeat", type=int, default=5, help="detect() runs, best reported")
    ap.add_argument("--baseline-sample", type=int, default=1000, help="object pairs DeepDiff is timed on")
    ap.add_argument("--kube-repeat", type=int, default=3, help="runs of each command in part (b)")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--skip-kube", action="store_true", help="part (a) only")
    ap.add_argument("--kube-objects", type=int, default=KUBE_OBJECTS, help="objects applied for part (b)")
    args = ap.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count(),
                               "detect": bench_detect(args.objects, args.repeat, args.baseline_sample, args.seed)}
    results["kube"] = {"skipped": "--skip-kube"} if args.skip_kube else bench_kube(args.kube_repeat, args.kube_objects)
    write_results("bench_drift", results)
    kube = results["kube"]
    if "skipped" not in kube and (kube["intentc_drift_cli_exit"] != 0 or not kube["observe_in_sync"]):
        # the cluster was applied from these very manifests: any drift found means the comparison is wrong
        print(f"(b) drift found right after the apply: {kube['intentc_drift_counts']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
