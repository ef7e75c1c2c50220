"""How one daemon is set up: what it follows, where it acts, how often it looks.

Kept apart from the reactor (`loop.py`) so the modules that act for it
(`rollouts.py`, `reads.py`) can read the settings without importing the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from intentc.daemon.leader import Timing
from intentc.render.capabilities import KubeVersion
from intentc.tune.queries import TuneConfig


@dataclass(frozen=True)
class DaemonConfig:
    repo: str
    branch: str = "main"
    paths: tuple[str, ...] = ("intents",)
    topology: str = "clusters/cluster.yaml"
    local: bool = False                 # follow the working tree (hot reload), not the branch
    interval: float = 30.0              # git poll period (s)
    resync: float = 300.0               # full detection period (s)
    forecast_interval: float = 30.0     # at most this often the live forecast reads the cluster (s)
    listen: str | None = "127.0.0.1:9090"      # probes; /metrics too when metrics_secure is off
    # /metrics over HTTPS behind TokenReview + SubjectAccessReview (daemon/secure_metrics.py).
    # Off here, like leader_elect: the CLI turns it on (--metrics-secure is its default).
    metrics_secure: bool = False
    metrics_listen: str | None = None           # HOST:PORT of the HTTPS server (None: none)
    metrics_cert_dir: str | None = None         # tls.crt + tls.key; None: self-signed at start
    target: str = "default"
    workdir: str = "/tmp/intentc-daemon"
    rollout_timeout: float | None = None  # per intent; None: from its duration (reconcile/timeouts)
    prune: bool = False
    kube_version: KubeVersion | None = None
    render_target: str = "device-plugin"
    seed: int = 0
    commit: str | None = None           # local mode: the SHA to stamp (the CLI passes git HEAD)
    watch_timeout: int = 300            # server-side watch timeout (s)
    heal_backoff: tuple[float, float] = (2.0, 300.0)
    only_topology_nodes: bool = False   # live binding: leave GPU nodes the topology file does not list
    cluster: tuple[str, tuple[tuple[str, str], ...]] | None = None   # a fleet's cluster (name, labels): its intents only
    leader_elect: bool = False          # the CLI turns it on; a library caller or test opts in
    leader_timing: Timing = Timing()
    # batch recommendations (daemon/tune_pass.py): off without a Prometheus server to read
    prometheus_url: str | None = None
    tune: TuneConfig = field(default_factory=TuneConfig)
