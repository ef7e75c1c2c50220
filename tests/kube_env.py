"""A real etcd + kube-apiserver on loopback, the way controller-runtime's envtest runs them.

Binaries come from $KUBEBUILDER_ASSETS (`../shared/kube-testenv/setup`
prints that directory).  Flags are the ones that work for the 1.20 server
built there (see ../shared/kube-testenv/README.md).  `stop_apiserver` /
`start_apiserver` keep etcd and its data, so a test can take the API server
away mid-operation and bring the same cluster back.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

SKIP_MESSAGE = ("needs a real kube-apiserver: set KUBEBUILDER_ASSETS; "
                "run ../shared/kube-testenv/setup")
BINARIES = ("etcd", "kube-apiserver", "kubectl")


def assets_dir() -> Path | None:
    """The envtest binary directory, or None when it is not usable."""
    raw = os.environ.get("KUBEBUILDER_ASSETS")
    if not raw:
        return None
    path = Path(raw)
    if all(os.access(path / b, os.X_OK) for b in BINARIES):
        return path
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 15.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


class KubeEnv:
    def __init__(self, assets: Path, workdir: Path) -> None:
        self.assets = assets
        self.dir = workdir
        self.token = secrets.token_hex(16)
        self.etcd_port = free_port()
        self.peer_port = free_port()
        self.api_port = free_port()
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.kubeconfig = self.dir / "kubeconfig"

    # -- lifecycle --------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def kubectl(self) -> Path:
        return self.assets / "kubectl"

    def start(self, timeout: float = 90.0) -> "KubeEnv":
        self.dir.mkdir(parents=True, exist_ok=True)
        self._write_credentials()
        self.start_etcd()
        self.start_apiserver(timeout)
        return self

    def stop(self) -> None:
        self.stop_apiserver()
        _stop(self.etcd)
        self.etcd = None

    def start_etcd(self) -> None:
        log = open(self.dir / "etcd.log", "ab")
        self.etcd = subprocess.Popen(
            [str(self.assets / "etcd"), "--data-dir", str(self.dir / "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer_port}"],
            stdout=log, stderr=subprocess.STDOUT)

    def start_apiserver(self, timeout: float = 90.0) -> None:
        d = self.dir
        log = open(d / "kube-apiserver.log", "ab")
        self.apiserver = subprocess.Popen(
            [str(self.assets / "kube-apiserver"),
             f"--etcd-servers=http://127.0.0.1:{self.etcd_port}", f"--cert-dir={d}",
             f"--secure-port={self.api_port}", "--bind-address=127.0.0.1",
             "--advertise-address=127.0.0.1", "--insecure-port=0",
             "--service-cluster-ip-range=10.0.0.0/24",
             "--service-account-issuer=https://kubernetes.default.svc",
             f"--service-account-key-file={d / 'sa.pub'}",
             f"--service-account-signing-key-file={d / 'sa.key'}",
             f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
             "--allow-privileged=true", "--disable-admission-plugins=ServiceAccount"],
            stdout=log, stderr=subprocess.STDOUT)
        self.wait_ready(timeout)

    def stop_apiserver(self) -> None:
        _stop(self.apiserver)
        self.apiserver = None

    def _write_credentials(self) -> None:
        d = self.dir
        if not (d / "sa.key").exists():
            openssl = shutil.which("openssl") or "openssl"
            subprocess.run([openssl, "genrsa", "-out", str(d / "sa.key"), "2048"], check=True,
                           capture_output=True)
            subprocess.run([openssl, "rsa", "-in", str(d / "sa.key"), "-pubout", "-out", str(d / "sa.pub")],
                           check=True, capture_output=True)
        (d / "tokens.csv").write_text(f"{self.token},admin,admin,system:masters\n")
        self.kubeconfig.write_text(self.kubeconfig_text())

    def kubeconfig_text(self, context: str = "envtest") -> str:
        return (
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: envtest\n  cluster:\n    server: {self.server}\n"
            "    insecure-skip-tls-verify: true\n"
            f"users:\n- name: admin\n  user:\n    token: {self.token}\n"
            f"contexts:\n- name: {context}\n  context:\n    cluster: envtest\n    user: admin\n"
            f"current-context: {context}\n")

    # -- HTTP helpers for tests and benchmarks ------------------------------
    def _get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.apiserver is not None and self.apiserver.poll() is not None:
                raise RuntimeError(f"kube-apiserver exited; see {self.dir / 'kube-apiserver.log'}")
            try:
                status, body = self._get("/readyz")
                if status == 200 and body.strip() == "ok":
                    return
                last = f"{status} {body[:200]}"
            except OSError as e:
                last = str(e)
            time.sleep(0.3)
        raise RuntimeError(f"kube-apiserver not ready after {timeout}s: {last}")

    def metrics(self) -> str:
        status, body = self._get("/metrics", timeout=30)
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return body


WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
WORKLOAD_RESOURCES = frozenset({"namespaces", "rolebindings", "resourcequotas", "priorityclasses", "jobs",
                                "deployments", "services", "configmaps"})


def write_requests(metrics_text: str, resources: frozenset[str] = WORKLOAD_RESOURCES) -> dict[str, int]:
    """Non-dry-run write requests the API server counted (apiserver_request_total), by verb,
    for the given resources — the API server's own bookkeeping writes (leases, endpoints,
    flow control) are other resources and stay out of the count."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, int] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name not in ("apiserver_request", "apiserver_request_total"):
            continue
        for s in family.samples:
            if not s.name.endswith("_total"):
                continue
            lb = s.labels
            if lb.get("verb") in WRITE_VERBS and lb.get("resource") in resources and not lb.get("dry_run"):
                out[lb["verb"]] = out.get(lb["verb"], 0) + int(s.value)
    return out
