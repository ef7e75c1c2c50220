"""State that cannot be lost, tried as a hostile or unlucky operator would (issue 16, SECURITY.md).

`INVENTORIES` is the table of inventory ConfigMaps that parse as JSON (or
do not) but must never be acted on: each is refused with a clear message
(exit 2 from the commands), never a traceback.  The rest are cluster
faults against a real client and an in-memory API server on loopback
(`fake_api`): etcd unavailable, broken kubeconfigs, two concurrent applies
of different revisions to one target (real processes), and objects an
apply without --prune left behind, which `drift` must report.  The same
faults against a real kube-apiserver are in the `kube`-marked tests.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.reconcile.inventory import INVENTORY_GZ_KEY, INVENTORY_KEY, Inventory, inventory_ref
from intentc.reconcile.inventory_schema import INFLATE_LIMIT
from tests.adversarial.fake_api import FakeApi

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
SHA_1 = "1111111111111111111111111111111111111111"
SHA_2 = "2222222222222222222222222222222222222222"
FORMAT = "intentc.dev/inventory/v1"
runner = CliRunner()


def _doc(**over: Any) -> str:
    base: dict[str, Any] = {"format": FORMAT, "target": "default", "commit": None, "lastKnownGood": None,
                            "objects": [], "history": []}
    base.update(over)
    return json.dumps(base)


def _plain(text: str) -> dict[str, Any]:
    return {"data": {INVENTORY_KEY: text}}


def _gz(raw: bytes) -> dict[str, Any]:
    return {"binaryData": {INVENTORY_GZ_KEY: base64.b64encode(raw).decode()}}


def _bomb(size: int) -> bytes:
    """A gzip stream of `size` zero bytes (about size/1000 bytes long)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    parts = [z.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + z.flush()


ENTRY = {"group": "batch", "version": "v1", "kind": "Job", "namespace": "t", "name": "j", "step": 4,
         "specHash": "h", "commit": SHA_1, "intent": "j", "tenant": "t", "state": "applied", "desired": True}

# (case id, ConfigMap body fragment, words the error must contain)
INVENTORIES: list[tuple[str, dict[str, Any], str]] = [
    ("objects-is-a-string", _plain(_doc(objects="x")), "inventory.objects"),
    ("objects-holds-numbers", _plain(_doc(objects=[1, 2])), "inventory.objects[0]"),
    ("entry-missing-keys", _plain(_doc(objects=[{"kind": "Job"}])), "inventory.objects[0]"),
    ("entry-name-empty", _plain(_doc(objects=[{**ENTRY, "name": ""}])), "inventory.objects[0].name"),
    ("entry-step-text", _plain(_doc(objects=[{**ENTRY, "step": "four"}])), "inventory.objects[0].step"),
    ("entry-state-unknown", _plain(_doc(objects=[{**ENTRY, "state": "deleted"}])), "objects[0].state"),
    ("last-known-good-string", _plain(_doc(lastKnownGood="abc")), "inventory.lastKnownGood"),
    ("last-known-good-no-commit", _plain(_doc(lastKnownGood={"at": "x"})), "inventory.lastKnownGood"),
    ("history-string", _plain(_doc(history="x")), "inventory.history"),
    ("history-counts-text", _plain(_doc(history=[{"commit": SHA_1, "startedAt": "t", "counts": {"a": "b"}}])),
     "inventory.history[0].counts.a"),
    ("no-objects-key", _plain(json.dumps({"format": FORMAT})), "'objects' is a required property"),
    ("wrong-format", _plain(_doc(format="other/v9")), "not an intentc inventory"),
    ("not-json", _plain("{objects: x"), "not JSON"),
    ("json-array", _plain("[]"), "not an intentc inventory"),
    ("nested-too-deep", _plain("[" * 200_000 + "]" * 200_000), "nested too deeply"),
    ("data-not-text", {"data": {INVENTORY_KEY: 5}}, "has no inventory.json"),
    ("binary-not-base64", {"binaryData": {INVENTORY_GZ_KEY: "!!!"}}, "not gzipped JSON"),
    ("binary-not-text", {"binaryData": {INVENTORY_GZ_KEY: 7}}, "not base64 text"),
    ("gzip-truncated", _gz(gzip.compress(_doc().encode())[:20]), "truncated"),
    ("gzip-not-utf8", _gz(gzip.compress(b"\xff\xfe\x00")), "not UTF-8"),
    ("gzip-of-a-bad-shape", _gz(gzip.compress(_doc(objects="x").encode())), "inventory.objects"),
    ("gzip-bomb", _gz(_bomb(INFLATE_LIMIT + (1 << 20))), "inflates past the 20 MiB limit"),
]


@pytest.mark.parametrize("body,words", [c[1:] for c in INVENTORIES], ids=[c[0] for c in INVENTORIES])
def test_hostile_inventories_are_refused_with_a_reason(body: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError) as info:
        Inventory.from_configmap(body, "default")
    assert words in str(info.value)
    assert len(str(info.value)) < 400, "a short reason, not the document"


def test_a_gzip_bomb_is_not_inflated_past_the_cap() -> None:
    """256 MiB of zeros in about 250 KiB of gzip: memory stays near the 20 MiB cap."""
    body = _gz(_bomb(256 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="inflates past"):
            Inventory.from_configmap(body, "default")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * INFLATE_LIMIT, f"peak {peak:,} bytes"


def test_valid_inventories_still_read_and_adoption_round_trips() -> None:
    doc = _doc(objects=[ENTRY, {**ENTRY, "kind": "Namespace", "group": "", "version": "v1", "namespace": "",
                                "name": "t", "adopted": True}],
               lastKnownGood={"commit": SHA_1, "at": "2026-01-01T00:00:00Z"},
               history=[{"commit": SHA_1, "startedAt": "a", "finishedAt": "b", "result": "succeeded",
                         "health": "Healthy", "counts": {"create": 2}, "message": ""}])
    inv = Inventory.from_configmap(_plain(doc), "default")
    assert [e.adopted for e in inv.entries] == [False, True] or [e.adopted for e in inv.entries] == [True, False]
    again = Inventory.from_configmap(inv.configmap(), "default")
    assert again == inv and again.last_known_good == SHA_1


# --------------------------------------------------------------------------
# cluster faults through the real client and CLI
# --------------------------------------------------------------------------

@pytest.fixture
def api() -> Iterator[FakeApi]:
    server = FakeApi().start()
    yield server
    server.stop()


def _repo(tmp: Path, jobs: list[str], name: str = "repo") -> Path:
    d = tmp / name
    d.mkdir()
    text = "tenant team-s {\n  tier: gold\n}\n" + "".join(
        f'intent {j} {{\n  trigger: on push\n  action: batch image "r/a:1"\n  context: tenant team-s\n'
        f"  constraints: cpu 1\n}}\n" for j in jobs)
    (d / "repo.intent").write_text(text)
    return d


def _cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


def _apply(repo: Path, kubeconfig: Path, sha: str, *flags: str) -> tuple[int, str]:
    return _cli("apply", str(repo), "-t", str(SMALL), "--kubeconfig", str(kubeconfig), "--commit", sha,
                "--no-wait", *flags)


def _drift(repo: Path, kubeconfig: Path, sha: str) -> tuple[int, str]:
    return _cli("drift", str(repo), "-t", str(SMALL), "--kubeconfig", str(kubeconfig), "--commit", sha,
                "-o", "json")


@pytest.mark.parametrize("body,words", [c[1:] for c in INVENTORIES if c[0] != "gzip-bomb"],
                         ids=[c[0] for c in INVENTORIES if c[0] != "gzip-bomb"])
def test_apply_and_drift_exit_2_on_a_hostile_inventory(tmp_path: Path, api: FakeApi, body: dict[str, Any],
                                                       words: str) -> None:
    kc = api.kubeconfig(tmp_path)
    repo = _repo(tmp_path, ["a"])
    ref = inventory_ref("default")
    api.put_raw(f"/api/v1/namespaces/{ref.namespace}/configmaps/{ref.name}",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ref.name, "namespace": ref.namespace},
                 **body})
    for code, out in (_apply(repo, kc, SHA_1), _drift(repo, kc, SHA_1)):
        assert code == 2, out
        assert "unreadable" in out and words in out, out
        assert "Traceback" not in out


