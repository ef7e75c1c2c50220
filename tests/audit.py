"""The API server's audit log, read back: who wrote what, when (issue 39, item 3).

A daemon's own logs say what it *meant* to do; the audit log says what the
API server *did*, stamped by the server's clock.  `KubeEnv(audit=True)`
runs kube-apiserver with `AUDIT_POLICY` (tests/kube_env.py): writes to the
kinds intentc manages, at Metadata level, one JSON event per line.

The split-brain goal is stated on *acting* writes: writes by a daemon
replica to the objects it manages — the workloads, their namespaces and
quotas, the inventory ConfigMaps, Kueue's objects, the Intent mirror.
Lease writes are not acting (both replicas write the election Lease by
design: a follower's takeover attempt, a leader's renewal, the apply lock's
renewals and release), and neither are Events (a courtesy that follows an
acting write, and the new leader's `LeaderElection` Event on the Lease).
Only successful writes count (a 409 changed nothing); `writes` keeps the
refused ones for whoever wants to see them.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
NOT_ACTING = frozenset({"leases", "events"})


@dataclass(frozen=True)
class Write:
    user: str               # the authenticated user (a ServiceAccount per daemon replica)
    verb: str
    resource: str
    namespace: str
    name: str
    code: int               # the answer's HTTP status
    received: datetime      # requestReceivedTimestamp
    done: datetime          # stageTimestamp of ResponseComplete: when the write took effect, or after

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300

    @property
    def acting(self) -> bool:
        return self.ok and self.resource not in NOT_ACTING

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.done.isoformat()} {self.user} {self.verb} {self.resource} {where} -> {self.code}"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def parse(lines: Iterable[str]) -> list[Write]:
    """The completed write requests among audit events (JSON lines), in file order.
    A line cut short by an API server that was stopped while writing it is skipped."""
    out: list[Write] = []
    for line in lines:
        try:
            event: dict[str, Any] = json.loads(line)
        except ValueError:
            continue
        if event.get("stage") != "ResponseComplete" or event.get("verb") not in WRITE_VERBS:
            continue
        ref = event.get("objectRef") or {}
        if ref.get("subresource"):
            continue
        out.append(Write(
            user=str((event.get("user") or {}).get("username") or ""), verb=str(event["verb"]),
            resource=str(ref.get("resource") or ""), namespace=str(ref.get("namespace") or ""),
            name=str(ref.get("name") or ""), code=int((event.get("responseStatus") or {}).get("code") or 0),
            received=_time(event["requestReceivedTimestamp"]), done=_time(event["stageTimestamp"])))
    return out


def read(path: Path, since: datetime | None = None) -> list[Write]:
    """The writes in the audit log at `path` (none when it does not exist yet), those
    received at or after `since` when given."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8", errors="replace") as f:
        writes = parse(f)
    return [w for w in writes if since is None or w.received >= since]


def acting(writes: Iterable[Write], users: Iterable[str]) -> list[Write]:
    """The acting writes by `users` (the daemon replicas), ordered by when they took effect."""
    who = frozenset(users)
    return sorted((w for w in writes if w.acting and w.user in who), key=lambda w: (w.done, w.received))


def by_user(writes: Iterable[Write]) -> dict[str, int]:
    """How many successful writes each user made (acting or not)."""
    return dict(Counter(w.user for w in writes if w.ok))


def runs(ordered: Sequence[Write]) -> list[tuple[str, int]]:
    """The writers of `ordered` (acting writes in time order) as runs: [(user, writes in the run)]."""
    out: list[tuple[str, int]] = []
    for w in ordered:
        if out and out[-1][0] == w.user:
            out[-1] = (w.user, out[-1][1] + 1)
        else:
            out.append((w.user, 1))
    return out


def overlapping_windows(ordered: Sequence[Write]) -> int:
    """Windows in which two replicas wrote: with one leader at a time the writers of
    the acting writes, in the server's order, form one run per term (A's writes, then
    B's from the takeover on, ...), and a replica whose term ended never writes again
    (each start of a daemon is a new user here: a restart cannot be told apart from a
    new term otherwise).  Every run of a writer that already had one is such a window:
    the old leader wrote after its successor had.  0 is the goal."""
    seen: set[str] = set()
    windows = 0
    for user, _ in runs(ordered):
        if user in seen:
            windows += 1
        seen.add(user)
    return windows


def after_first(ordered: Sequence[Write], new: str, old: str) -> list[Write]:
    """Acting writes by `old` that took effect after `new`'s first one (the cut-off
    leader writing after its successor started): [] is the goal."""
    first = next((w.done for w in ordered if w.user == new), None)
    if first is None:
        return []
    return [w for w in ordered if w.user == old and w.done >= first]


def summary(writes: Sequence[Write], users: Iterable[str]) -> dict[str, Any]:
    """Counts for a report: successful writes per user, acting writes per replica, windows."""
    who = tuple(users)
    ordered = acting(writes, who)
    return {"writes_by_user": by_user(writes),
            "acting_by_replica": {u: sum(1 for w in ordered if w.user == u) for u in who},
            "lease_writes_by_replica": {u: sum(1 for w in writes if w.ok and w.user == u and w.resource == "leases")
                                        for u in who},
            "writer_runs": [[u, n] for u, n in runs(ordered)],
            "overlapping_windows": overlapping_windows(ordered)}
