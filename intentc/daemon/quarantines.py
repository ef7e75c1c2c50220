"""The quarantine as the daemon keeps it: read, counted, and cleared by a good commit.

A commit that was rolled back is quarantined (`drift/quarantine.py`, a
ConfigMap per target) so the daemon does not apply it again; a newer commit
that rolls out consistently clears the entries it descends from.  The
`intentc_quarantined_commits` gauge follows every read, so it says what the
cluster records, also after a restart.  This acts (reads and writes the
ConfigMap); the reactor (`loop.py`) calls it on its own thread.
"""

from __future__ import annotations

import logging

from intentc.daemon.metrics import DaemonMetrics
from intentc.drift import quarantine
from intentc.drift.detect import History
from intentc.drift.quarantine import Quarantine
from intentc.kube.client import KubeClient

log = logging.getLogger("intentc.daemon")


class QuarantineKeeper:
    def __init__(self, client: KubeClient, target: str, metrics: DaemonMetrics) -> None:
        self.client = client
        self.target = target
        self.metrics = metrics

    def held(self) -> Quarantine:
        """The quarantine as the cluster records it (the gauge follows)."""
        held = quarantine.read(self.client, self.target)
        self.metrics.quarantined.set(len(held.entries))
        return held

    def clear(self, commit: str, history: History) -> None:
        """`commit` rolled out well: lift the entries it clears (`Quarantine.cleared_by`)."""
        held = quarantine.read(self.client, self.target)
        kept = held.cleared_by(commit, history)
        if kept != held:
            quarantine.write(self.client, self.target, kept)
            log.info("commit %s clears the quarantine of %s", commit[:12],
                     ", ".join(e.commit[:12] for e in held.entries if e not in kept.entries))
        self.metrics.quarantined.set(len(kept.entries))
