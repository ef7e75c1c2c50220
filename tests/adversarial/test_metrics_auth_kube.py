"""/metrics on the test bed: a real `intentc daemon` process, running as the ServiceAccount
of examples/deploy, answers by what the 1.37 API server says of real tokens (TokenRequest,
`kubectl create token`): 200 for a ServiceAccount bound to intentc-metrics-reader, 403
for one that is not, 401 without a token or with garbage.  The daemon's own
ClusterRole must let it ask (TokenReview, SubjectAccessReview): without those rules the
allowed scraper gets a 500, and this test fails."""

from __future__ import annotations

import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.kube_env import KubeEnv, free_port
from tests.kube_support import sigterm, wait_for
from tests.test_drift_kube import DriftRepo

pytestmark = pytest.mark.kube
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "examples" / "deploy"


def get(url: str, token: str | None = None) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE          # the daemon's certificate is self-signed at start
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=15) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:                     # not listening yet
        return 0, str(e)


def token(env: KubeEnv, namespace: str, name: str) -> str:
    return env.kubectl_run("create", "token", name, "-n", namespace, "--duration=10m").stdout.strip()


def test_metrics_need_a_token_allowed_to_get_metrics(kube_env: KubeEnv, tmp_path: Path) -> None:
    env = kube_env
    env.kubectl_run("apply", "-k", str(DEPLOY))      # the daemon's RBAC and intentc-metrics-reader
    env.kubectl_run("create", "namespace", "monitoring")
    for sa in ("prometheus", "nosy"):
        env.kubectl_run("create", "serviceaccount", sa, "-n", "monitoring")
    env.kubectl_run("create", "clusterrolebinding", "prometheus-intentc-metrics",
                    "--clusterrole=intentc-metrics-reader", "--serviceaccount=monitoring:prometheus")
    allowed, denied = token(env, "monitoring", "prometheus"), token(env, "monitoring", "nosy")

    # the daemon as its own ServiceAccount, not as the test bed's admin
    daemon_token = token(env, "intentc-system", "intentc")
    kubeconfig = tmp_path / "intentc-sa.kubeconfig"
    kubeconfig.write_text(env.kubeconfig_text().replace(env.token, daemon_token))
    repo = DriftRepo(tmp_path, env)
    probes, metrics = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "intentc", "daemon", "--repo", str(repo.dir), "--branch", "main",
         "-t", "clusters/small.yaml", "--kubeconfig", str(kubeconfig), "--target", repo.target,
         "--listen", f"127.0.0.1:{probes}", "--metrics-listen", f"127.0.0.1:{metrics}",
         "--no-leader-elect", "--interval", "5", "--workdir", str(tmp_path / "work"), "--log-format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"https://127.0.0.1:{metrics}/metrics"
    try:
        wait_for(lambda: get(url)[0] == 401, 60, "the daemon's HTTPS /metrics")
        assert get(url) == (401, "Unauthorized\n")
        assert get(url, "garbage." + allowed[8:]) == (401, "Unauthorized\n")
        assert get(url, denied) == (403, "Forbidden\n")
        status, text = get(url, allowed)
        assert status == 200, text
        assert "intentc_drift_objects" in text and "intentc_leader 1.0" in text
        # cached: the same answers again
        assert get(url, allowed)[0] == 200 and get(url, denied)[0] == 403
        # the probes stay plain and terse on their own port; /metrics is not served there
        with urllib.request.urlopen(f"http://127.0.0.1:{probes}/healthz", timeout=10) as resp:
            assert resp.read() == b"ok\n"
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{probes}/metrics", timeout=10)
        assert e.value.code == 404
    finally:
        code, out = sigterm(proc)
    assert code == 0, out[-3000:]
    assert "Traceback" not in out
    for secret in (allowed, denied, daemon_token):
        assert secret not in out and secret[-20:] not in out, "a token reached the log"
    assert "system:serviceaccount:monitoring:nosy may not get /metrics" in out, out[-3000:]
