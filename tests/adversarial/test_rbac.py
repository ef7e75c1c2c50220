"""Least privilege of examples/deploy, derived from what intentc renders (issue 16, SECURITY.md).

The daemon may touch exactly: every kind the renderer can emit (for every
Kubernetes version it renders for), the `bind` on the one role tenant
RoleBindings hand out, Events, the kinds the namespace-prune check lists,
and — in intentc-system only — its inventories and its apply lock.  A rule
missing (cronjobs were, once) or one too many (a cluster-wide Secret list
was) fails `test_role_grants_exactly_what_intentc_needs`; the `kube` test
asks a real API server with `kubectl auth can-i` as the ServiceAccount.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from intentc.pipeline import compile_paths
from intentc.render.targets import TARGETS
from intentc.kube.resources import KNOWN
from intentc.reconcile.sync import NAMESPACE_CONTENT
from intentc.render.capabilities import KubeVersion
from intentc.render.tenants import TENANT_CLUSTER_ROLE
from tests.kube_env import KubeEnv

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "examples" / "deploy"
SMALL = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
SA = "system:serviceaccount:intentc-system:intentc"
WRITE = ("get", "list", "watch", "create", "patch", "delete")
# Every action kind and every trigger, a group, a quota, an SLA class: all the renderer can emit.
EVERYTHING = """
tenant team-a {
  tier: gold
  group: "a-devs"
  quota: gpus 32
}
intent b { trigger: on push
  action: batch image "r/b:1"
  context: tenant team-a
  constraints: gpus 1, sla P1 }
intent t { trigger: after b
  action: training image "r/t:1"
  context: tenant team-a
  constraints: gpus 16 within rack }
intent i { trigger: schedule "0 2 * * *"
  action: inference model "m" image "r/i:1"
  context: tenant team-a
  constraints: gpus 1 }
intent m { trigger: manual
  action: batch image "r/m:1"
  context: tenant team-a }
intent s { trigger: on push
  action: serve model "m" image "r/s:1" replicas 2 port 80 {
    throughput_mode: burst
  }
  context: tenant team-a, tags [stateful, pci-dss-compliant]
  constraints: gpus 2 }
"""


# An organisation rule the cluster can enforce: its ValidatingAdmissionPolicy and Binding (docs/rules.md).
RULE = """apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: images}
spec:
  rules:
    - {name: no-latest-images, expression: '!intent.image.endsWith(":latest")', message: pinned images}
"""


def _rendered_kinds(tmp: Path) -> set[tuple[str, str]]:
    (tmp / "all.intent").write_text(EVERYTHING)
    (tmp / "policies").mkdir(exist_ok=True)
    (tmp / "policies" / "images.yaml").write_text(RULE)
    kinds = set()
    for minor in (33, 37):            # the supported range's ends
        for target in sorted(TARGETS):    # every render target
            if target == "dra" and minor < 34:
                continue
            result = compile_paths([str(tmp / "all.intent")], str(SMALL), "a" * 40, KubeVersion(1, minor), target)
            assert result.ok, result.diagnostics
            kinds |= {(m.ref.api_version, m.ref.kind) for m in result.rendered.manifests}
    return kinds


def _resource(api_version: str, kind: str) -> tuple[str, str]:
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return group, KNOWN[(api_version, kind)].plural


def _docs() -> list[dict[str, Any]]:
    files = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    return [d for f in files for d in yaml.safe_load_all((DEPLOY / f).read_text()) if d]


def grants(doc: dict[str, Any]) -> Iterator[tuple[str, str, str, str]]:
    for rule in doc["rules"]:
        for group in rule.get("apiGroups", []):
            for res in rule.get("resources", []):
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or ["*"]:
                        yield group, res, verb, name


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}


Grant = tuple[str, str, str, str]


def needed_grants(tmp: Path) -> tuple[set[Grant], set[Grant]]:
    """What the daemon needs, derived from the renderer: (cluster-wide, in intentc-system).
    The Helm chart's roles are checked against the same sets (tests/test_helm_chart.py)."""
    kinds = _rendered_kinds(tmp)
    assert ("batch/v1", "CronJob") in kinds
    cluster = {(g, r, v, "*") for g, r in {_resource(*k) for k in kinds} for v in WRITE}
    # The Intent CRD is never deleted (that would delete every Intent object with it).
    cluster.discard(("apiextensions.k8s.io", "customresourcedefinitions", "delete", "*"))
    cluster |= {("rbac.authorization.k8s.io", "clusterroles", "bind", TENANT_CLUSTER_ROLE),
                ("", "events", "create", "*"), ("", "events", "patch", "*")}
    cluster |= {(*_resource(*k), "list", "*") for k in NAMESPACE_CONTENT}
    # The daemon's own reactors: the Intent mirror (daemon/mirror.py) and the GPU
    # failure fallback (daemon/failures.py: pods watched, nodes tainted).
    cluster |= {("intentc.dev", "intents", v, "*") for v in WRITE} | {("intentc.dev", "intents/status", "patch", "*")}
    cluster |= {("", "nodes", v, "*") for v in ("get", "list", "watch", "patch")} | {("", "pods", "watch", "*")}
    # The live forecast (daemon/forecast_pass.py): Kueue's admission, from the Workloads.
    cluster |= {("kueue.x-k8s.io", "workloads", v, "*") for v in ("get", "list", "watch")}
    # /metrics over HTTPS (daemon/metrics_auth.py): who holds a scraper's token, may it get /metrics.
    cluster |= {("authentication.k8s.io", "tokenreviews", "create", "*"),
                ("authorization.k8s.io", "subjectaccessreviews", "create", "*")}
    inventory = {("", "configmaps", v, "*") for v in ("get", "list", "watch", "create", "patch")}
    inventory |= {("coordination.k8s.io", "leases", v, "*") for v in ("get", "create", "update")}
    return cluster, inventory


