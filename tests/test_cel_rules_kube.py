"""The cluster enforces what CI checked: an organisation rule's ValidatingAdmissionPolicy on a real
kube-apiserver (render/admission.py, docs/rules.md) takes the rendered expression (Kubernetes type-checks
it with its own CEL) and denies a pod of intentc's that the rule forbids, while the same rule's
evaluation by intentc fails the intent the pod came from."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from intentc.policy.load import policies_of
from intentc.render.admission import admission_objects
from tests.kube_env import KubeEnv
from tests.kube_support import wait_for

RULES = """\
apiVersion: intentc.dev/v1alpha1
kind: Policy
metadata: {name: org}
spec:
  rules:
    - name: no-latest-images
      expression: 'intent.image.matches(":[A-Za-z0-9_.-]+$|@sha256:[0-9a-f]{64}$") && !intent.image.endsWith(":latest")'
      message: images are pinned to a version or a digest, never latest
    - name: training-from-ghcr
      expression: intent.image.startsWith("ghcr.io/")
      message: training images come from ghcr
      match: {tenants: [team-x], kinds: [training]}
"""


def pod(name: str, image: str, tenant: str = "team-x", kind: str = "training", ours: bool = True) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "intentc", "intentc.dev/intent": name, "intentc.dev/tenant": tenant}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": tenant, "labels": labels if ours else {"app": name},
                         "annotations": {"intentc.dev/action": kind}},
            "spec": {"containers": [{"name": "main", "image": image}]}}


def create(env: KubeEnv, body: dict[str, Any]) -> tuple[bool, str]:
    res = env.kubectl_run("create", "-f", "-", input=yaml.safe_dump(body), check=False)
    return res.returncode == 0, res.stderr


@pytest.mark.kube
def test_the_cluster_denies_the_pod_a_rule_forbids(kube_env: KubeEnv) -> None:
    policies, diags, _ = policies_of([("policies/org.yaml", RULES)])
    assert not diags
    objects = admission_objects(policies.cel)
    assert [o["kind"] for o in objects] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 2
    kube_env.kubectl_run("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    kube_env.kubectl_run("create", "namespace", "team-x")
    kube_env.kubectl_run("create", "namespace", "team-y")

    def denied() -> str | None:
        """The API server's refusal of a `:latest` pod; None (the pod removed) while it admits it."""
        ok, err = create(kube_env, pod("probe", "ghcr.io/acme/train:latest"))
        if ok:
            kube_env.kubectl_run("delete", "pod", "probe", "-n", "team-x", "--wait=false")
            return None
        return err

    # the policy is in force once the server has compiled it
    err = wait_for(denied, 60, "the admission policy to take effect", interval=1)
    assert "ValidatingAdmissionPolicy 'intentc-rule-no-latest-images'" in err, err
    assert "rule no-latest-images: images are pinned to a version or a digest, never latest" in err
    ok, err = create(kube_env, pod("pinned", "ghcr.io/acme/train:1.0"))
    assert ok, err
    ok, err = create(kube_env, pod("hub", "docker.io/acme/train:1.0"))             # match: team-x training
    assert not ok and "rule training-from-ghcr: training images come from ghcr" in err, err
    ok, err = create(kube_env, pod("hub-serve", "docker.io/acme/serve:1.0", kind="serve"))
    assert ok, err                                                                  # not matched: a serve pod
    ok, err = create(kube_env, pod("hub-y", "docker.io/acme/train:1.0", tenant="team-y"))
    assert ok, err                                                                  # not matched: team-y
    ok, err = create(kube_env, pod("theirs", "busybox:latest", ours=False))
    assert ok, err                                                                  # not intentc's pod
