"""What the daemon remembers about drift between detection passes.

Detection (`drift.detect`) is pure and sees one pass at a time; the daemon
needs three things across passes, kept here as plain data so they can be
tested without a cluster or a thread:

- the latest findings per object (for the drift gauges, and so a pass over a
  few changed objects does not forget the others);
- what was last *said* per object, so a drift is logged once when it appears,
  not on every resync while it lasts;
- when each object may next be healed: a heal that another controller keeps
  undoing (an HPA, an operator, a person) backs off exponentially instead of
  fighting it every pass, and the back-off resets once the object is in sync.

Nothing here talks to Kubernetes; the reactor in `loop.py` acts on what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from intentc.drift.detect import DriftClass, Finding
from intentc.drift.policy import Decision, Verb
from intentc.render.model import Manifest
from intentc.objectmeta import ObjectRef


@dataclass
class DriftLedger:
    backoff: tuple[float, float] = (2.0, 300.0)            # first and longest delay between heals (s)
    findings: dict[ObjectRef, tuple[Finding, ...]] = field(default_factory=dict)
    _said: dict[ObjectRef, tuple[Finding, ...]] = field(default_factory=dict)
    _heal_at: dict[ObjectRef, tuple[float, float]] = field(default_factory=dict)   # next allowed, delay

    def record(self, found: Iterable[Finding], refs: set[ObjectRef] | None) -> list[Finding]:
        """Take one pass's findings (over `refs`, or everything when None) and
        return the drift findings not reported before, to be logged."""
        if refs is None:
            self.findings = {}
        else:
            for r in refs:
                self.findings.pop(r, None)
        grouped: dict[ObjectRef, list[Finding]] = {}
        for f in found:
            grouped.setdefault(f.ref, []).append(f)
        new: list[Finding] = []
        for ref, group in grouped.items():
            before = self._said.get(ref)
            self.findings[ref] = self._said[ref] = tuple(group)
            if all(f.drift is DriftClass.IN_SYNC for f in group):
                self._heal_at.pop(ref, None)     # back in sync: the next heal is not backed off
            new += [f for f in group if f.drift is not DriftClass.IN_SYNC and (before is None or f not in before)]
        return new

    def counts(self) -> dict[DriftClass, int]:
        """Objects per drift class (an object with two kinds of drift counts in both)."""
        counts = {cls: 0 for cls in DriftClass}
        for group in self.findings.values():
            for cls in {f.drift for f in group}:
                counts[cls] += 1
        return counts

    def heals_due(self, decisions: Iterable[Decision], desired: Mapping[ObjectRef, Manifest],
                  applied: set[ObjectRef], now: float) -> list[tuple[Decision, Manifest]]:
        """The heals to run now, each charged to its object's back-off.

        A missing object that was never applied is skipped: its wave was not
        reached, so it is a rollout to finish, not drift to undo.
        """
        due: list[tuple[Decision, Manifest]] = []
        for d in decisions:
            if d.verb is not Verb.HEAL:
                continue
            ref = d.finding.ref
            manifest = desired.get(ref)
            if manifest is None or (d.finding.drift is DriftClass.MISSING and ref not in applied):
                continue
            next_at, delay = self._heal_at.get(ref, (0.0, self.backoff[0]))
            if now < next_at:
                continue
            self._heal_at[ref] = (now + delay, min(delay * 2, self.backoff[1]))
            due.append((d, manifest))
        return due
