"""A real Kubernetes control plane on loopback, the way controller-runtime's envtest runs one.

Binaries come from $KUBEBUILDER_ASSETS, which `hack/testenv/setup` builds
from pinned Go modules and prints (Kubernetes 1.37, etcd 3.6, kwok, Kueue, the
helm that tests/test_helm_chart.py runs, and the Prometheus of tests/prometheus_env.py).
`KubeEnv` always runs etcd and kube-apiserver; the other components are
started on request, because each costs start-up time and CPU:

* ``controller-manager`` — garbage collection, namespace deletion, the Job and
  Deployment controllers (pods get created);
* ``scheduler`` — kube-scheduler binds those pods to nodes (and allocates DRA
  claims against ResourceSlices);
* ``kwok`` — plays the kubelet for fake nodes (annotation
  ``kwok.x-k8s.io/node=fake``): pods go Running, Job pods go Succeeded;
* ``kueue`` — the Kueue controller out of cluster, with its CRDs.

`stop_apiserver` / `start_apiserver` keep etcd and its data, so a test can
take the API server away mid-operation and bring the same cluster back.
"""

from __future__ import annotations

import json
import os
import random
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
from typing import IO, Any, Iterable

SKIP_MESSAGE = ("needs a real Kubernetes control plane: run "
                'export KUBEBUILDER_ASSETS="$(hack/testenv/setup)"')
BINARIES = ("etcd", "kube-apiserver", "kubectl")
COMPONENTS = ("controller-manager", "scheduler", "kwok", "kueue")
KWOK_ANNOTATION = "kwok.x-k8s.io/node"


def assets_dir() -> Path | None:
    """The envtest binary directory, or None when it is not usable."""
    raw = os.environ.get("KUBEBUILDER_ASSETS")
    if not raw:
        return None
    path = Path(raw)
    if all(os.access(path / b, os.X_OK) for b in BINARIES):
        return path
    return None


