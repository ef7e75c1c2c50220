"""Where each kind lives in the REST API (group, version, plural, scope).

A static table for the kinds intentc renders saves a discovery round trip
per run; other kinds (an inventory written by a newer intentc, say) are
looked up through API discovery once and cached by the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def base(self) -> str:
        return f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        p = self.base
        if self.namespaced and namespace:
            p += f"/namespaces/{quote(namespace, safe='')}"
        p += f"/{self.plural}"
        if name:
            p += f"/{quote(name, safe='')}"
        if subresource:
            p += f"/{subresource}"
        return p


KNOWN: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r for r in (
        Resource("v1", "Namespace", "namespaces", False),
        Resource("v1", "ConfigMap", "configmaps", True),
        Resource("v1", "Service", "services", True),
        Resource("v1", "ServiceAccount", "serviceaccounts", True),
        Resource("v1", "ResourceQuota", "resourcequotas", True),
        Resource("v1", "LimitRange", "limitranges", True),
        Resource("v1", "Event", "events", True),
        Resource("v1", "Pod", "pods", True),
        Resource("v1", "Secret", "secrets", True),
        Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
        Resource("apps/v1", "StatefulSet", "statefulsets", True),
        Resource("rbac.authorization.k8s.io/v1", "Role", "roles", True),
        Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
        Resource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
        Resource("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
        Resource("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False),
        Resource("batch/v1", "Job", "jobs", True),
        Resource("batch/v1", "CronJob", "cronjobs", True),
        Resource("batch/v1beta1", "CronJob", "cronjobs", True),
        Resource("apps/v1", "Deployment", "deployments", True),
        Resource("coordination.k8s.io/v1", "Lease", "leases", True),
        Resource("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
        Resource("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
        Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True),
        Resource("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
        Resource("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False),
        Resource("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
                 "validatingadmissionpolicybindings", False),
        Resource("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
        Resource("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "resourceflavors", False),
        Resource("kueue.x-k8s.io/v1beta2", "ClusterQueue", "clusterqueues", False),
        Resource("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", True),
        Resource("kueue.x-k8s.io/v1beta2", "Topology", "topologies", False),
        Resource("kueue.x-k8s.io/v1beta2", "Cohort", "cohorts", False),
        Resource("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses", False),
    )
}