def test_etcd_unavailable_is_a_clear_exit_2(tmp_path: Path, api: FakeApi) -> None:
    kc = api.kubeconfig(tmp_path)
    repo = _repo(tmp_path, ["a", "b"])
    api.etcd_down = True
    for code, out in (_apply(repo, kc, SHA_1), _drift(repo, kc, SHA_1)):
        assert code == 2, out
        assert "reports its storage (etcd) unavailable" in out and "Traceback" not in out, out


def test_etcd_lost_midway_leaves_a_clear_exit_2_and_a_rerun_converges(tmp_path: Path, api: FakeApi) -> None:
    kc = api.kubeconfig(tmp_path)
    repo = _repo(tmp_path, [f"j{i}" for i in range(6)])
    original = api.handle
    seen = {"patches": 0}

    def flaky(method: str, path: str, query: str, body: Any) -> tuple[int, Any]:
        if method == "PATCH" and "/jobs/" in path:
            seen["patches"] += 1
            if seen["patches"] == 3:
                api.etcd_down = True
        elif "/leases/" in path and api.etcd_down:
            api.etcd_down = False       # back by the time the aborted apply lets go of its lock
        return original(method, path, query, body)
    api.handle = flaky  # type: ignore[method-assign]
    code, out = _apply(repo, kc, SHA_1)
    assert code == 2 and "cannot serve requests" in out and "Traceback" not in out, out
    assert not api.etcd_down
    lease = api.objects["/apis/coordination.k8s.io/v1/namespaces/intentc-system/leases/intentc-apply-default"]
    assert lease["spec"]["holderIdentity"] is None, "the aborted apply released its lock"
    code, out = _apply(repo, kc, SHA_1)
    assert code == 0, out
    inv = Inventory.from_configmap(api.objects[_inventory_path()], "default")
    assert {e.ref.name for e in inv.entries if e.ref.kind == "Job"} == {f"j{i}" for i in range(6)}


