"""`intentc drift --clusters`: one row per cluster, and the fleet's exit code.

A row says whether the cluster could be reached and compared, whether it is
in sync, how many objects drifted (by class) and the commit its inventory
last applied (its head).  The exit code is the worst of the rows, by the
conventions every command follows: 2 when a cluster could not be compared
(unreachable, refused, unreadable inventory, intents that do not compile
for it), else 1 when one drifted, else 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

EXIT_OK, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Row:
    cluster: str
    target: str                       # render target
    reachable: bool
    error: str | None = None          # why it could not be compared
    objects: int = 0
    drifted: int = 0
    counts: tuple[tuple[str, int], ...] = ()    # drift class -> objects, drifted classes only
    head: str | None = None           # the commit the cluster's inventory last applied
    findings: tuple[dict[str, object], ...] = field(default=(), compare=False)

    @property
    def in_sync(self) -> bool:
        return self.error is None and self.drifted == 0

    @property
    def exit_code(self) -> int:
        return EXIT_ERROR if self.error is not None else EXIT_DRIFT if self.drifted else EXIT_OK

    def to_json(self) -> dict[str, object]:
        return {"cluster": self.cluster, "renderTarget": self.target, "reachable": self.reachable,
                "error": self.error, "inSync": self.in_sync, "objects": self.objects, "drifted": self.drifted,
                "counts": dict(self.counts), "head": self.head, "findings": list(self.findings)}


def exit_code(rows: list[Row]) -> int:
    return max((r.exit_code for r in rows), default=EXIT_OK)


def to_text(rows: list[Row], commit: str) -> str:
    lines = [f"intentc drift: fleet of {len(rows)} clusters, commit {commit[:12]}",
             f"  {'CLUSTER':<20} {'REACHABLE':<9} {'IN SYNC':<7} {'DRIFTED':>7}  {'HEAD':<12}  DETAIL"]
    for r in rows:
        detail = r.error or ", ".join(f"{n} {c}" for c, n in r.counts) or f"{r.objects} objects"
        lines.append(f"  {r.cluster:<20} {'yes' if r.reachable else 'no':<9} {'yes' if r.in_sync else 'no':<7} "
                     f"{r.drifted:>7}  {(r.head or '-')[:12]:<12}  {detail}")
    bad = [r.cluster for r in rows if not r.in_sync]
    lines.append(f"fleet: {len(rows) - len(bad)} of {len(rows)} clusters in sync"
                 + (f"; not: {', '.join(bad)}" if bad else ""))
    return "\n".join(lines) + "\n"


def to_json(rows: list[Row], commit: str) -> str:
    doc = {"commit": commit, "clusters": [r.to_json() for r in rows], "exitCode": exit_code(rows),
           "inSync": all(r.in_sync for r in rows)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
