"""Where the live binding differs from the preview, as `intentc diff --kubeconfig` shows it (pure).

The plan CI writes is a preview on the empty topology; `apply` binds it on
what the cluster has free (`reconcile.live_binding`).  A reviewer asking
"what would apply do now" wants the same answer `apply --dry-run` prints,
next to the semantic diff: per intent whose GPUs would change, the
preview's nodes/GPUs, the live ones and why (the node is cordoned, its GPUs
are held by a pod this target does not own, ...); the intents that fit
nowhere now (their wave would wait); the running Jobs kept where they run.

`cli/diff.py` reads the cluster and binds; this module holds the result as
plain data and its text / JSON / markdown / github views.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from intentc.diagnostics import Span
from intentc.plan.model import NodeAllocation
from intentc.plan.rebind import BindingChange, Blocked


@dataclass(frozen=True)
class Rebinding:
    """One intent bound elsewhere than the preview, and why."""

    change: BindingChange
    span: Span | None = None          # the intent's declaration in the head revision


@dataclass(frozen=True)
class Waiting:
    """An intent the live cluster cannot hold now: apply would wait for room."""

    blocked: Blocked
    span: Span | None = None


@dataclass(frozen=True)
class LiveBindingDiff:
    cluster: str                               # the context or server read
    bound: bool = True                         # False: nothing to bind to, apply uses the preview as is
    rebindings: tuple[Rebinding, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    kept: tuple[tuple[str, str], ...] = ()     # (object, why): runs from the preview's content, left there
    remarks: tuple[str, ...] = ()              # intents left as previewed although they moved, and why
    notes: tuple[str, ...] = ()                # what the cluster leaves out, one line per node / pod
    intents: int = 0                           # intents bound

    @property
    def equal(self) -> bool:
        """Apply would create exactly the preview's binding."""
        return not (self.rebindings or self.waiting or self.kept or self.remarks)

    def headline(self) -> str:
        if not self.bound:
            return f"live binding on {self.cluster}: none ({self.notes[0] if self.notes else 'preview as is'})"
        if self.equal:
            return f"live binding on {self.cluster}: equals the preview ({self.intents} intent(s))"
        parts = [f"{len(self.rebindings)} intent(s) bound elsewhere than the preview"]
        if self.waiting:
            parts.append(f"{len(self.waiting)} do not fit now")
        if self.kept:
            parts.append(f"{len(self.kept)} object(s) kept where they run")
        return f"live binding on {self.cluster}: {', '.join(parts)}"

    def lines(self) -> list[str]:
        """The detail, one line each, in the words `apply` reports them."""
        return ([f"rebind {r.change.text()}" for r in self.rebindings]
                + [f"wait {w.blocked.text()}" for w in self.waiting]
                + [f"kept {ref}: {why}" for ref, why in self.kept] + list(self.remarks))


def _alloc(a: NodeAllocation) -> dict[str, Any]:
    return {"node": a.node, "gpus": list(a.gpus)}


def to_json_obj(b: LiveBindingDiff) -> dict[str, Any]:
    return {
        "cluster": b.cluster, "bound": b.bound, "equal": b.equal, "intents": b.intents,
        "rebindings": [{"intent": r.change.intent, "preview": [_alloc(a) for a in r.change.preview],
                        "live": [_alloc(a) for a in r.change.live], "reasons": list(r.change.reasons)}
                       for r in b.rebindings],
        "waiting": [{"intent": w.blocked.intent, "reason": w.blocked.reason, "message": w.blocked.message}
                    for w in b.waiting],
        "kept": [{"object": ref, "why": why} for ref, why in b.kept],
        "remarks": list(b.remarks),
        "notes": list(b.notes),
    }


def text_lines(b: LiveBindingDiff) -> list[str]:
    return [b.headline()] + [f"  {line}" for line in b.lines()]


def markdown_lines(b: LiveBindingDiff) -> list[str]:
    out = ["", f"**{b.headline()}**"]
    if b.lines():
        out += [""] + [f"- {line.replace('|', chr(92) + '|')}" for line in b.lines()]
    return out


def github_commands(b: LiveBindingDiff) -> list[str]:
    """The headline on the run; one warning per intent that moves or waits, at its declaration."""
    from intentc.diagnostics import github as gh

    out = [gh.command(gh.Level.NOTICE, b.headline(), title="intentc diff: live binding")]
    out += [gh.command(gh.Level.WARNING, f"live binding differs from the preview: {r.change.text()}", r.span,
                       f"intentc diff: {r.change.intent} bound elsewhere on {b.cluster}") for r in b.rebindings]
    out += [gh.command(gh.Level.WARNING, w.blocked.text(), w.span,
                       f"intentc diff: {w.blocked.intent} waits on {b.cluster}") for w in b.waiting]
    out += [gh.command(gh.Level.NOTICE, line, title="intentc diff: live binding")
            for line in [f"kept {ref}: {why}" for ref, why in b.kept] + list(b.remarks)]
    return out
