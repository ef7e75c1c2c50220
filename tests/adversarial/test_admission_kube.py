"""examples/deploy/admission on the test bed's 1.37 API server (SECURITY.md, "What a tenant cannot do").

intentc applies a tenant's objects as its own ServiceAccount (the real `intentc
apply`, with a token from the TokenRequest API); then a member of the tenant's group
— who holds `edit` in the namespace, so RBAC alone would let them — tries to
change those objects with `kubectl edit`, `patch`, `label` and `delete`, and is
refused with intentc's message, while their own ConfigMap stays theirs to change.
The daemon's own policy is held to its table too: Events about cluster-scoped
objects in `default` pass (they were refused once), a RoleBinding in kube-system or
to a system: group does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import _control_plane
from tests.kube_env import KubeEnv
from tests.kube_support import wait_for
from tests.test_drift_kube import DriftRepo

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "examples" / "deploy"
SA = "system:serviceaccount:intentc-system:intentc"
GROUP = "adm-devs"
MESSAGE = "change its intent in git, not the live object"


@pytest.fixture(scope="module")
def kube_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEnv]:
    """The API server and the controller-manager: the built-in `edit` role a tenant's group
    is bound to is an aggregated ClusterRole, filled in by the controller-manager."""
    yield from _control_plane(tmp_path_factory, ("controller-manager",))


def as_user(env: KubeEnv, user: str, *args: str, groups: tuple[str, ...] = (GROUP,),
            editor: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl impersonating `user` in `groups` (the test bed's admin may impersonate)."""
    cmd = [str(env.kubectl), f"--kubeconfig={env.kubeconfig}", f"--as={user}",
           *(f"--as-group={g}" for g in groups), *args]
    extra = {"KUBE_EDITOR": editor} if editor else {}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, **extra})


def intentc_apply(repo: DriftRepo, kubeconfig: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "intentc", "apply", "intents", "-t", "clusters/small.yaml",
                          "--target", repo.target, "--no-wait", "--kubeconfig", str(kubeconfig)],
                         cwd=repo.dir, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr


