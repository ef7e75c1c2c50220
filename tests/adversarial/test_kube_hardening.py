"""Issue 16 against a real kube-apiserver + etcd (`kube`-marked; SECURITY.md).

The in-memory server of `fake_api` shows the logic; these show the same
promises hold where it matters: real processes racing on a real Lease,
prune on real namespaces, etcd going away under a running apply.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intentc.kube.client import KubeClient
from intentc.reconcile.inventory import Entry, Inventory, inventory_ref
from intentc.objectmeta import MANAGED_BY, MANAGED_BY_LABEL, ObjectRef
from tests.kube_env import KubeEnv

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
SHA_1 = "1111111111111111111111111111111111111111"
SHA_2 = "2222222222222222222222222222222222222222"
_ids = itertools.count(1)


def _repo(tmp: Path, name: str, tenant: str, jobs: list[str]) -> Path:
    d = tmp / name
    d.mkdir()
    text = f"tenant {tenant} {{\n  tier: gold\n}}\n" + "".join(
        f'intent {j} {{\n  trigger: on push\n  action: batch image "r/a:1"\n  context: tenant {tenant}\n'
        f"  constraints: cpu 1\n}}\n" for j in jobs)
    (d / "repo.intent").write_text(text)
    return d


def _apply(env: KubeEnv, repo: Path, sha: str, target: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "intentc", "apply", str(repo), "-t", str(SMALL), "--kubeconfig", str(env.kubeconfig),
         "--commit", sha, "--target", target, "--no-wait", *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "INTENTC_CACHE_DIR": ""})


def test_concurrent_applies_serialise_on_a_real_lease(kube_env: KubeEnv, tmp_path: Path) -> None:
    n = next(_ids)
    tenant, target = f"race{n}", f"race{n}"
    one = _repo(tmp_path, "one", tenant, [f"a{i}" for i in range(25)])
    two = _repo(tmp_path, "two", tenant, [f"b{i}" for i in range(25)])
    args = [[sys.executable, "-m", "intentc", "apply", str(r), "-t", str(SMALL), "--kubeconfig",
             str(kube_env.kubeconfig), "--commit", sha, "--target", target, "--no-wait"]
            for r, sha in ((one, SHA_1), (two, SHA_2))]
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                              env={**os.environ, "INTENTC_CACHE_DIR": ""}) for a in args]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    c = KubeClient.connect(str(kube_env.kubeconfig))
    jobs = {j["metadata"]["name"] for j in c.list("batch/v1", "Job", tenant)}
    inv = Inventory.from_configmap(c.get(inventory_ref(target)), target)
    assert len(jobs) == 50
    assert {e.ref.name for e in inv.entries if e.ref.kind == "Job"} == jobs, "an applied Job is untracked"
    assert sorted(r.commit for r in inv.history) == [SHA_1, SHA_2]
    lease = c.get(ObjectRef("coordination.k8s.io/v1", "Lease", "intentc-system", f"intentc-apply-{target}"))
    assert lease is not None and not lease["spec"].get("holderIdentity")


def test_prune_never_deletes_an_adopted_or_reserved_namespace(kube_env: KubeEnv, tmp_path: Path) -> None:
    n = next(_ids)
    adopted, target = f"adopt{n}", f"adopt{n}"
    kubectl = [str(kube_env.kubectl), "--kubeconfig", str(kube_env.kubeconfig)]
    subprocess.run([*kubectl, "create", "namespace", adopted], check=True, capture_output=True)
    repo = _repo(tmp_path, "one", adopted, ["job"])
    res = _apply(kube_env, repo, SHA_1, target)
    assert res.returncode == 0, res.stdout + res.stderr
    c = KubeClient.connect(str(kube_env.kubeconfig))
    inv = Inventory.from_configmap(c.get(inventory_ref(target)), target)
    ns_ref = ObjectRef("v1", "Namespace", "", adopted)
    entry = inv.entry(ns_ref)
    assert entry is not None and entry.adopted
    # An older intentc took kube-public over: on record, labelled as ours.
    public = ObjectRef("v1", "Namespace", "", "kube-public")
    c.request("PATCH", "/api/v1/namespaces/kube-public", (),
              {"metadata": {"labels": {MANAGED_BY_LABEL: MANAGED_BY}}}, "application/merge-patch+json")
    inv = inv.with_entries([Entry(public, 0, "h", SHA_1, None, "kube-public")])
    c.apply(inv.configmap(), force=True)
    other = _repo(tmp_path, "two", f"other{n}", ["x"])
    res = _apply(kube_env, other, SHA_2, target, "--prune", "-o", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "existed before intentc managed it" in res.stdout and "reserved namespace" in res.stdout
    time.sleep(1)
    for ns in (adopted, "kube-public"):
        live = c.get(ObjectRef("v1", "Namespace", "", ns))
        assert live is not None and not live.get("metadata", {}).get("deletionTimestamp"), ns
    assert c.get(ObjectRef("batch/v1", "Job", adopted, "job")) is None, "the adopted namespace's Job was pruned"


def test_etcd_stopped_under_the_api_server_is_a_clear_exit_2(kube_env: KubeEnv, tmp_path: Path) -> None:
    """etcd goes away; the API server stays up.  apply and drift end with exit 2
    and a reason, no traceback; after etcd is back the same apply succeeds."""
    from tests.kube_env import _stop

    n = next(_ids)
    repo = _repo(tmp_path, "one", f"etcd{n}", ["job"])
    _stop(kube_env.etcd)
    try:
        res = _apply(kube_env, repo, SHA_1, f"etcd{n}")
        drift = subprocess.run(
            [sys.executable, "-m", "intentc", "drift", str(repo), "-t", str(SMALL), "--kubeconfig",
             str(kube_env.kubeconfig), "--commit", SHA_1, "--target", f"etcd{n}"],
            capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "INTENTC_CACHE_DIR": ""})
    finally:
        kube_env.start_etcd()
        kube_env.wait_ready()
    for proc in (res, drift):
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert "etcd" in out and "Traceback" not in out, out
    res = _apply(kube_env, repo, SHA_1, f"etcd{n}")
    assert res.returncode == 0, res.stdout + res.stderr