_HANDED_OUT: set[int] = set()
_RANDOM = random.SystemRandom()


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing listens on, for a server a test is about to start.

    It is chosen at random below the kernel's ephemeral range, never from it: ports in
    that range are also the local ends of the suite's outgoing connections, and one of
    those can take the port between this check and the server's own bind (etcd or the
    API server then exits with "address already in use"). A port is handed out once per
    process, so two servers of one test never get the same one.
    """
    floor = _ephemeral_floor()
    for _ in range(500):
        port = _RANDOM.randrange(20000, floor) if floor > 21000 else 0
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            chosen = int(s.getsockname()[1])
        if chosen not in _HANDED_OUT:
            _HANDED_OUT.add(chosen)
            return chosen
    raise RuntimeError("no free loopback port found")


def _lost_a_port(log: Path) -> bool:
    """Whether a server exited because its port was taken (the only start-up failure
    worth another try with new ports)."""
    try:
        return "address already in use" in log.read_text(errors="replace")
    except OSError:
        return False


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
    def __init__(self, assets: Path, workdir: Path, components: Iterable[str] = (),
                 kwok_stages: Iterable[Path] = (), audit: bool = False) -> None:
        self.assets = assets
        # with `audit`, the API server logs every write to what intentc manages (AUDIT_POLICY)
        # to `audit_log`: tests count who wrote what when (tests/audit.py)
        self.audit = audit
        self.audit_log = workdir / "audit.log"
        # kwok's stage files: its "fast" set unless a test brings its own (e.g. pods
        # that run for a while, or fail with a given exit code)
        self.kwok_stages = tuple(kwok_stages) or (assets / "kwok-stages.yaml",)
        self.dir = workdir
        self.components = tuple(c for c in COMPONENTS if c in set(components))
        unknown = set(components) - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; known: {COMPONENTS}")
        self.token = secrets.token_hex(16)
        self.etcd_port = free_port()
        self.peer_port = free_port()
        self.api_port = free_port()
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kubeconfig = self.dir / "kubeconfig"
        self._logs: list[IO[bytes]] = []

    # -- lifecycle --------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def kubectl(self) -> Path:
        return self.assets / "kubectl"

    def start(self, timeout: float = 90.0, attempts: int = 3) -> "KubeEnv":
        self.dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(attempts):
            self._write_credentials()
            self.start_etcd()
            try:
                self.start_apiserver(timeout)
                break
            except RuntimeError:
                logs = (self.dir / "etcd.log", self.dir / "kube-apiserver.log")
                if attempt + 1 == attempts or not any(_lost_a_port(log) for log in logs):
                    raise
                # another process took a port between free_port() and the bind: new ports,
                # fresh logs (so the next failure is read from its own log), same data dir
                self.stop_apiserver()
                _stop(self.etcd)
                self.etcd = None
                for log in logs:
                    log.unlink(missing_ok=True)
                self.etcd_port, self.peer_port, self.api_port = free_port(), free_port(), free_port()
        for component in self.components:
            getattr(self, "start_" + component.replace("-", "_"))()
        return self

    def stop(self) -> None:
        for name in reversed(list(self.procs)):
            _stop(self.procs.pop(name))
        self.stop_apiserver()
        _stop(self.etcd)
        self.etcd = None
        for f in self._logs:
            f.close()
        self._logs.clear()

    def _log(self, name: str) -> IO[bytes]:
        f = open(self.dir / f"{name}.log", "ab")
        self._logs.append(f)
        return f

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdout=self._log(name), stderr=subprocess.STDOUT, cwd=self.dir)
        self.procs[name] = proc
        return proc

    def start_etcd(self) -> None:
        self.etcd = subprocess.Popen(
            [str(self.assets / "etcd"), "--data-dir", str(self.dir / "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer_port}",
             "--unsafe-no-fsync", "--log-level", "warn"],
            stdout=self._log("etcd"), stderr=subprocess.STDOUT)

    def start_apiserver(self, timeout: float = 90.0) -> None:
        d = self.dir
        self.apiserver = subprocess.Popen(
            [str(self.assets / "kube-apiserver"),
             f"--etcd-servers=http://127.0.0.1:{self.etcd_port}", f"--cert-dir={d}",
             f"--secure-port={self.api_port}", "--bind-address=127.0.0.1",
             "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
             "--service-cluster-ip-range=10.0.0.0/24",
             "--service-account-issuer=https://kubernetes.default.svc",
             f"--service-account-key-file={d / 'sa.pub'}",
             f"--service-account-signing-key-file={d / 'sa.key'}",
             f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
             "--allow-privileged=true", "--disable-admission-plugins=ServiceAccount",
             # etcd's HTTP/2 watch channel and the API server's caches stay small in tests
             "--watch-cache=true", "--v=1", *self._audit_flags()],
            stdout=self._log("kube-apiserver"), stderr=subprocess.STDOUT)
        self.wait_ready(timeout)

    def stop_apiserver(self) -> None:
        _stop(self.apiserver)
        self.apiserver = None

    def _audit_flags(self) -> list[str]:
        """The audit log: JSON lines, appended across API server restarts, written in
        blocking mode (each event before the response goes out), so a test that sees a
        write's effect finds its event in the file."""
        if not self.audit:
            return []
        policy = self.dir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY))
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json", "--audit-log-mode=blocking"]

    # -- optional components ------------------------------------------------
    def _common(self) -> list[str]:
        # No delegated authentication: their own endpoints serve only health checks here.
        return [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                f"--cert-dir={self.dir / 'serving'}"]

    def start_controller_manager(self) -> None:
        self._spawn("kube-controller-manager", [
            str(self.assets / "kube-controller-manager"), *self._common(),
            f"--service-account-private-key-file={self.dir / 'sa.key'}",
            "--use-service-account-credentials=false",
            # node lifecycle stays on: it lifts the not-ready taint the API server puts on a new
            # Node once kwok reports it Ready (and kwok renews the nodes' leases)
            "--controllers=*,-nodeipam,-csrsigning",
            "--concurrent-job-syncs=10", "--v=1"])

    def start_scheduler(self) -> None:
        self._spawn("kube-scheduler", [str(self.assets / "kube-scheduler"), *self._common(), "--v=1"])

    def start_kwok(self) -> None:
        """kwok with its own "fast" stages (kwok-stages.yaml, from its module): nodes it
        manages go Ready and renew a lease, their pods go Running, pods of a Job Succeeded."""
        self._spawn("kwok", [
            str(self.assets / "kwok"), f"--kubeconfig={self.kubeconfig}",
            *(f"--config={stage}" for stage in self.kwok_stages),
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
            "--node-lease-duration-seconds=40", "--cidr=10.244.0.1/16", "--node-ip=10.1.0.1",
            f"--server-address=127.0.0.1:{free_port()}"])

    def start_kueue(self, timeout: float = 120.0, settings: dict[str, Any] | None = None) -> None:
        """Kueue's CRDs, then its controller out of cluster (no webhooks are registered
        with the API server, so callers create Jobs suspended with their queue label).
        `settings` are added to Kueue's Configuration (e.g. `fairSharing`); a test that
        wants them starts the control plane without "kueue" and calls this itself."""
        crds = self.assets / "kueue-crds"
        self.kubectl_run("apply", "--server-side", "-f", str(crds))
        self.kubectl_run("wait", "--for=condition=Established", "--timeout=60s", "-f", str(crds))
        self.kubectl_run("create", "namespace", "kueue-system", check=False)
        certs = self.dir / "kueue-certs"
        certs.mkdir(exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=kueue-webhook", "-keyout", str(certs / "tls.key"),
                        "-out", str(certs / "tls.crt")], check=True, capture_output=True)
        # Kueue 0.17 reads its metrics certificate from a fixed path when it does not manage
        # certificates itself (cmd/kueue/main.go): put the test certificate there.
        fixed = Path("/etc/kueue/metrics/certs")
        try:
            fixed.mkdir(parents=True, exist_ok=True)
            for name in ("tls.crt", "tls.key"):
                shutil.copyfile(certs / name, fixed / name)
        except OSError as e:
            raise RuntimeError(f"Kueue needs its metrics certificate in {fixed} and that is not writable "
                               f"here ({e.strerror}); run the Kueue tests as root, as CI does") from None
        health = free_port()
        config = self.dir / "kueue-config.yaml"
        config.write_text(json.dumps({
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": "kueue-system",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
            "webhook": {"port": free_port(), "host": "127.0.0.1", "certDir": str(certs)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": ["batch/job"]},
            **(settings or {}),
        }))
        # Topology-aware scheduling on (the kueue render target uses it); the on-demand
        # visibility API server off (it serves from a fixed certificate path, /visibility).
        self._spawn("kueue", [str(self.assets / "kueue"), f"--config={config}",
                              f"--kubeconfig={self.kubeconfig}", "--zap-log-level=2",
                              "--feature-gates=TopologyAwareScheduling=true,VisibilityOnDemand=false"])
        self._wait_http(f"http://127.0.0.1:{health}/readyz", "kueue", timeout)

    def _wait_http(self, url: str, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{name} exited; see {self.dir / (name + '.log')}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (OSError, urllib.error.URLError) as e:
                last = str(e)
            time.sleep(0.5)
        raise RuntimeError(f"{name} not ready after {timeout}s: {last}; see {self.dir / (name + '.log')}")

    # -- credentials ----------------------------------------------------------
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

    # -- kubectl and HTTP helpers for tests and benchmarks ------------------
    def kubectl_run(self, *args: str, input: str | None = None, check: bool = True,
                    timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        res = subprocess.run([str(self.kubectl), f"--kubeconfig={self.kubeconfig}", *args], input=input,
                             capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {res.stderr.strip()}")
        return res

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl_run(*args, "-o", "json").stdout)

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

    def version(self) -> str:
        status, body = self._get("/version")
        return str(json.loads(body)["gitVersion"]) if status == 200 else ""


# Writes to what intentc writes (the renderer's kinds, Kueue's, the Intent mirror, the
# inventory ConfigMaps, Events, and the Leases in intentc-system) at Metadata level: who,
# which verb, which object, when, and the answer's code.  Everything else is left out:
# reads and watches (most of the traffic), status subresources (controllers' and kwok's
# writes: not listed, so not matched), the nodes' Leases, pods.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {"level": "Metadata", "verbs": ["create", "update", "patch", "delete", "deletecollection"],
         "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}],
         "namespaces": ["intentc-system"]},
        {"level": "Metadata", "verbs": ["create", "update", "patch", "delete", "deletecollection"],
         "resources": [
             {"group": "", "resources": ["namespaces", "configmaps", "services", "resourcequotas", "events"]},
             {"group": "apps", "resources": ["deployments"]},
             {"group": "batch", "resources": ["jobs", "cronjobs"]},
             {"group": "rbac.authorization.k8s.io", "resources": ["rolebindings"]},
             {"group": "scheduling.k8s.io", "resources": ["priorityclasses"]},
             {"group": "kueue.x-k8s.io", "resources": [
                 "resourceflavors", "topologies", "cohorts", "clusterqueues", "localqueues",
                 "workloadpriorityclasses"]},
             {"group": "intentc.dev", "resources": ["intents"]},
             {"group": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"]}]},
        {"level": "None"},
    ],
}

WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"})
WORKLOAD_RESOURCES = frozenset({"namespaces", "rolebindings", "resourcequotas", "priorityclasses", "jobs",
                                "deployments", "services", "configmaps"})


def write_requests(metrics_text: str, resources: frozenset[str] = WORKLOAD_RESOURCES,
                   dry_run: bool = False) -> dict[str, int]:
    """Non-dry-run write requests the API server counted (apiserver_request_total), by verb,
    for the given resources — the API server's own bookkeeping writes (leases, endpoints,
    flow control) are other resources and stay out of the count.  With `dry_run`, the
    dry-run ones (dryRun=All) instead."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, int] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name not in ("apiserver_request", "apiserver_request_total"):
            continue
        for s in family.samples:
            if not s.name.endswith("_total"):
                continue
            lb = s.labels
            if lb.get("verb") in WRITE_VERBS and lb.get("resource") in resources and bool(lb.get("dry_run")) == dry_run:
                out[lb["verb"]] = out.get(lb["verb"], 0) + int(s.value)
    return out


def finished_job_status(job: Any, failed: bool = False, reason: str = "BackoffLimitExceeded",
                        message: str = "Job has reached the specified backoff limit") -> dict[str, Any]:
    """A Job status as the Job controller writes it when the Job ends — the shape a
    1.31+ API server insists on (start/completion times, SuccessCriteriaMet or
    FailureTarget before Complete or Failed, counts that match the spec)."""
    stamp = "2026-01-01T00:00:00Z"
    spec = (job or {}).get("spec") or {}
    completions = int(spec.get("completions") or 1)
    if failed:
        conditions = [{"type": "FailureTarget", "status": "True", "reason": reason, "message": message},
                      {"type": "Failed", "status": "True", "reason": reason, "message": message}]
        return {"startTime": stamp, "failed": int(spec.get("backoffLimit") or 0) + 1, "conditions": conditions}
    status: dict[str, Any] = {
        "startTime": stamp, "completionTime": stamp, "succeeded": completions,
        "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}
    if spec.get("completionMode") == "Indexed":
        status["completedIndexes"] = "0" if completions == 1 else f"0-{completions - 1}"
    return status
