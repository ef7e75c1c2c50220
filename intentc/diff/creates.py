"""What the chosen render target will create for each added or changed intent.

A reviewer of `--render-target kueue` or `dra` sees objects that
`device-plugin` never makes (a ResourceClaimTemplate per pod template, one
Job per node where index sets differ, a suspended Job in a queue); the diff
lists them per intent, by kind and name, as the head side renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

from intentc.diff.impact import SideState
from intentc.diff.intents import DeclChange, Status


@dataclass(frozen=True)
class IntentObjects:
    intent: str
    status: str                   # added | changed | renamed
    objects: tuple[str, ...]      # "Kind namespace/name", in apply order


def target_objects(changes: list[DeclChange] | tuple[DeclChange, ...], head: SideState) -> tuple[IntentObjects, ...]:
    out = []
    for c in changes:
        if c.kind != "intent" or c.status is Status.REMOVED:
            continue
        intent = head.program.intent(c.name)
        if intent is None:
            continue
        try:
            objects = head.objects(intent)
        except Exception:  # noqa: BLE001 - an intent the head cannot render is reported by its diagnostics
            continue
        out.append(IntentObjects(c.name, c.status.value, tuple(objects)))
    return tuple(sorted(out, key=lambda o: o.intent))