def _inventory_path(target: str = "default") -> str:
    ref = inventory_ref(target)
    return f"/api/v1/namespaces/{ref.namespace}/configmaps/{ref.name}"


KUBECONFIGS = {
    "not-yaml": "token: SECRET-TOKEN-1234\nnot: [yaml",
    "a-list": "- SECRET-TOKEN-1234\n- b\n",
    "binary": "\x00\x01SECRET-TOKEN-1234\xff",
    "no-current-context": "apiVersion: v1\nkind: Config\n",
    "clusters-a-string": "apiVersion: v1\nkind: Config\nclusters: SECRET-TOKEN-1234\ncurrent-context: x\n"
                         "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
    "server-not-a-url": "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'ht!tp://::'}\n"
                        "users:\n- name: u\n  user: {token: SECRET-TOKEN-1234}\n"
                        "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    "ca-not-base64": "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
                     "    certificate-authority-data: '!!!notbase64'\nusers:\n- name: u\n  user: {token: SECRET-TOKEN-1234}\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
}


@pytest.mark.parametrize("text", list(KUBECONFIGS.values()), ids=list(KUBECONFIGS))
def test_broken_kubeconfigs_exit_2_without_traceback_or_secrets(tmp_path: Path, text: str) -> None:
    kc = tmp_path / "kubeconfig"
    kc.write_bytes(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
    repo = _repo(tmp_path, ["a"])
    for code, out in (_apply(repo, kc, SHA_1), _drift(repo, kc, SHA_1)):
        assert code == 2, out
        assert "kubeconfig" in out and "Traceback" not in out, out
        assert "SECRET-TOKEN" not in out, out


def test_drift_reports_what_an_apply_without_prune_left_behind(tmp_path: Path, api: FakeApi) -> None:
    kc = api.kubeconfig(tmp_path)
    first = _repo(tmp_path, ["keep", "gone-1", "gone-2"], "first")
    second = _repo(tmp_path, ["keep"], "second")
    assert _apply(first, kc, SHA_1)[0] == 0
    code, out = _apply(second, kc, SHA_2)           # no --prune: gone-1, gone-2 keep running
    assert code == 0, out
    code, out = _drift(second, kc, SHA_2)
    assert code == 1, out
    report = json.loads(out[out.find("{"):])
    orphans = {f["object"]["name"] for f in report["findings"] if f["class"] == "orphan"}
    assert {"gone-1", "gone-2"} <= orphans, report
    assert _apply(second, kc, SHA_2, "--prune")[0] == 0
    code, out = _drift(second, kc, SHA_2)
    assert code == 0, out


def _spawn(repo: Path, kubeconfig: Path, sha: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "intentc", "apply", str(repo), "-t", str(SMALL), "--kubeconfig", str(kubeconfig),
         "--commit", sha, "--no-wait", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
        env={**os.environ, "INTENTC_CACHE_DIR": ""})


def test_concurrent_applies_of_two_revisions_serialise(tmp_path: Path, api: FakeApi) -> None:
    """Two processes apply different revisions to one target at once.  Without a
    lock each writes the inventory from its own reading and the last writer
    drops what the other applied; with the Lease every Job that exists is on
    record and both applies are in the history."""
    kc = api.kubeconfig(tmp_path)
    one = _repo(tmp_path, [f"a{i}" for i in range(25)], "one")
    two = _repo(tmp_path, [f"b{i}" for i in range(25)], "two")
    procs = [_spawn(one, kc, SHA_1), _spawn(two, kc, SHA_2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    inv = Inventory.from_configmap(api.objects[_inventory_path()], "default")
    jobs = {p.rsplit("/", 1)[1] for p in api.objects if "/jobs/" in p}
    assert len(jobs) == 50
    assert {e.ref.name for e in inv.entries if e.ref.kind == "Job"} == jobs, "an applied Job is untracked"
    assert sorted(r.commit for r in inv.history) == [SHA_1, SHA_2], "one apply's record was overwritten"
    lease = api.objects["/apis/coordination.k8s.io/v1/namespaces/intentc-system/leases/intentc-apply-default"]
    assert lease["spec"]["holderIdentity"] is None, "the lock is released"


def test_a_dead_holders_lease_expires_and_a_live_one_is_waited_for(api: FakeApi, tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from intentc.kube.client import KubeClient
    from intentc.reconcile.lock import LEASE_SECONDS, ApplyLock, LockBusy

    client = KubeClient.connect(str(api.kubeconfig(tmp_path)))
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    api.put_raw("/api/v1/namespaces/intentc-system", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "intentc-system"}})
    dead = ApplyLock(client, "t", identity="dead", now=lambda: t0)
    dead.acquire()
    dead._stop.set()                  # the holder dies without releasing: no renewals, no release
    waiting = ApplyLock(client, "t", wait=0, identity="next", now=lambda: t0 + timedelta(seconds=LEASE_SECONDS - 1))
    with pytest.raises(LockBusy, match="being applied by dead"):
        waiting.acquire()
    later = ApplyLock(client, "t", wait=0, identity="next", now=lambda: t0 + timedelta(seconds=LEASE_SECONDS + 1))
    later.acquire()
    lease = api.objects["/apis/coordination.k8s.io/v1/namespaces/intentc-system/leases/intentc-apply-t"]
    assert lease["spec"]["holderIdentity"] == "next"
    later.release()
    assert api.objects["/apis/coordination.k8s.io/v1/namespaces/intentc-system/leases/intentc-apply-t"][
        "spec"]["holderIdentity"] is None
