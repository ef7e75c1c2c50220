"""`throughput_mode` has an effect wherever it is accepted (issue 38): on a serve action it picks the
batch growth and the autoscaler (docs/sizing.md); on a Job's action it would change nothing, so
`intentc check` refuses it at the key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INTENT = """\
tenant team-a { tier: gold }

intent offline {
  trigger: on push
  action: KIND model "m" image "ghcr.io/acme/vllm:0.6"EXTRA {
    batch: 32
    throughput_mode: burst
  }
  context: tenant team-a
  constraints: gpus 1
}
"""


def check(tmp_path: Path, kind: str, extra: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "all.intent").write_text(INTENT.replace("KIND", kind).replace("EXTRA", extra))
    return subprocess.run([sys.executable, "-m", "intentc", "check", "all.intent"], cwd=tmp_path,
                          capture_output=True, text=True,
                          env={"INTENTC_CACHE_DIR": "", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                               "PYTHONPATH": str(ROOT)})


def test_a_job_action_refuses_it_at_the_key(tmp_path: Path) -> None:
    for kind in ("inference", "training"):
        out = check(tmp_path, kind)
        assert out.returncode == 1, out.stdout + out.stderr
        assert (f"all.intent:7:22: error[E0419]: `throughput_mode` applies to serve actions only, not {kind}"
                in out.stdout), out.stdout
        assert "   7 |     throughput_mode: burst" in out.stdout


def test_a_serve_action_takes_it(tmp_path: Path) -> None:
    out = check(tmp_path, "serve", " replicas 1 port 8000")
    assert out.returncode == 0, out.stdout + out.stderr
