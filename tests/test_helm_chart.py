"""The Helm chart (examples/deploy/helm/intentc) is the kustomize base with values.

Its RBAC rules and admission policy are the base's own files (the chart's
files/ links to them), so they have one source; these tests check that the
link holds — the rendered ClusterRole and Role grant exactly what the renderer
needs (the same derivation as tests/adversarial/test_rbac.py) — that with its
default values the chart renders the base's objects, that the daemon's CLI
accepts the arguments it renders, that `helm lint --strict` passes, and, on
the test bed, that `helm install` creates what the API server accepts (pods
admitted under Pod Security "restricted", scheduled on kwok nodes), that the
ServiceAccount can do what the daemon does and no more, and that `helm
uninstall` removes it all but the namespace that holds the inventories.

helm comes from the test bed (hack/testenv/helm/go.mod), like kubectl: the
tests skip without it, and fail when INTENTC_REQUIRE_KUBE=1 (CI).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.adversarial.test_rbac import (CAN_I, READER, READER_RULES, RESTRICTED_CONTAINER, SA, daemon_accepts,
                                         grants, needed_grants, unwritable)
from tests.kube_env import SKIP_MESSAGE, KubeEnv, assets_dir
from tests.kube_nodes import add_topology
from tests.kube_support import wait_for

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "examples" / "deploy"
CHART = DEPLOY / "helm" / "intentc"
SMALL = ROOT / "tests" / "fixtures" / "repo" / "clusters" / "small.yaml"
NAMESPACE = "intentc-system"
KUBE_VERSION = "1.37.0"
# Labels and annotations the chart adds to the base's objects (Helm's own, and two of its values).
HELM_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
               "helm.sh/chart")
CHART_NAMESPACE_LABELS = ("pod-security.kubernetes.io/enforce",)
CHART_NAMESPACE_ANNOTATIONS = ("helm.sh/resource-policy",)
OBJECTS = {("Namespace", "intentc-system"), ("ServiceAccount", "intentc"), ("ClusterRole", "intentc-daemon"),
           ("ClusterRole", "intentc-metrics-reader"),
           ("ClusterRoleBinding", "intentc-daemon"), ("Role", "intentc-inventory"),
           ("RoleBinding", "intentc-inventory"), ("Deployment", "intentc-daemon"),
           ("Service", "intentc-daemon-metrics"), ("ValidatingAdmissionPolicy", "intentc-reserved-namespaces"),
           ("ValidatingAdmissionPolicyBinding", "intentc-reserved-namespaces"),
           ("ValidatingAdmissionPolicy", "intentc-managed-objects"),
           ("ValidatingAdmissionPolicyBinding", "intentc-managed-objects")}
# Non-default values: every knob the templates branch on.
CUSTOM = {
    "namespace": {"create": False},
    "image": {"repository": "registry.example/intentc", "tag": "9.9.9", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "pull"}],
    "replicas": 3,
    "daemon": {"repo": "https://git.example/fleet.git", "branch": "release", "paths": ["a", "b/c"],
               "topology": "", "target": "eu-1", "interval": 12.5, "resync": 600, "rolloutTimeout": "",
               "prune": True, "renderTarget": "kueue", "logLevel": "debug", "logFormat": "json", "port": 8080,
               "metricsPort": 9443, "metricsCertSecret": "intentc-metrics-tls",
               "leaderElection": {"enabled": False}, "extraArgs": ["--kube-version=1.37", "--only-topology-nodes"],
               "extraEnv": [{"name": "GIT_ASKPASS", "value": "/etc/git/askpass"}]},
    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
    "podAnnotations": {"example.com/scrape": "no"},
    "nodeSelector": {"node-role.example/system": "true"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}],
    "affinity": None,
    "extraVolumes": [{"name": "git", "secret": {"secretName": "git-credentials"}}],
    "extraVolumeMounts": [{"name": "git", "mountPath": "/etc/git", "readOnly": True}],
    "serviceAccount": {"annotations": {"iam.example/role": "intentc"}},
    "service": {"enabled": False},
    "admissionPolicy": {"enabled": False},
}


# -- helm -------------------------------------------------------------------

class Helm:
    """The test bed's helm, with its config, cache and data in a private directory."""

    def __init__(self, binary: Path, home: Path) -> None:
        self.binary = binary
        self.env = {**os.environ, **{k: str(home / k.lower()) for k in
                                     ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")}}

    def run(self, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.binary), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def ok(self, *args: str, timeout: float = 300.0) -> str:
        res = self.run(*args, timeout=timeout)
        assert res.returncode == 0, f"helm {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
        return res.stdout


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    assets = assets_dir()
    binary = assets / "helm" if assets is not None else None
    if binary is None or not os.access(binary, os.X_OK):
        why = (SKIP_MESSAGE if assets is None else
               f"{assets} has no helm: rerun hack/testenv/setup (it builds helm from hack/testenv/helm)")
        if os.environ.get("INTENTC_REQUIRE_KUBE") == "1":
            pytest.fail("INTENTC_REQUIRE_KUBE=1 but " + why)
        pytest.skip(why)
    return Helm(binary, tmp_path_factory.mktemp("helm-home"))


def values_file(tmp: Path, values: dict[str, Any] | None) -> list[str]:
    if values is None:
        return []
    path = tmp / f"values-{len(list(tmp.glob('values-*')))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return ["-f", str(path)]


def render(helm: Helm, tmp: Path, values: dict[str, Any] | None = None) -> str:
    return helm.ok("template", "intentc", str(CHART), "--kube-version", KUBE_VERSION, *values_file(tmp, values))


def template(helm: Helm, tmp: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(render(helm, tmp, values)) if d]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    return doc


def base_docs() -> list[dict[str, Any]]:
    files = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    admission = yaml.safe_load((DEPLOY / "admission" / "kustomization.yaml").read_text())["resources"]
    files += [f"admission/{f}" for f in admission]
    return [d for f in files for d in yaml.safe_load_all((DEPLOY / f).read_text()) if d]


def without_chart_additions(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    metas = [doc["metadata"]]
    if doc["kind"] == "Deployment":
        metas.append(doc["spec"]["template"]["metadata"])
    for meta in metas:
        drop = HELM_LABELS + (CHART_NAMESPACE_LABELS if doc["kind"] == "Namespace" else ())
        for key in drop:
            meta.get("labels", {}).pop(key, None)
        for key in CHART_NAMESPACE_ANNOTATIONS if doc["kind"] == "Namespace" else ():
            meta.get("annotations", {}).pop(key, None)
        if meta.get("annotations") == {}:
            del meta["annotations"]
    return doc


# -- without a cluster --------------------------------------------------------

@pytest.mark.parametrize("values", [None, CUSTOM], ids=["defaults", "custom"])
def test_helm_lint_strict(helm: Helm, tmp_path: Path, values: dict[str, Any] | None) -> None:
    out = helm.ok("lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION, *values_file(tmp_path, values))
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out


def test_chart_rbac_is_what_the_renderer_needs_and_the_base_grants(helm: Helm, tmp_path: Path) -> None:
    cluster, inventory = needed_grants(tmp_path)
    for values in (None, CUSTOM):                 # values never change the rules
        docs = template(helm, tmp_path, values)
        assert set(grants(one(docs, "ClusterRole", "intentc-daemon"))) == cluster
        assert one(docs, "ClusterRole", READER)["rules"] == READER_RULES
        role = one(docs, "Role")
        assert role["metadata"]["namespace"] == NAMESPACE
        assert set(grants(role)) == inventory
    base = base_docs()
    for kind, name in (("ClusterRole", "intentc-daemon"), ("ClusterRole", READER), ("Role", None)):
        assert one(docs, kind, name)["rules"] == one(base, kind, name)["rules"]   # verbatim, same order
    bindings = [d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert len(bindings) == 2
    assert all(b["subjects"] == [{"kind": "ServiceAccount", "name": "intentc", "namespace": NAMESPACE}]
               for b in bindings)


def test_chart_rbac_is_read_from_the_base_files() -> None:
    """One source: files/ are links to the kustomize base, not copies that could drift."""
    for name, target in (("clusterrole.yaml", "02-clusterrole.yaml"), ("role.yaml", "04-role.yaml"),
                         ("metrics-reader.yaml", "07-metrics-reader.yaml"),
                         ("admission-managed-objects.yaml", "admission/managed-objects.yaml"),
                         ("admission-policy.yaml", "admission/policy.yaml")):
        link = CHART / "files" / name
        assert link.is_symlink(), f"{link} must link to examples/deploy/{target}"
        assert link.resolve() == (DEPLOY / target).resolve()
    templates = "".join(p.read_text() for p in (CHART / "templates").glob("*.yaml"))
    assert "verbs:" not in templates and "apiGroups:" not in templates, "no rule is written in the chart"


def test_default_values_render_the_kustomize_base(helm: Helm, tmp_path: Path) -> None:
    docs = template(helm, tmp_path)
    assert {(d["kind"], d["metadata"]["name"]) for d in docs} == OBJECTS
    base = {(d["kind"], d["metadata"]["name"]): d for d in base_docs()}
    assert set(base) == OBJECTS
    for doc in docs:
        key = (doc["kind"], doc["metadata"]["name"])
        assert without_chart_additions(doc) == base[key], key
    namespace = one(docs, "Namespace")["metadata"]
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert namespace["annotations"] == {"helm.sh/resource-policy": "keep"}
    deployment = one(docs, "Deployment")
    assert deployment["metadata"]["labels"]["app.kubernetes.io/instance"] == "intentc"
    assert deployment["spec"]["selector"] == base[("Deployment", "intentc-daemon")]["spec"]["selector"]


def test_custom_values_are_rendered(helm: Helm, tmp_path: Path) -> None:
    docs = template(helm, tmp_path, CUSTOM)
    kinds = {d["kind"] for d in docs}
    assert kinds == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"}
    assert one(docs, "ServiceAccount")["metadata"]["annotations"] == {"iam.example/role": "intentc"}
    dep = one(docs, "Deployment")
    pod = dep["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert dep["spec"]["replicas"] == 3
    assert container["image"] == "registry.example/intentc:9.9.9" and container["imagePullPolicy"] == "Always"
    assert container["args"] == [
        "--repo=https://git.example/fleet.git", "--branch=release", "--path=a", "--path=b/c", "--target=eu-1",
        "--interval=12.5", "--resync=600", "--listen=:8080", "--metrics-listen=:9443",
        "--metrics-cert-dir=/etc/intentc/metrics-tls", "--workdir=/var/lib/intentc",
        "--no-leader-elect",
        "--prune", "--render-target=kueue", "--log-level=debug", "--log-format=json",
        "--kube-version=1.37", "--only-topology-nodes"]
    assert container["ports"] == [{"name": "probes", "containerPort": 8080, "protocol": "TCP"},
                                  {"name": "https-metrics", "containerPort": 9443, "protocol": "TCP"}]
    assert {"name": "metrics-tls", "mountPath": "/etc/intentc/metrics-tls", "readOnly": True} in container["volumeMounts"]
    assert {"name": "metrics-tls", "secret": {"secretName": "intentc-metrics-tls"}} in pod["spec"]["volumes"]
    # Helm merges maps with the defaults (the memory limit stays); null removes a default (affinity)
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    assert {"name": "GIT_ASKPASS", "value": "/etc/git/askpass"} in container["env"]
    assert {"name": "git", "mountPath": "/etc/git", "readOnly": True} in container["volumeMounts"]
    assert {"name": "git", "secret": {"secretName": "git-credentials"}} in pod["spec"]["volumes"]
    assert pod["spec"]["nodeSelector"] == {"node-role.example/system": "true"}
    assert pod["spec"]["tolerations"] == CUSTOM["tolerations"]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert "affinity" not in pod["spec"]
    assert pod["metadata"]["annotations"] == {"example.com/scrape": "no"}


def test_schema_refuses_bad_values(helm: Helm, tmp_path: Path) -> None:
    for bad in ({"daemon": {"target": "Not A Name"}}, {"replicas": "two"}, {"daemon": {"logFormat": "xml"}},
                {"imag": {"tag": "1"}}, {"daemon": {"extraArgs": ["prune"]}}):
        res = helm.run("template", "intentc", str(CHART), "--kube-version", KUBE_VERSION,
                       *values_file(tmp_path, bad))
        assert res.returncode != 0 and "schema" in res.stderr, (bad, res.stderr)


@pytest.mark.parametrize("values", [None, CUSTOM], ids=["defaults", "custom"])
def test_the_daemon_accepts_the_rendered_arguments(helm: Helm, tmp_path: Path,
                                                   values: dict[str, Any] | None) -> None:
    (container,) = one(template(helm, tmp_path, values), "Deployment")["spec"]["template"]["spec"]["containers"]
    params = daemon_accepts(container["args"])
    assert params["repo"] and params["target"] == ("eu-1" if values else "prod")


@pytest.mark.parametrize("values", [None, CUSTOM], ids=["defaults", "custom"])
def test_the_chart_mounts_what_the_daemon_writes(helm: Helm, tmp_path: Path, values: dict[str, Any] | None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The root filesystem is read-only: the work directory, caches and temporary files are emptyDirs."""
    pod = one(template(helm, tmp_path, values), "Deployment")["spec"]["template"]["spec"]
    assert not unwritable(pod, monkeypatch)


# -- on the test bed ------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(kube_cluster: KubeEnv) -> KubeEnv:
    add_topology(kube_cluster, str(SMALL))       # kwok nodes for the daemon's pods
    return kube_cluster


def kube_get(env: KubeEnv, *args: str) -> Any:
    res = env.kubectl_run("get", *args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def test_helm_install_upgrade_and_uninstall(helm: Helm, cluster: KubeEnv, tmp_path: Path) -> None:
    kube = ["--kubeconfig", str(cluster.kubeconfig)]
    # --wait: kstatus until every object is current, the Deployment available (kwok runs its pods)
    helm.ok("install", "intentc", str(CHART), *kube, "--wait", "--timeout", "4m", timeout=300)
    release = json.loads(helm.ok("list", *kube, "-o", "json"))
    assert [(r["name"], r["status"]) for r in release] == [("intentc", "deployed")]

    for kind, name in OBJECTS:
        scope = [] if kind in ("Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                            "ValidatingAdmissionPolicyBinding") else ["-n", NAMESPACE]
        live = kube_get(cluster, kind.lower(), name, *scope)
        assert live is not None, (kind, name)
        assert live["metadata"]["annotations"]["meta.helm.sh/release-name"] == "intentc", (kind, name)
    cluster_grants, inventory = needed_grants(tmp_path)
    assert set(grants(kube_get(cluster, "clusterrole", "intentc-daemon"))) == cluster_grants
    assert kube_get(cluster, "clusterrole", READER)["rules"] == READER_RULES
    assert set(grants(kube_get(cluster, "role", "intentc-inventory", "-n", NAMESPACE))) == inventory
    namespace = kube_get(cluster, "namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"

    # the pods were admitted in the restricted namespace and scheduled onto kwok's nodes
    pods = kube_get(cluster, "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=intentc")["items"]
    assert len(pods) == 2 and all(p["spec"].get("nodeName") and p["status"]["phase"] == "Running" for p in pods), \
        [(p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods]
    assert len({p["spec"]["nodeName"] for p in pods}) == 2, "the preferred anti-affinity spreads the replicas"

    # the ServiceAccount can do what the daemon does and no more (the Intent CRD is not installed here)
    wrong = []
    for verb, resource, ns, allowed in [c for c in CAN_I if "intents" not in c[1]]:
        cmd = ["auth", "can-i", verb, *resource.split(), f"--as={SA}"] + (["-n", ns] if ns else [])
        out = cluster.kubectl_run(*cmd, check=False).stdout.strip()
        if out != ("yes" if allowed else "no"):
            wrong.append(f"{verb} {resource} {ns or '(cluster)'}: {out!r}")
    assert not wrong, wrong

    # an upgrade rolls the Deployment to the new arguments
    upgrade = {"replicas": 1, "daemon": {"target": "staging"}}
    helm.ok("upgrade", "intentc", str(CHART), *kube, *values_file(tmp_path, upgrade), "--wait", "--timeout", "4m",
            timeout=300)
    dep = kube_get(cluster, "deployment", "intentc-daemon", "-n", NAMESPACE)
    assert dep["spec"]["replicas"] == 1
    assert "--target=staging" in dep["spec"]["template"]["spec"]["containers"][0]["args"]

    helm.ok("uninstall", "intentc", *kube, "--wait", "--timeout", "2m", timeout=180)
    left = [(kind, name) for kind, name in OBJECTS - {("Namespace", NAMESPACE)}
            if kube_get(cluster, kind.lower(), name, "-n", NAMESPACE) is not None]
    assert not left, left
    assert json.loads(helm.ok("list", *kube, "-o", "json")) == []
    # the inventories' namespace stays (helm.sh/resource-policy: keep)
    assert kube_get(cluster, "namespace", NAMESPACE)["status"]["phase"] == "Active"


def test_custom_values_are_accepted_by_the_api_server(helm: Helm, cluster: KubeEnv, tmp_path: Path) -> None:
    """Server-side dry run of the non-default rendering (namespace.create=false: it exists)."""
    cluster.kubectl_run("create", "namespace", NAMESPACE, check=False)
    rendered = render(helm, tmp_path, CUSTOM)
    res = cluster.kubectl_run("apply", "--dry-run=server", "-f", "-", input=rendered, check=False)
    assert res.returncode == 0, res.stderr
    assert "deployment.apps/intentc-daemon created (server dry run)" in res.stdout, res.stdout


def test_the_pod_passes_pod_security_restricted(helm: Helm, cluster: KubeEnv, tmp_path: Path) -> None:
    """The chart's pod, created (server-side dry run) in a namespace that enforces
    "restricted"; the same pod without its security context is refused, so the check bites."""
    ns = "psa-restricted"
    cluster.kubectl_run("create", "namespace", ns)
    cluster.kubectl_run("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted",
                        "pod-security.kubernetes.io/enforce-version=latest")
    for values in (None, CUSTOM):
        template_spec = one(template(helm, tmp_path, values), "Deployment")["spec"]["template"]
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intentc-daemon", "namespace": ns},
                               "spec": {**template_spec["spec"], "serviceAccountName": "default"}}
        res = cluster.kubectl_run("create", "--dry-run=server", "-f", "-", input=json.dumps(pod), check=False)
        assert res.returncode == 0, res.stderr
        assert "Warning" not in res.stderr, res.stderr
    loose = copy.deepcopy(pod)
    del loose["spec"]["securityContext"]
    del loose["spec"]["containers"][0]["securityContext"]
    res = cluster.kubectl_run("create", "--dry-run=server", "-f", "-", input=json.dumps(loose), check=False)
    assert res.returncode != 0 and "violates PodSecurity" in res.stderr, res.stderr
    cluster.kubectl_run("delete", "namespace", ns, "--wait=false")


def test_the_base_deployment_runs_under_pod_security_restricted(cluster: KubeEnv) -> None:
    """examples/deploy/05-deployment.yaml in a namespace that enforces "restricted": the
    ReplicaSet creates both pods (no FailedCreate), kwok runs them, and they carry a read-only
    root filesystem, non-root, no capabilities, seccomp RuntimeDefault, no privilege escalation.
    The same Deployment without its security contexts gets FailedCreate, so the check bites."""
    ns = "psa-base"
    cluster.kubectl_run("create", "namespace", ns)
    cluster.kubectl_run("label", "namespace", ns, *(f"pod-security.kubernetes.io/{mode}{suffix}"
                                                     for mode in ("enforce", "warn")
                                                     for suffix in ("=restricted", "-version=latest")))
    cluster.kubectl_run("create", "serviceaccount", "intentc", "-n", ns)
    dep = copy.deepcopy(one(base_docs(), "Deployment"))
    dep["metadata"]["namespace"] = ns
    res = cluster.kubectl_run("apply", "-f", "-", input=json.dumps(dep))
    assert "Warning" not in res.stderr, res.stderr

    def running() -> list[dict[str, Any]]:
        pods = kube_get(cluster, "pods", "-n", ns, "-l", "app.kubernetes.io/name=intentc")["items"]
        ok = [p for p in pods if p["spec"].get("nodeName") and p["status"].get("phase") == "Running"]
        return ok if len(ok) == 2 else []

    pods = wait_for(running, 120, "the base Deployment's two pods Running")
    for pod in pods:
        spec = pod["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 65532
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        (container,) = spec["containers"]
        assert {k: container["securityContext"].get(k) for k in RESTRICTED_CONTAINER} == RESTRICTED_CONTAINER
    failed = kube_get(cluster, "events", "-n", ns, "--field-selector", "reason=FailedCreate")["items"]
    assert not failed, [e["message"] for e in failed]

    loose = copy.deepcopy(dep)
    loose["metadata"]["name"] = "intentc-loose"
    for obj in (loose["spec"]["selector"]["matchLabels"], loose["spec"]["template"]["metadata"]["labels"]):
        obj["app.kubernetes.io/component"] = "loose"
    del loose["spec"]["template"]["spec"]["securityContext"]
    del loose["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    res = cluster.kubectl_run("apply", "-f", "-", input=json.dumps(loose))
    assert "would violate PodSecurity" in res.stderr, res.stderr

    def refused() -> list[str]:
        events = kube_get(cluster, "events", "-n", ns, "--field-selector", "reason=FailedCreate")["items"]
        return [e["message"] for e in events if "violates PodSecurity" in e["message"]]

    wait_for(refused, 60, "FailedCreate of the loose Deployment's pods")
    cluster.kubectl_run("delete", "namespace", ns, "--wait=false")
