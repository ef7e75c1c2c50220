"""The cross-reference passes for an edit of names or references, judged from the edit.

An edit that adds, removes or renames an intent, or changes an `after`, a consumed or
a produced dataset, changes what the cross-reference passes read (`keys.reference_inputs`).
Running them again walks every intent, far more than the rest of a reload.  But
the program in force has no error, and of those passes only the duplicates pass
(E0304) and the names pass (E0301–E0303) look across intents; the rest judge one
declaration at a time.  So the passes' findings after the edit are the kept ones
outside the changed files plus the per-declaration findings of the changed files,
*provided* the edit declares no name twice and leaves no reference dangling.  That is
checked here from the changed files and the incremental planner's index of the program
in force (`PlanIndex`: every intent by name, and per dataset its producers and
consumers, per intent what waits for it), in the size of the edit:

* a name an added intent takes is not another kept intent's;
* every reference of the changed files' intents resolves: an `after` to an intent that
  is kept or added, a consumed dataset declared or still produced, a declared tenant;
* nothing outside the changed files waits (`after`) for a removed intent, or consumes a
  dataset no longer produced nor declared (its producer or its declaration removed);
* tenants, datasets and topologies are few: their names are checked over the whole
  program.

When any of this fails, or a tenant's SLA ceiling may have moved (its tier or
`max_sla`: every intent of it is judged again), `unbroken` says no and the caller runs
the passes over the whole program, which then report what is wrong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from intentc.daemon.reload.render import Change
from intentc.daemon.reload.state import FileState
from intentc.diagnostics import Diagnostic
from intentc.ir import Program
from intentc.passes.products import check_intent_product
from intentc.passes.tenancy import check_serve_gpus, check_sla_ceiling, check_tenant_claims
from intentc.plan.incremental import PlanIndex

def _programs(states: Iterable[FileState | None]) -> list[Program]:
    return [s.program for s in states if s is not None]


def unbroken(index: PlanIndex, program: Program, changes: Sequence[Change]) -> bool:
    """The edit leaves no name declared twice and no reference dangling, and no tenant's
    SLA ceiling moved (see the module docstring); `index` is that of the program in force."""
    before, after = _programs(b for _, b, _ in changes), _programs(a for _, _, a in changes)
    if any(p.topologies for p in (*before, *after)):
        return False
    old = {i.name: i for p in before for i in p.intents}
    new = [i for p in after for i in p.intents]
    names = Counter(i.name for i in new)
    if any(k > 1 for k in names.values()) or any(n in index.intents and n not in old for n in names):
        return False                                    # an intent declared twice
    for kind in (program.tenants, program.datasets, program.topologies):
        if len({d.name for d in kind}) != len(kind):
            return False
    ceiling = {t.name: (t.tier, t.max_sla) for p in before for t in p.tenants}
    if any(ceiling.get(t.name, (t.tier, t.max_sla)) != (t.tier, t.max_sla) for p in after for t in p.tenants):
        return False                                    # every intent of that tenant is judged again
    tenants = {t.name for t in program.tenants}
    if any(n not in tenants for n in ceiling):
        return False                                    # a tenant removed: who still names it?
    gone = old.keys() - names.keys()
    produced_before = {r.name for i in old.values() for r in i.produces}
    produced_after = {r.name for i in new for r in i.produces}
    declared = {d.name for d in program.datasets}

    def produced(dataset: str) -> bool:
        return dataset in produced_after or any(p not in old for p in index.producers.get(dataset, ()))

    def intent_known(name: str) -> bool:
        return name in names or (name in index.intents and name not in gone)
    for i in new:
        if i.context.tenant.name and i.tenant not in tenants:
            return False
        if any(r.name and not intent_known(r.name) for r in i.trigger.after):
            return False
        if any(r.name and r.name not in declared and not produced(r.name) for r in i.consumes):
            return False
    for g in gone:                                       # kept intents that named a removed one
        if any(s not in names and any(r.name == g for r in index.intents[s].trigger.after)
               for s in index.succs.get(g, ())):
            return False
    undeclared = {d.name for p in before for d in p.datasets} - declared
    for d in (produced_before - produced_after) | undeclared:   # kept consumers of what is no longer there
        if d not in declared and not produced(d) and any(c not in names for c in index.consumers.get(d, ())):
            return False
    return True


def patched(kept: tuple[Diagnostic, ...], program: Program, changes: Sequence[Change]) -> tuple[Diagnostic, ...]:
    """The passes' findings after an `unbroken` edit (or one that kept every name and
    reference): those kept outside the changed files, and the per-declaration ones (W0401,
    E0903, E0904, E0901/E0902/E0407) of the changed files' intents and tenants.  `kept`
    itself when that is what it holds already, so that callers may compare by identity."""
    files = {name for name, _, _ in changes}
    tenants = {t.name: t for t in program.tenants}
    fresh: list[Diagnostic] = []
    for _, _, now in changes:
        if now is None:
            continue
        for t in now.program.tenants:
            fresh.extend(check_tenant_claims(t))
        for i in now.program.intents:
            fresh.extend(check_intent_product(i, program))
            fresh.extend(check_serve_gpus(i))
            if (tenant := tenants.get(i.tenant)) is not None:
                fresh.extend(check_sla_ceiling(i, tenant))
    if Counter(d for d in kept if d.span.file in files) == Counter(fresh):
        return kept
    return tuple(d for d in kept if d.span.file not in files) + tuple(fresh)