def test_tenants_cannot_edit_what_intentc_manages(kube_env: KubeEnv, tmp_path: Path) -> None:
    env = kube_env
    env.kubectl_run("apply", "-k", str(DEPLOY))
    env.kubectl_run("apply", "-k", str(DEPLOY / "admission"))
    sa_token = env.kubectl_run("create", "token", "intentc", "-n", "intentc-system").stdout.strip()
    kubeconfig = tmp_path / "intentc-sa.kubeconfig"
    kubeconfig.write_text(env.kubeconfig_text().replace(env.token, sa_token))

    repo = DriftRepo(tmp_path, env)
    repo.commit("the tenant's group", tenant_extra=f'\n  group: "{GROUP}"')
    ns = repo.tenant
    intentc_apply(repo, kubeconfig)            # creates, as intentc's ServiceAccount
    binding = env.kubectl_json("get", "rolebinding", "intentc-tenant-edit", "-n", ns)
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]
    alice = "alice@example.com"
    # RBAC lets the tenant's group edit here: a refusal below is the admission policy's
    wait_for(lambda: as_user(env, alice, "auth", "can-i", "patch", "deployments.apps", "-n", ns).stdout.strip()
             == "yes", 60, "the edit role, aggregated")

    # the policy takes effect once the API server has loaded it
    deadline = time.monotonic() + 60
    while True:
        res = as_user(env, alice, "label", "deployment", "web", "-n", ns, "probe=1")
        if res.returncode != 0 or time.monotonic() > deadline:
            break
        as_user(env, SA, "label", "deployment", "web", "-n", ns, "probe-", groups=())
        time.sleep(0.5)
    assert res.returncode != 0 and MESSAGE in res.stderr, res.stderr
    assert f"intentc manages deployments {ns}/web" in res.stderr

    refused = {
        "kubectl edit": as_user(env, alice, "edit", "deployment", "web", "-n", ns,
                                editor="sed -i -e 's/replicas: 2/replicas: 5/'"),
        "patch": as_user(env, alice, "patch", "job", "prep", "-n", ns, "--type=merge",
                         "-p", '{"metadata": {"annotations": {"mine": "yes"}}}'),
        "delete": as_user(env, alice, "delete", "service", "web", "-n", ns, "--wait=false"),
        "drop the label": as_user(env, alice, "label", "deployment", "web", "-n", ns,
                                  "app.kubernetes.io/managed-by-"),
    }
    wrong = {what: (r.returncode, r.stderr.strip()) for what, r in refused.items()
             if r.returncode == 0 or MESSAGE not in r.stderr}
    assert not wrong, wrong
    live = env.kubectl_json("get", "deployment", "web", "-n", ns)
    assert live["spec"]["replicas"] == 2 and live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "intentc"
    assert env.kubectl_run("get", "service", "web", "-n", ns, check=False).returncode == 0

    # a ServiceAccount of the tenant's namespace is not exempt (`edit` may impersonate it)
    env.kubectl_run("create", "rolebinding", "default-edit", "--clusterrole=edit",
                    f"--serviceaccount={ns}:default", "-n", ns)
    res = as_user(env, f"system:serviceaccount:{ns}:default", "label", "job", "prep", "-n", ns, "x=1", groups=())
    assert res.returncode != 0 and MESSAGE in res.stderr, res.stderr

    # what intentc does not manage stays the tenant's
    own = [as_user(env, alice, "create", "configmap", "notes", "-n", ns, "--from-literal=a=1"),
           as_user(env, alice, "patch", "configmap", "notes", "-n", ns, "--type=merge", "-p", '{"data": {"a": "2"}}'),
           as_user(env, alice, "label", "configmap", "notes", "-n", ns, "team=x"),
           as_user(env, alice, "delete", "configmap", "notes", "-n", ns)]
    assert all(r.returncode == 0 for r in own), [r.stderr for r in own]
    # ... but adding intentc's label to one's own object is refused (it would pass for managed)
    assert as_user(env, alice, "create", "service", "clusterip", "mine", "-n", ns, "--tcp=80:80").returncode == 0
    res = as_user(env, alice, "label", "service", "mine", "-n", ns, "app.kubernetes.io/managed-by=intentc")
    assert res.returncode != 0 and MESSAGE in res.stderr, res.stderr

    # intentc's ServiceAccount is allowed: an update by hand, and a real apply of a new commit
    res = as_user(env, SA, "annotate", "job", "prep", "-n", ns, "checked=yes", groups=())
    assert res.returncode == 0, res.stderr
    repo.commit("new image", web_image="nginx:1.1")
    intentc_apply(repo, kubeconfig)
    image = env.kubectl_json("get", "deployment", "web", "-n", ns)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "nginx:1.1"


def test_the_daemons_own_policy(kube_env: KubeEnv) -> None:
    """policy.yaml for intentc's ServiceAccount: RBAC allows each of these cluster-wide."""
    env = kube_env
    env.kubectl_run("apply", "-k", str(DEPLOY))
    env.kubectl_run("apply", "-k", str(DEPLOY / "admission"))
    env.kubectl_run("create", "namespace", "adm-tenant", check=False)

    def create(doc: dict[str, object]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(env.kubectl), f"--kubeconfig={env.kubeconfig}", f"--as={SA}", "create", "-f", "-"],
                              input=json.dumps(doc), capture_output=True, text=True, timeout=60)

    def binding(ns: str, group: str, name: str) -> dict[str, object]:
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}

    node_event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "gpu-1.obs", "namespace": "default"},
                  "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"},
                  "reason": "GPUObservation", "message": "tainted", "type": "Warning"}
    deadline = time.monotonic() + 60
    while True:        # wait for the policy: the reserved-namespace refusal is its first effect
        res = create(binding("kube-system", "devs", "x"))
        if res.returncode != 0 or time.monotonic() > deadline:
            break
        env.kubectl_run("delete", "rolebinding", "x", "-n", "kube-system")
        time.sleep(0.5)
    assert "intentc may not write in a reserved namespace" in res.stderr, res.stderr
    res = create(binding("adm-tenant", "system:authenticated", "everyone"))
    assert "intentc may not bind a role to a Kubernetes system group" in res.stderr, res.stderr
    assert create(binding("adm-tenant", "adm-devs", "devs")).returncode == 0
    res = create(node_event)       # an Event about a Node lives in default: allowed
    assert res.returncode == 0, res.stderr
    res = create({**node_event, "metadata": {"name": "dns.obs", "namespace": "kube-system"},
                  "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "dns", "namespace": "kube-system"}})
    assert "reserved namespace" in res.stderr, res.stderr
