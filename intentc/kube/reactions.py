"""The daemon's writes that are not a server-side apply of rendered objects.

What to do is decided elsewhere, purely (`daemon/fallback.py`, `daemon/mirror.py`);
this module only says it to the API server, the one place that imports the
client (import-linter):

* a node taint is added or lifted with a merge patch of the whole
  `spec.taints` list carrying the `resourceVersion` it was read at, so a
  concurrent change by someone else (a `kubectl taint`, the node controller)
  is refused (`Outdated`) rather than overwritten; the caller retries on the
  next pass;
* a suspended Job is resumed with a plain merge patch of `spec.suspend`
  (field manager `intentc`, operation Update; `resourceVersion` checked the
  same way, so a pass that read a stale cache cannot resume it twice): a
  server-side apply of that one field would drop intentc's ownership of
  every other field;
* an `Intent` object is server-side applied (field manager `intentc-mirror`,
  so its fields are never mistaken for the rendered objects'), and its
  status written through the `status` subresource, as a controller does.
"""

from __future__ import annotations

from typing import Any, Mapping

from intentc.kube.client import FIELD_MANAGER, MERGE_PATCH, KubeClient
from intentc.objectmeta import ObjectRef

MIRROR_MANAGER = "intentc-mirror"
NODE = ("v1", "Node")


def _merge_patch(client: KubeClient, ref: ObjectRef, patch: Mapping[str, Any], subresource: str = ""
                 ) -> dict[str, Any]:
    path = client.resource(ref.api_version, ref.kind).path(ref.namespace, ref.name, subresource)
    return dict(client.request("PATCH", path, [("fieldManager", FIELD_MANAGER)], dict(patch), MERGE_PATCH))


def set_node_taints(client: KubeClient, node: Mapping[str, Any], taints: list[dict[str, Any]]) -> dict[str, Any]:
    """Replace `spec.taints` of `node` (as read) with `taints`; `Outdated` if it changed since."""
    meta = node.get("metadata") or {}
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"taints": taints or None}}
    return _merge_patch(client, ObjectRef(*NODE, "", str(meta.get("name"))), patch)


def resume_job(client: KubeClient, job: Mapping[str, Any]) -> dict[str, Any]:
    """Resume `job` (as read); `Outdated` if it changed since, e.g. resumed already."""
    meta = job.get("metadata") or {}
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {"suspend": False}}
    return _merge_patch(client, ObjectRef.of(job), patch)


def apply_mirror(client: KubeClient, body: Mapping[str, Any]) -> dict[str, Any]:
    return client.apply(body, force=True, field_manager=MIRROR_MANAGER)


def write_mirror_status(client: KubeClient, ref: ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
    return client.patch_status(ref, status)


def list_mirrors(client: KubeClient, api_version: str, kind: str, selector: str) -> list[dict[str, Any]]:
    return client.list(api_version, kind, "", selector)


def delete_mirror(client: KubeClient, ref: ObjectRef) -> bool:
    return client.delete(ref)
