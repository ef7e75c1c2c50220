"""What an apply did, as data, and its two printed views (text, json)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from intentc.reconcile.diff import Action
from intentc.render.model import short_stamp, step_label
from intentc.objectmeta import ObjectRef

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class ObjectOutcome:
    ref: ObjectRef
    step: int
    action: Action
    ok: bool = True
    written: bool = False             # a write was sent and accepted
    diff: tuple[str, ...] = ()
    message: str = ""
    health: str = ""
    managers: tuple[str, ...] = ()    # other field managers in a conflict

    def to_json(self) -> dict[str, Any]:
        return {**self.ref.to_json(), "step": step_label(self.step), "action": self.action.value,
                "ok": self.ok, "written": self.written, "diff": list(self.diff),
                "message": self.message, "health": self.health, "conflictManagers": list(self.managers)}


@dataclass(frozen=True)
class ApplyResult:
    target: str
    commit: str
    kube_version: str
    dry_run: bool
    objects: tuple[ObjectOutcome, ...]
    result: str                        # succeeded | failed | error
    health: str = "Unknown"
    message: str = ""
    inventory_written: bool = False
    binding: tuple[str, ...] = ()      # where the live binding differs from the preview, and why

    @property
    def exit_code(self) -> int:
        return {"succeeded": EXIT_OK, "failed": EXIT_FAILED}.get(self.result, EXIT_ERROR)

    def counts(self) -> dict[str, int]:
        c = Counter(o.action.value for o in self.objects if o.ok)
        c["failed"] = sum(not o.ok for o in self.objects)
        return {k: v for k, v in sorted(c.items()) if v}

    @property
    def writes(self) -> int:
        return sum(o.written for o in self.objects)

    def to_json(self) -> str:
        doc = {"target": self.target, "commit": self.commit, "kubeVersion": self.kube_version,
               "dryRun": self.dry_run, "result": self.result, "health": self.health,
               "message": self.message, "counts": self.counts(),
               "inventoryWritten": self.inventory_written, "binding": list(self.binding),
               "objects": [o.to_json() for o in self.objects]}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    def to_text(self) -> str:
        mode = " (dry run: nothing written)" if self.dry_run else ""
        lines = [f"intentc apply: target {self.target}, commit {short_stamp(self.commit)}, "
                 f"Kubernetes {self.kube_version}{mode}"]
        for o in self.objects:
            verb = o.action.value if o.ok else "FAILED"
            line = f"  {verb:<10} {o.ref}"
            if o.message:
                line += f": {o.message}"
            lines.append(line)
            lines.extend(f"               {d}" for d in o.diff)
        lines.extend(f"  binding   {b}" for b in self.binding)
        counts = ", ".join(f"{n} {k}" for k, n in self.counts().items()) or "nothing to do"
        lines.append(f"{self.result}: {counts}; health {self.health}")
        if self.message:
            lines.append(self.message)
        return "\n".join(lines) + "\n"
