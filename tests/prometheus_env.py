"""A real Prometheus server on loopback, scraping test exporters, for tests that query it.

The binary is the test bed's `prometheus` (`hack/testenv/setup` builds it from its Go
module beside kube-apiserver and the rest, without the web UI: the HTTP API only).
`PrometheusEnv` writes a configuration with one static scrape job over the given
``host:port`` targets (path ``/metrics``), starts the server on a free loopback port
with its storage under the work directory, and waits for ``/-/ready``:

    with PrometheusEnv(assets, tmp_path, [exporter.target]) as prom:
        prom.query('up')          # or any client against prom.url + "/api/v1/query"

The targets are fixed for the server's life (restart it for others).  Start-up
failures say why, with the end of the server's log.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import IO, Any, Sequence

from tests.kube_env import _lost_a_port, _stop, free_port

LOG_TAIL_LINES = 30


def _log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _duration(seconds: float) -> str:
    """A Prometheus duration ("1500ms") for `seconds` (at least 1 ms)."""
    return f"{max(1, round(seconds * 1000))}ms"


class PrometheusEnv:
    def __init__(self, assets: Path, workdir: Path, targets: Sequence[str],
                 scrape_interval_s: float = 1.0) -> None:
        self.assets = assets
        self.dir = workdir
        self.targets = list(targets)
        self.scrape_interval_s = scrape_interval_s
        self.port = 0
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.dir / "prometheus.log"
        self.config = self.dir / "prometheus.yml"
        self._log_file: IO[bytes] | None = None

    @property
    def binary(self) -> Path:
        return self.assets / "prometheus"

    # -- lifecycle --------------------------------------------------------
    def start(self, timeout: float = 60.0, attempts: int = 3) -> str:
        """Start the server and wait until it is ready; its base URL."""
        if not self.binary.is_file():
            raise RuntimeError(f"no prometheus in {self.assets} (test-bed binaries built before it was added?): "
                               'run export KUBEBUILDER_ASSETS="$(hack/testenv/setup)"')
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config.write_text(self.config_text())
        for attempt in range(attempts):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self._spawn()
            try:
                self.wait_ready(timeout)
                return self.url
            except RuntimeError:
                self.stop()
                if attempt + 1 == attempts or not _lost_a_port(self.log):
                    raise
                # the port was taken between free_port() and the bind: another port, a fresh
                # log (so the next failure is read from its own), the same storage
                self.log.unlink(missing_ok=True)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> "PrometheusEnv":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def config_text(self) -> str:
        """prometheus.yml (JSON is YAML): one static job scraping `targets` at the interval."""
        interval = _duration(self.scrape_interval_s)
        return json.dumps({
            "global": {"scrape_interval": interval, "scrape_timeout": interval,
                       "evaluation_interval": interval},
            "scrape_configs": [{"job_name": "test", "metrics_path": "/metrics",
                                "static_configs": [{"targets": self.targets}]}],
        }, indent=2) + "\n"

    def _spawn(self) -> None:
        self._log_file = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [str(self.binary), f"--config.file={self.config}",
             f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=1d", "--log.level=info"],
            stdout=self._log_file, stderr=subprocess.STDOUT, cwd=self.dir)

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(f"prometheus exited (code {code}); {self.log}:\n{_log_tail(self.log)}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        return
                    last = str(resp.status)
            except urllib.error.HTTPError as e:
                last = f"{e.code} {e.read()[:200].decode(errors='replace')}"
            except OSError as e:
                last = str(e)
            time.sleep(0.3)
        raise RuntimeError(f"prometheus not ready after {timeout}s ({last}); {self.log}:\n{_log_tail(self.log)}")

    # -- the HTTP API -----------------------------------------------------
    def api(self, path: str, params: dict[str, str] | None = None, timeout: float = 10.0) -> Any:
        """GET /api/v1/PATH: the answer's `data`; an error answer raises RuntimeError."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"{}")
        if body.get("status") != "success":
            raise RuntimeError(f"{url}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector: [{"metric": {...}, "value": [time, "value"]}, ...]."""
        data = self.api("query", {"query": expr})
        if data.get("resultType") != "vector":
            raise RuntimeError(f"{expr!r} is a {data.get('resultType')}, not an instant vector")
        return list(data["result"])

    def targets_up(self) -> dict[str, str]:
        """Scrape target "host:port" → health ("up", "down", "unknown")."""
        active = self.api("targets", {"state": "active"})["activeTargets"]
        return {t["labels"]["instance"]: t["health"] for t in active}