def test_role_grants_exactly_what_intentc_needs(tmp_path: Path) -> None:
    cluster, inventory = needed_grants(tmp_path)
    docs = _docs()
    (cluster_role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "intentc-daemon"]
    (role,) = [d for d in docs if d["kind"] == "Role"]
    assert set(grants(cluster_role)) == cluster
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"} == {"intentc-daemon", READER}
    assert role["metadata"]["namespace"] == "intentc-system"
    assert set(grants(role)) == inventory


READER = "intentc-metrics-reader"
READER_RULES = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_metrics_reader_grants_get_on_metrics_only() -> None:
    """What a scraper is bound to: the non-resource URL the daemon's SubjectAccessReview asks about, no more."""
    (reader,) = [d for d in _docs() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == READER]
    assert reader["rules"] == READER_RULES


def test_no_wildcards_secrets_or_escalation() -> None:
    for doc in _docs():
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        for g, r, v, _ in grants(doc):
            assert "*" not in (g, r, v)
            assert r != "secrets", "a list or get of Secrets returns their data"
            assert v not in ("escalate", "impersonate")
    bindings = [d for d in _docs() if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert all(s == {"kind": "ServiceAccount", "name": "intentc", "namespace": "intentc-system"}
               for b in bindings for s in b["subjects"])


def test_probes_bind_explicitly() -> None:
    (dep,) = [d for d in _docs() if d["kind"] == "Deployment"]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--listen=:9090" in args, "the pod must say it listens beyond loopback for the kubelet"


def daemon_accepts(args: list[str]) -> dict[str, Any]:
    """Parse `args` as the image's entrypoint (`intentc daemon`) does, without running the daemon."""
    import typer

    from intentc.cli import app
    command = typer.main.get_command(app).commands["daemon"]     # type: ignore[attr-defined]
    return dict(command.make_context("daemon", list(args)).params)


def test_the_daemon_accepts_the_deployment_arguments() -> None:
    """The image's entrypoint is `intentc daemon`: the Deployment passes its options only
    (a leading `daemon` was once there: `intentc daemon daemon` exits with a usage error)."""
    (dep,) = [d for d in _docs() if d["kind"] == "Deployment"]
    params = daemon_accepts(dep["spec"]["template"]["spec"]["containers"][0]["args"])
    assert params["listen"] == ":9090" and params["leader_elect"] is True and params["target"] == "prod"


RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]}}


