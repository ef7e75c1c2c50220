"""The one boundary that talks to a Kubernetes API server (official `kubernetes` client).

Objects go in and come out as plain JSON dicts — the same shape the
renderer produces and the reconciler diffs — so nothing above this module
sees the client's model classes.  Requests go through the client's
`ApiClient` (auth, TLS, kubeconfig handling, connection pool) with
`_preload_content`-free raw bodies: decoding 500 objects through generated
models would cost more than the requests themselves.  Every failure becomes
a typed `KubeError` (`intentc.kube.errors`).
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import threading
from typing import Any, Mapping, Sequence

from typing import TYPE_CHECKING

import urllib3
import yaml

from intentc.kube.errors import ConfigError, KubeError, NotFound, Unreachable
from intentc.kube.kubeconfig import kubeconfig_files, load_merged
from intentc.kube.resources import KNOWN, Resource
from intentc.objectmeta import ObjectRef

if TYPE_CHECKING:
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

# The `kubernetes` package costs about half a second to import, and every
# `intentc` command would pay it through the CLI's imports; it is imported
# where a connection is made instead (`connect`, `api_exception`).


def api_exception() -> type[ApiException]:
    from kubernetes.client.exceptions import ApiException
    return ApiException

FIELD_MANAGER = "intentc"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"


class KubeClient:
    def __init__(self, api: k8s.ApiClient, timeout: tuple[float, float] = (5.0, 60.0)) -> None:
        self.api = api
        self.timeout = timeout
        self._resources: dict[tuple[str, str], Resource] = dict(KNOWN)
        self._lock = threading.Lock()

    # -- construction -------------------------------------------------------
    @classmethod
    def connect(cls, kubeconfig: str | None = None, context: str | None = None,
                pool_size: int = 16) -> "KubeClient":
        """From a kubeconfig (flag, else the files $KUBECONFIG lists, merged as
        kubectl merges them, else ~/.kube/config) or, with none of those present
        inside a pod, the in-cluster service account."""
        from kubernetes import client as k8s
        from kubernetes import config as k8s_config
        from kubernetes.config.config_exception import ConfigException

        cfg = k8s.Configuration()
        chosen = kubeconfig_files(kubeconfig)
        shown = os.pathsep.join(chosen.files or chosen.wanted)
        try:
            if not chosen.files:
                if not chosen.explicit and os.environ.get("KUBERNETES_SERVICE_HOST"):
                    k8s_config.load_incluster_config(client_configuration=cfg)
                else:
                    raise ConfigError(f"kubeconfig not found: {shown} (pass --kubeconfig or set KUBECONFIG)")
            else:
                load_merged(chosen.files, context, cfg)
        except ConfigError:
            raise
        except ConfigException as e:
            raise ConfigError(f"cannot load kubeconfig {shown}: {_excerpt(str(e))}") from None
        except (OSError, ValueError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot load kubeconfig {shown}: {_excerpt(str(e))}") from None
        except Exception as e:  # noqa: BLE001 - the loader raises anything on malformed YAML/shapes
            raise ConfigError(f"cannot load kubeconfig {shown}: {_config_problem(e)}") from None
        if not str(cfg.host).startswith(("https://", "http://")):
            raise ConfigError(f"cannot load kubeconfig {shown}: the cluster's server is not an http(s) URL")
        cfg.connection_pool_maxsize = pool_size
        # One retry on a broken connection, without urllib3 logging each attempt to stderr.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
        if not cfg.verify_ssl:     # the kubeconfig asked for it; kubectl does not nag either
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        cfg.retries = 1
        return cls(k8s.ApiClient(cfg))

    def close(self) -> None:
        self.api.close()

    def with_timeout(self, timeout: tuple[float, float]) -> "KubeClient":
        """The same connection with other (connect, read) timeouts, e.g. a
        Lease renewal that must not outlive its deadline."""
        return KubeClient(self.api, timeout)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    # -- raw requests -------------------------------------------------------
    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] = (),
                body: Any = None, content_type: str | None = None) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            m, url, hdrs, payload, _ = self.api.param_serialize(
                method, path, query_params=list(query), header_params=headers, body=body,
                auth_settings=["BearerToken"])
            resp = self.api.call_api(m, url, header_params=hdrs, body=payload,
                                     _request_timeout=self.timeout)
            data = resp.read()
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"cannot reach the API server at {self.host}: {_reason(e)}") from None
        except api_exception() as e:           # TLS failures come back as status 0
            if e.status == 0:
                raise Unreachable(f"cannot reach the API server at {self.host}: {e.reason}") from None
            raise KubeError.from_status(int(e.status), e.body or "") from None
        if not 200 <= resp.status < 300:
            raise KubeError.from_status(resp.status, data or b"")
        return json.loads(data) if data else None

    def storage_ready(self) -> tuple[bool, str]:
        """The API server's own view of etcd (`/readyz/etcd`, readable by every
        authenticated user).  A server without that check counts as ready."""
        try:
            m, url, hdrs, payload, _ = self.api.param_serialize(
                "GET", "/readyz/etcd", header_params={"Accept": "text/plain"}, auth_settings=["BearerToken"])
            resp = self.api.call_api(m, url, header_params=hdrs, body=payload, _request_timeout=(5.0, 10.0))
            status, text = resp.status, resp.read().decode("utf-8", "replace")
        except urllib3.exceptions.ReadTimeoutError:
            return False, "no answer from its etcd check within 10 s"
        except urllib3.exceptions.HTTPError as e:
            raise Unreachable(f"cannot reach the API server at {self.host}: {_reason(e)}") from None
        except api_exception() as e:
            if e.status == 0:
                raise Unreachable(f"cannot reach the API server at {self.host}: {e.reason}") from None
            status, text = int(e.status), str(e.body or "")
        if status in (401, 403, 404):
            return True, ""
        return 200 <= status < 300, _excerpt(text)

    # -- discovery ----------------------------------------------------------
    def version(self) -> str:
        """The server's gitVersion, e.g. "v1.20.2"."""
        return str(self.request("GET", "/version")["gitVersion"])

    def served_api_versions(self) -> frozenset[str]:
        """Every group/version the server serves ("v1", "batch/v1", "resource.k8s.io/v1", ...)."""
        core = self.request("GET", "/api") or {}
        groups = self.request("GET", "/apis") or {}
        out = {str(v) for v in core.get("versions", [])}
        for g in groups.get("groups", []):
            out.update(str(v["groupVersion"]) for v in g.get("versions", []))
        return frozenset(out)

    def resource(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        with self._lock:
            if key in self._resources:
                return self._resources[key]
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        for r in self.request("GET", base).get("resources", []):
            if r.get("kind") == kind and "/" not in r.get("name", ""):
                found = Resource(api_version, kind, str(r["name"]), bool(r.get("namespaced")))
                with self._lock:
                    self._resources[key] = found
                return found
        raise NotFound(f"the server does not serve {kind} in {api_version}", 404, "NotFound")

    def _path(self, ref: ObjectRef, subresource: str = "") -> str:
        return self.resource(ref.api_version, ref.kind).path(ref.namespace, ref.name, subresource)

    # -- objects ------------------------------------------------------------
    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        try:
            return dict(self.request("GET", self._path(ref)))
        except NotFound:
            return None

    def list(self, api_version: str, kind: str, namespace: str = "",
             label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]:
        res = self.resource(api_version, kind)
        query = [("labelSelector", label_selector)] if label_selector else []
        if field_selector:
            query.append(("fieldSelector", field_selector))
        data = self.request("GET", res.path(namespace), query)
        items = data.get("items") or []
        for item in items:      # list items omit their own apiVersion/kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return list(items)

    def apply(self, body: Mapping[str, Any], *, force: bool = False, dry_run: bool = False,
              field_manager: str = FIELD_MANAGER) -> dict[str, Any]:
        """Server-side apply (PATCH application/apply-patch+yaml; JSON is YAML)."""
        query = [("fieldManager", field_manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        return dict(self.request("PATCH", self._path(ObjectRef.of(body)), query, dict(body), APPLY_PATCH))

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST a new object; AlreadyExists when the name is taken."""
        ref = ObjectRef.of(body)
        path = self.resource(ref.api_version, ref.kind).path(ref.namespace)
        return dict(self.request("POST", path, (), dict(body), "application/json"))

    def replace(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the whole object; with metadata.resourceVersion set, `Outdated`
        when someone wrote it since it was read."""
        return dict(self.request("PUT", self._path(ObjectRef.of(body)), (), dict(body), "application/json"))

    def delete(self, ref: ObjectRef, *, dry_run: bool = False) -> bool:
        """Delete with background propagation (dependents go too, without
        waiting for a garbage collector); False when it was already gone."""
        query = [("dryRun", "All")] if dry_run else []
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        try:
            self.request("DELETE", self._path(ref), query, body, "application/json")
            return True
        except NotFound:
            return False

    def patch_status(self, ref: ObjectRef, status: Mapping[str, Any]) -> dict[str, Any]:
        """Write `.status` through the status subresource, as a controller would."""
        return dict(self.request("PATCH", self._path(ref, "status"), (), {"status": dict(status)}, MERGE_PATCH))

    def events(self, ref: ObjectRef) -> builtins.list[dict[str, Any]]:
        """Events about one object, oldest first."""
        selector = f"involvedObject.kind={ref.kind},involvedObject.name={ref.name}"
        res = self.resource("v1", "Event")
        data = self.request("GET", res.path(ref.namespace), [("fieldSelector", selector)])
        items = data.get("items") or []
        return sorted(items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


def _excerpt(text: str, limit: int = 160) -> str:
    """Loader messages can quote the file; a kubeconfig holds credentials, so only a short excerpt."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _config_problem(e: Exception) -> str:
    """What is wrong with a kubeconfig, without quoting it (it holds tokens and keys)."""
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        return f"not valid YAML (line {mark.line + 1}, column {mark.column + 1})"
    return f"not a kubeconfig ({type(e).__name__})"


def _reason(e: urllib3.exceptions.HTTPError) -> str:
    inner = getattr(e, "reason", None)
    text = str(inner or e)
    for marker in ("Connection refused", "timed out", "Name or service not known", "Connection reset"):
        if marker in text:
            return marker.lower()
    return text[:200]


__all__ = ["KubeClient", "KubeError", "FIELD_MANAGER"]
