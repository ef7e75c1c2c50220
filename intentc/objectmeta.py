"""How intentc names the Kubernetes objects it owns: an object's identity on a
cluster (`ObjectRef`) and the labels that mark it as intentc's.

The renderer writes these, and every side that reads a cluster reads them
back: the cluster client addresses objects by `ObjectRef`, live planning
recognises its own pods and another target's planned GPUs by the labels and
`GPU_INDICES_ANNOTATION`, the reconciler and drift detection pair objects by
them.  They sit below all of those so that none of them imports the renderer
(or the cluster client) to name an object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "intentc"
TENANT_LABEL = "intentc.dev/tenant"
INTENT_LABEL = "intentc.dev/intent"
# The planned GPU indices on a workload ("0,1" on one node, "a=0,1;b=2,3" on several): written
# by every render target, read back by drift and by live planning (another target's pods).
GPU_INDICES_ANNOTATION = "intentc.dev/gpu-indices"


@dataclass(frozen=True, order=True, slots=True)
class ObjectRef:
    """The identity of an object on a cluster (what the inventory records)."""

    api_version: str
    kind: str
    namespace: str        # "" for cluster-scoped objects
    name: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def to_json(self) -> dict[str, str]:
        return {"group": self.group, "version": self.version, "kind": self.kind,
                "namespace": self.namespace, "name": self.name}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ObjectRef":
        group, version = str(data.get("group", "")), str(data["version"])
        return cls(f"{group}/{version}" if group else version, str(data["kind"]),
                   str(data.get("namespace", "")), str(data["name"]))

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> "ObjectRef":
        meta = body.get("metadata", {})
        return cls(str(body["apiVersion"]), str(body["kind"]),
                   str(meta.get("namespace", "") or ""), str(meta["name"]))
