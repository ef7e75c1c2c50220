"""`intentc daemon` as a child process, for the tests that run it the way its Deployment
does: replicas on one target (tests/test_daemon_ha_kube.py), each as a ServiceAccount of
its own and under faults (tests/test_daemon_partition_kube.py,
tests/test_daemon_kueue_faults_kube.py).  How one is started, asked over HTTP, read from
its log and stopped, and who holds a target's election Lease.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from intentc.daemon.election import election_ref
from intentc.kube.client import KubeClient
from tests.kube_env import free_port

ROOT = Path(__file__).resolve().parent.parent


class DaemonProc:
    """`intentc daemon` following branch main of the repository at `repo` for `target`, as
    POD_NAME `name`: its probes (and, unless `extra` says otherwise, /metrics) on a port of
    its own, polling every second, its JSON log in `tmp/<name>.log` and its work directory
    `tmp/work-<name>`.  `extra`: the test's own flags (election timings, the render target...)."""

    def __init__(self, name: str, repo: Path, target: str, kubeconfig: Path, tmp: Path, *extra: str,
                 topology: str = "clusters/small.yaml") -> None:
        self.name, self.port, self.log = name, free_port(), tmp / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo), "--branch", "main",
             "-t", topology, "--kubeconfig", str(kubeconfig), "--target", target,
             "--listen", f"127.0.0.1:{self.port}", "--interval", "1", "--resync", "30",
             "--workdir", str(tmp / f"work-{name}"), "--log-format", "json", *extra],
            cwd=ROOT, env=dict(os.environ, POD_NAME=name), stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def get(self, path: str) -> tuple[int, str]:
        """GET `path` on its probe port: (status, body), an error status included."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def messages(self) -> list[str]:
        """What it logged so far, one message a line (a line that is not JSON as it is)."""
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(str(json.loads(line)["msg"]))
            except (ValueError, KeyError):
                out.append(line)
        return out

    def kill(self) -> None:
        """SIGKILL: no release of anything it holds."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> int | None:
        """SIGTERM (SIGKILL after a minute), unless it has ended; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def holder(c: KubeClient, target: str) -> str:
    """The holderIdentity of `target`'s election Lease ("" when none)."""
    lease = c.get(election_ref(target)) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")