def unwritable(pod_spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Where the daemon in this pod writes but no writable emptyDir is mounted (its root
    filesystem is read-only): the git mirror and, while it is loaded, the generated metrics
    certificate under --workdir; the parse cache and lark's grammar cache under
    XDG_CACHE_HOME or HOME; temporary files.  Computed with intentc's own rules."""
    import os
    from intentc.frontend.cache import default_cache_dir

    (container,) = pod_spec["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    for name in ("HOME", "XDG_CACHE_HOME", "INTENTC_CACHE_DIR", "TMPDIR"):
        if name in env:
            monkeypatch.setenv(name, env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    params = daemon_accepts(container["args"])
    cache_root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    writes = {"--workdir": str(params["workdir"]), "parse cache": default_cache_dir() or "",
              "grammar cache": os.path.join(cache_root, "intentc"), "temporary files": env.get("TMPDIR", "/tmp")}
    empty = {v["name"] for v in pod_spec["volumes"] if "emptyDir" in v}
    mounts = [m["mountPath"].rstrip("/") + "/" for m in container["volumeMounts"]
              if m["name"] in empty and not m.get("readOnly")]
    return [f"{what}: {path}" for what, path in writes.items()
            if path and not any((path.rstrip("/") + "/").startswith(m) for m in mounts)]


def test_the_deployment_is_restricted_and_mounts_what_the_daemon_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    (dep,) = [d for d in _docs() if d["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert {k: container["securityContext"].get(k) for k in RESTRICTED_CONTAINER} == RESTRICTED_CONTAINER
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not unwritable(pod, monkeypatch)
    # the check bites: without the work volume the mirror and the caches have nowhere to go
    bare = {**pod, "containers": [{**container, "volumeMounts": [m for m in container["volumeMounts"]
                                                                 if m["name"] != "work"]}]}
    assert len(unwritable(bare, monkeypatch)) == 3


# (verb, resource, namespace or "", allowed?)
CAN_I = [
    ("create", "cronjobs.batch", "team-x", True),
    ("create", "jobs.batch", "team-x", True),
    ("patch", "deployments.apps", "team-x", True),
    ("delete", "namespaces", "", True),
    ("create", "rolebindings.rbac.authorization.k8s.io", "team-x", True),
    ("bind", "clusterroles.rbac.authorization.k8s.io/edit", "", True),
    ("create", "leases.coordination.k8s.io", "intentc-system", True),
    ("update", "leases.coordination.k8s.io", "intentc-system", True),
    ("patch", "configmaps", "intentc-system", True),
    ("list", "secrets", "", False),
    ("get", "secrets", "kube-system", False),
    ("create", "configmaps", "default", False),
    ("create", "leases.coordination.k8s.io", "default", False),
    ("bind", "clusterroles.rbac.authorization.k8s.io/admin", "", False),
    ("bind", "clusterroles.rbac.authorization.k8s.io/cluster-admin", "", False),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", False),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", "", False),
    ("create", "pods", "team-x", False),
    ("impersonate", "users", "", False),
    ("patch", "nodes", "", True),
    ("watch", "pods", "", True),
    ("delete", "nodes", "", False),
    ("create", "nodes", "", False),
    ("patch", "intents.intentc.dev", "team-x", True),
    ("patch", "intents.intentc.dev --subresource=status", "team-x", True),
    ("update", "intents.intentc.dev --subresource=status", "team-x", False),
    ("create", "tokenreviews.authentication.k8s.io", "", True),
    ("create", "subjectaccessreviews.authorization.k8s.io", "", True),
    ("get", "tokenreviews.authentication.k8s.io", "", False),
    ("create", "localsubjectaccessreviews.authorization.k8s.io", "team-x", False),
]


@pytest.mark.kube
def test_kubectl_apply_k_and_can_i_as_the_service_account(kube_env: KubeEnv) -> None:
    kubectl = [str(kube_env.kubectl), "--kubeconfig", str(kube_env.kubeconfig)]
    res = subprocess.run([*kubectl, "apply", "-k", str(DEPLOY)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    # the Intent CRD, as `intentc apply` installs it: kubectl resolves `intents` through discovery
    from intentc.render.crd import intent_crd
    from intentc.render.output import to_yaml
    crd = subprocess.run([*kubectl, "apply", "--server-side", "-f", "-"], input=to_yaml(intent_crd(KubeVersion(1, 37))),
                         capture_output=True, text=True, timeout=120)
    assert crd.returncode == 0, crd.stderr
    subprocess.run([*kubectl, "wait", "--for=condition=established", "--timeout=60s", "crd/intents.intentc.dev"],
                   capture_output=True, text=True, timeout=120)
    wrong = []
    for verb, resource, ns, allowed in CAN_I:
        cmd = [*kubectl, "auth", "can-i", verb, *resource.split(), f"--as={SA}"] + (["-n", ns] if ns else [])
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        out = done.stdout.strip()
        if out != ("yes" if allowed else "no"):
            wrong.append(f"{verb} {resource} {ns or '(cluster)'}: {out!r} {done.stderr.strip()}")
    assert not wrong, wrong


def test_dockerfile_runs_the_daemon_as_non_root_from_the_wheel(tmp_path: Path) -> None:
    """No Docker daemon here: the build stage is replayed (exactly the files it COPYs
    build the wheel), and the runtime stage is read for what it promises."""
    import shutil
    import sys
    import zipfile

    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.strip() and ln[0] != "#"]
    copies = [ln.split()[1] for ln in lines if ln.startswith("COPY ") and "--from" not in ln]
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    for src in (s for c in copies for s in ([c] if c != "pyproject.toml" else [c, "README.md"])):
        (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, ctx / src)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "--wheel-dir", str(tmp_path / "wheels"), str(ctx)], check=True, capture_output=True)
    wheel = next((tmp_path / "wheels").glob("intentc-*.whl"))
    assert any(n.endswith("intent.lark") for n in zipfile.ZipFile(wheel).namelist())
    runtime = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")):]
    user = [ln for ln in runtime if ln.startswith("USER ")]
    assert user and user[-1].split()[1].split(":")[0] not in ("0", "root")
    assert runtime[-2:] == ['ENTRYPOINT ["intentc", "daemon"]', 'CMD ["--help"]'] or \
        'ENTRYPOINT ["intentc", "daemon"]' in runtime
    assert any("install" in ln and " git " in f" {ln} " for ln in runtime), "git follows the repository"
    assert any("pip install" in ln and ".whl" in ln for ln in runtime), "the wheel, not the source tree"
