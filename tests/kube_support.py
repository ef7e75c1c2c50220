"""Helpers for tests on the whole control plane: waiting, and watching what happens.

`WatchRecorder` records objects as the API server reports them over time.

Some evidence lives only briefly: a claim made from a ResourceClaimTemplate
is deleted with its pod, and kwok completes Job pods within seconds; the
order in which Kueue admits workloads is only visible while it happens.
`WatchRecorder` keeps `kubectl get RESOURCE -A --watch -o json` running and
keeps every version it sees, in order, so tests can check after the fact.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from typer.testing import CliRunner

from intentc.cli import app
from tests.kube_env import KubeEnv


class WatchRecorder:
    def __init__(self, env: KubeEnv, resource: str) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [str(env.kubectl), f"--kubeconfig={env.kubeconfig}", "get", resource, "-A",
             "--watch", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        decoder, buf = json.JSONDecoder(), ""
        for line in self._proc.stdout:
            buf += line
            while buf.strip():
                try:
                    obj, end = decoder.raw_decode(buf.lstrip())
                except json.JSONDecodeError:
                    break
                buf = buf.lstrip()[end:]
                with self._lock:
                    self.events.append(obj)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def stop(self) -> list[dict[str, Any]]:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)
        return self.snapshot()


def allocated_devices(claim: dict[str, Any]) -> tuple[str, tuple[int, ...]] | None:
    """(pool, GPU indices) a ResourceClaim was allocated, from status.allocation.devices.results
    (the test bed's devices are named gpu-<index>, one pool per node)."""
    results = (claim.get("status", {}).get("allocation") or {}).get("devices", {}).get("results") or []
    if not results:
        return None
    pools = {r["pool"] for r in results}
    assert len(pools) == 1, f"one claim, devices from several pools: {results}"
    return pools.pop(), tuple(sorted(int(r["device"].removeprefix("gpu-")) for r in results))


def allocated_claims(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """namespace/name → the last version of each claim that had an allocation."""
    out = {}
    for obj in events:
        if allocated_devices(obj) is not None:
            out[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj
    return out


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    """Poll until `predicate()` is truthy and return it; fail saying what was awaited."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: {last!r}")


def recorded_jobs(env: Any, namespace: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The Jobs of `namespace` once the Job controller has recorded the end of every Job whose
    pods have all succeeded.  `apply --wait` counts a Job done from its pods, a batch period
    (a second) before the controller writes `Complete` and `completionTime`."""
    def recorded() -> list[dict[str, Any]] | None:
        pods = env.kubectl_json("get", "pods", "-n", namespace)["items"]
        owners: dict[str, set[str]] = {}
        for p in pods:
            name = (p["metadata"].get("labels") or {}).get("job-name")
            if name:
                owners.setdefault(name, set()).add(str(p["status"].get("phase")))
        items = env.kubectl_json("get", "jobs", "-n", namespace)["items"]
        late = [j for j in items if owners.get(j["metadata"]["name"]) == {"Succeeded"}
                and not (j.get("status") or {}).get("completionTime")]
        return None if late else items
    return wait_for(recorded, timeout, f"the Job controller to record the Jobs' completion in {namespace}")


def finished_at(env: Any, namespace: str, selector: str) -> float:
    """When the last container of the pods `selector` picks ended (its `finishedAt`), Unix seconds:
    the moment a Job of those pods succeeded, before its `completionTime` is written."""
    pods = env.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]
    return max(datetime.fromisoformat(c["state"]["terminated"]["finishedAt"].replace("Z", "+00:00")).timestamp()
               for p in pods for c in p["status"]["containerStatuses"])


def sigterm(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> tuple[int, str]:
    """Stop a daemon subprocess the way the kubelet does; its exit code and output."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return code, proc.stdout.read().decode() if proc.stdout else ""


def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit code, stdout, stdout and stderr); never a traceback."""
    res = CliRunner().invoke(app, list(args))
    assert "Traceback" not in res.output, res.output
    return res.exit_code, res.stdout, res.output


def apply_json(intents: Path, topology: Path, env: KubeEnv, target: str, commit: str,
               *flags: str) -> tuple[int, dict[str, Any], str]:
    """`intentc apply INTENTS -o json --only-topology-nodes` of `commit` to `target` on `env`
    (in-process): the exit code, the JSON document it printed ({} when none), all it said."""
    code, out, output = invoke("apply", str(intents), "-t", str(topology), "--kubeconfig", str(env.kubeconfig),
                               "--commit", commit, "--target", target, "-o", "json", "--only-topology-nodes", *flags)
    start = out.find("{")
    return code, (json.loads(out[start:]) if start >= 0 else {}), output
