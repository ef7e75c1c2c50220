"""Per-tenant isolation of failures: which tenants an error holds back.

Tenants share a repository, so one tenant's over-quota or invalid intent
must not stop every other tenant's release.  An error that lies inside a
tenant's declaration or inside one of its intents holds back that tenant:
none of its objects are rendered, and the reconciler neither applies nor
prunes what it already runs.  A tenant whose intent depends on a held
intent (`after`, or consuming its data) is held back too: its work would
start without its input.

Errors that cannot be pinned on one tenant still stop the whole run, as
before: unreadable files and syntax errors (the declaration they broke is
not in the program, so its tenant is unknown), names declared twice,
dependency cycles, topology errors, and anything outside a declaration.
Pure: `compile` calls it between planning and rendering (docs/tenancy.md).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import networkx as nx

from intentc.diagnostics import Diagnostic, Span, warning
from intentc.ir import Program

# Code families never pinned on a tenant: files, DSL syntax, YAML syntax,
# duplicate names, the dependency graph, topology files.
GLOBAL_CODES = ("E00", "E01", "E020", "E0304", "E05", "E07")


@dataclass(frozen=True)
class Holdback:
    tenants: tuple[str, ...]                  # held back, sorted
    blocking: tuple[Diagnostic, ...]          # errors no tenant owns: nothing is rendered
    notes: tuple[Diagnostic, ...]             # one W0901 per held tenant

    @property
    def partial(self) -> bool:
        """Some tenants are held back and the others can be rendered."""
        return bool(self.tenants) and not self.blocking


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.file == inner.file and outer.line > 0
            and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def _owners(program: Program) -> dict[str, list[tuple[Span, str, str]]]:
    """Per file: (declaration span, tenant, what) for tenants and intents."""
    out: dict[str, list[tuple[Span, str, str]]] = defaultdict(list)
    for t in program.tenants:
        out[t.span.file].append((t.span, t.name, f"tenant {t.name}"))
    for i in program.intents:
        if i.tenant:
            out[i.span.file].append((i.span, i.tenant, f"intent {i.name}"))
    return out


def holdback(program: Program, diagnostics: list[Diagnostic], dag: nx.DiGraph | None) -> Holdback:
    owners = _owners(program)
    first: dict[str, Diagnostic] = {}
    count: dict[str, int] = defaultdict(int)
    blocking: list[Diagnostic] = []
    for d in diagnostics:
        if not d.is_error:
            continue
        tenant = None if d.code.startswith(GLOBAL_CODES) else next(
            (t for span, t, _ in owners.get(d.span.file, ()) if _contains(span, d.span)), None)
        if tenant is None:
            blocking.append(d)
            continue
        first.setdefault(tenant, d)
        count[tenant] += 1
    held = set(first)
    because: dict[str, str] = {}
    if held and dag is not None:
        tenant_of = {i.name: i.tenant for i in program.intents}
        frontier = [i.name for i in program.intents if i.tenant in held]
        while frontier:
            name = frontier.pop()
            if name not in dag:
                continue
            for child in sorted(nx.descendants(dag, name)):
                t = tenant_of.get(child)
                if t and t not in held:
                    held.add(t)
                    because[t] = f"intent {child} depends on {name} of held-back tenant {tenant_of[name]}"
                    frontier.extend(i.name for i in program.intents if i.tenant == t)
    declared = {t.name: t for t in program.tenants}
    notes = []
    for t in sorted(held):
        intents = sum(1 for i in program.intents if i.tenant == t)
        where = declared[t].span if t in declared else (first[t].span if t in first else None)
        if t in first:
            reason = f"{count[t]} error(s), the first at {first[t].span}"
        else:
            reason = because[t]
        if where is None:
            where = next(i.span for i in program.intents if i.tenant == t)
        notes.append(warning("W0901", f"tenant {t} held back: {reason}; its {intents} intent(s) are not "
                                      f"rendered and what it already runs is left as it is", where,
                             hint="the other tenants are rendered; fix these errors to release this tenant"))
    return Holdback(tuple(sorted(held)), tuple(blocking), tuple(notes))
