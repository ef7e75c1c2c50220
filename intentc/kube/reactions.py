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
* a Job stranded on an unusable node (`daemon/stranding.py` decides) is moved
  either in place — a server-side apply of the re-bound Job (field manager
  `intentc`, as a rollout applies it) carrying the `resourceVersion` read,
  which the API server accepts only for a suspended Job that never started —
  or by a delete with propagation `Background` and preconditions on the UID
  and `resourceVersion` read (batch/v1 orphans a Job's pods by default; the
  preconditions keep a stale cache from deleting the Job a pass before
  created), then a server-side apply that creates it again;
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


def update_job(client: KubeClient, live: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Apply `body` over the Job `live` (as read); `Outdated` if it changed since, `Invalid`
    if the API server refuses the template change (the Job is not suspended-and-never-started)."""
    meta = {**(body.get("metadata") or {}), "resourceVersion": (live.get("metadata") or {}).get("resourceVersion")}
    return client.apply({**body, "metadata": meta})


def recreate_job(client: KubeClient, live: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """Delete the Job `live` (as read) with its pods, and create `body` under its name.
    `Outdated` (nothing deleted) when the Job changed or was replaced since it was read."""
    meta = live.get("metadata") or {}
    ref = ObjectRef.of(live)
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
               "preconditions": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}}
    path = client.resource(ref.api_version, ref.kind).path(ref.namespace, ref.name)
    client.request("DELETE", path, (), options, "application/json")
    return client.apply(body)


def apply_mirror(client: KubeClient, body: Mapping[str, Any]) -> dict[str, Any]:
    return client.apply(body, force=True, field_manager=MIRROR_MANAGER)


def write_mirror_status(client: KubeClient, ref: ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
    return client.patch_status(ref, status)


def list_mirrors(client: KubeClient, api_version: str, kind: str, selector: str) -> list[dict[str, Any]]:
    return client.list(api_version, kind, "", selector)


def delete_mirror(client: KubeClient, ref: ObjectRef) -> bool:
    return client.delete(ref)
