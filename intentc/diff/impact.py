"""What a change does to a running intent: the one question a reviewer asks first.

Classes, most disruptive first (an intent gets the first that applies):

* ``capacity``      - the head plan cannot place it any more;
* ``reschedule``    - its placement (nodes / GPU set) moves;
* ``restart``       - its rendered objects change: a different object set, or
                      a changed ``spec`` (image, command, resources, env, ...),
                      so running pods are replaced;
* ``metadata-only`` - labels/annotations change, or nothing rendered changes
                      at all (tags, drift policy, the planner's duration estimate).

"Rendered objects" is decided by the renderer itself: both versions of the
intent are rendered with the plan of their side, stamps removed, and compared.
Only changed intents are rendered, so this stays cheap on large repositories.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping

from intentc.diff.intents import DeclChange, Status
from intentc.ir import Intent, Program, Topology
from intentc.plan.model import Metrics, Plan
from intentc.policy import BUILTIN, Policies
from intentc.render import render
from intentc.render.capabilities import DEFAULT_KUBE_VERSION
from intentc.render.stamp import canonical_json, unstamped
from intentc.render.targets import DEFAULT_TARGET, get_target

ZERO_SHA = "0" * 40
# Fallback when the renderer cannot render an intent (it is broken on one side):
# fields whose change never reaches a pod spec.
METADATA_FIELDS = ("context.tags", "context.drift", "constraints.duration", "constraints.tolerance",
                   "trigger.after")


class ImpactClass(str, enum.Enum):
    CAPACITY = "capacity"
    RESCHEDULE = "reschedule"
    RESTART = "restart"
    METADATA_ONLY = "metadata-only"

    @property
    def rank(self) -> int:
        return list(ImpactClass).index(self)


@dataclass(frozen=True)
class Impact:
    intent: str
    impact: ImpactClass
    reasons: tuple[str, ...]
    changed: bool               # the intent itself changed (False: moved because of others)


def _plan_for(name: str, wave: int) -> Plan:
    """A plan without a topology: the intent in its wave, no placement."""
    return Plan("", tuple(() for _ in range(wave)) + ((name,),), (), (), (),
                Metrics(0, 0, 0, 0, 1.0, 0))


def rendered_objects(program: Program, intent: Intent, plan: Plan | None, wave: int,
                     target: str = DEFAULT_TARGET, topology: Topology | None = None,
                     policies: Policies = BUILTIN) -> dict[str, Any]:
    """ObjectRef text -> unstamped body of the objects rendered for one intent by `target`
    (for the oldest Kubernetes the target renders for)."""
    sub = Program(program.tenants, program.datasets, (intent,), ())
    if plan is None or intent.name not in {n for w in plan.waves for n in w}:
        plan = _plan_for(intent.name, wave)
    req = get_target(target).requirement
    version = max(DEFAULT_KUBE_VERSION, req.min_kube) if req is not None and req.min_kube else DEFAULT_KUBE_VERSION
    out = render(sub, plan, ZERO_SHA, version, target, topology, policies)
    return {str(m.ref): unstamped(m.body) for m in out.manifests if m.intent == intent.name}


def _render_class(base: Mapping[str, Any], head: Mapping[str, Any]) -> tuple[ImpactClass, str]:
    if set(base) != set(head):
        gone, new = sorted(set(base) - set(head)), sorted(set(head) - set(base))
        return ImpactClass.RESTART, "objects replaced: " + ", ".join([f"-{r}" for r in gone] + [f"+{r}" for r in new])
    spec = [r for r in sorted(base) if canonical_json(base[r].get("spec")) != canonical_json(head[r].get("spec"))]
    if spec:
        return ImpactClass.RESTART, "spec changes in " + ", ".join(spec)
    meta = [r for r in sorted(base) if canonical_json(base[r]) != canonical_json(head[r])]
    if meta:
        return ImpactClass.METADATA_ONLY, "metadata changes in " + ", ".join(meta)
    return ImpactClass.METADATA_ONLY, "no rendered object changes"


def _field_class(change: DeclChange) -> tuple[ImpactClass, str]:
    spec = [c.path for c in change.changes if not c.path.startswith(METADATA_FIELDS)]
    if spec:
        return ImpactClass.RESTART, "changed: " + ", ".join(spec)
    return ImpactClass.METADATA_ONLY, "changed: " + ", ".join(c.path for c in change.changes)


@dataclass(frozen=True)
class SideState:
    program: Program
    plan: Plan | None
    wave_of: Mapping[str, int]
    target: str = DEFAULT_TARGET
    topology: Topology | None = None
    policies: Policies = BUILTIN

    def objects(self, intent: Intent) -> dict[str, Any]:
        return rendered_objects(self.program, intent, self.plan, self.wave_of.get(intent.name, 0),
                                self.target, self.topology, self.policies)


def classify(changes: list[DeclChange], base: SideState, head: SideState,
             moved: Mapping[str, str], unplaceable: Mapping[str, str],
             ruled: Mapping[str, tuple[str, ...]] | None = None) -> tuple[Impact, ...]:
    """Impact of every changed or renamed intent, and of unchanged intents the plan moves
    or whose tag rules changed.  `moved`: intent -> "old -> new" placement text;
    `unplaceable`: intent -> planner message; `ruled`: intent -> its tags whose rule changed."""
    out: dict[str, Impact] = {}
    for c in changes:
        if c.kind != "intent" or c.status not in (Status.CHANGED, Status.RENAMED):
            continue
        if c.status is Status.RENAMED:
            klass, why = ImpactClass.RESTART, f"renamed from {c.old_name}: its objects are replaced"
        else:
            klass, why = _classify_render(c, base, head)
        out[c.name] = Impact(c.name, klass, (why,), True)
    for name, tags in sorted((ruled or {}).items()):
        b, h = base.program.intent(name), head.program.intent(name)
        if name in out or b is None or h is None:
            continue        # changed itself (rendered with each side's rules above), added or removed
        found = _rendered_class(b, h, base, head)
        if found is not None:
            out[name] = Impact(name, found[0], (f"tag rule {', '.join(tags)} changed: {found[1]}",), False)
    for name, text in sorted(moved.items()):
        prior = out.get(name)
        out[name] = Impact(name, ImpactClass.RESCHEDULE, (prior.reasons if prior else ()) +
                           (f"placement moves: {text}",), prior is not None)
    for name, message in sorted(unplaceable.items()):
        prior = out.get(name)
        out[name] = Impact(name, ImpactClass.CAPACITY, (prior.reasons if prior else ()) +
                           (f"no longer placeable: {message}",), prior is not None)
    return tuple(sorted(out.values(), key=lambda i: (i.impact.rank, i.intent)))


def _classify_render(c: DeclChange, base: SideState, head: SideState) -> tuple[ImpactClass, str]:
    b, h = base.program.intent(c.name), head.program.intent(c.name)
    found = _rendered_class(b, h, base, head) if b is not None and h is not None else None
    return found if found is not None else _field_class(c)


def _rendered_class(b: Intent, h: Intent, base: SideState, head: SideState) -> tuple[ImpactClass, str] | None:
    """The impact of one intent as each side renders it, or None when a side cannot:
    the renderer trusts a program that compiles, and the head may have errors (which
    the CLI reports)."""
    try:
        return _render_class(base.objects(b), head.objects(h))
    except Exception:  # noqa: BLE001
        return None
