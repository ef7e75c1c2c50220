"""What kube-scheduler allocated for DRA claims, recorded as it happens.

Claims made from a ResourceClaimTemplate live only as long as their pod: kwok
completes Job pods within seconds and the claim is deleted.  `ClaimRecorder`
keeps a `kubectl get resourceclaims --watch` running and remembers every
allocation it sees, so a test can check them after the Jobs are gone.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

from tests.kube_env import KubeEnv


def allocated_devices(claim: dict[str, Any]) -> tuple[str, tuple[int, ...]] | None:
    """(pool, GPU indices) a claim was allocated, from status.allocation.devices.results
    (the test bed's devices are named gpu-<index>, one pool per node)."""
    results = (claim.get("status", {}).get("allocation") or {}).get("devices", {}).get("results") or []
    if not results:
        return None
    pools = {r["pool"] for r in results}
    assert len(pools) == 1, f"one claim, devices from several pools: {results}"
    return pools.pop(), tuple(sorted(int(r["device"].removeprefix("gpu-")) for r in results))


class ClaimRecorder:
    def __init__(self, env: KubeEnv) -> None:
        self.claims: dict[str, dict[str, Any]] = {}      # namespace/name -> last allocated version
        self._proc = subprocess.Popen(
            [str(env.kubectl), f"--kubeconfig={env.kubeconfig}", "get", "resourceclaims", "-A",
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
                if allocated_devices(obj) is not None:
                    meta = obj["metadata"]
                    self.claims[f"{meta['namespace']}/{meta['name']}"] = obj

    def stop(self) -> dict[str, dict[str, Any]]:
        self._proc.terminate()
        self._proc.wait(10)
        self._thread.join(10)
        return dict(self.claims)
