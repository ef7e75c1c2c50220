"""Which intents go to which cluster: the intents' `clusters:` against the fleet.

No `clusters:` means every cluster.  A name that is not a cluster of the fleet
is an error (E1123, with a suggestion); a label selector that Kubernetes
would refuse is an error (E1124); a selector that matches no cluster is a
warning (W1130): the intent is valid, it just runs nowhere yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from intentc.diagnostics import Diagnostic, error, warning
from intentc.diagnostics.suggest import did_you_mean
from intentc.fleet.clusters import Fleet
from intentc.ir import ClusterSelector, Intent, Program

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
LABEL_KEY = re.compile(rf"^(({_PREFIX})/)?{_NAME}$")
LABEL_VALUE = re.compile(rf"^({_NAME})?$")


@dataclass(frozen=True)
class Selection:
    by_cluster: Mapping[str, frozenset[str]]      # cluster -> the intents it gets
    diagnostics: tuple[Diagnostic, ...]


def _selector_problems(intent: Intent, sel: ClusterSelector, fleet: Fleet) -> list[Diagnostic]:
    out = []
    if sel.by_labels:
        for k, v in sel.match_labels:
            at = sel.spans.get(f"label:{k}", sel.span)
            if not LABEL_KEY.match(k) or len(k.rpartition("/")[0]) > 253:
                out.append(error("E1124", f"intent {intent.name!r}: {k!r} is not a Kubernetes label key", at,
                                 hint="a key is NAME or PREFIX/NAME: NAME up to 63 of A-Z a-z 0-9 - _ . "
                                      "starting and ending alphanumeric, PREFIX a DNS subdomain"))
            elif not LABEL_VALUE.match(v):
                out.append(error("E1124", f"intent {intent.name!r}: {v!r} is not a Kubernetes label value "
                                          f"(label {k})", at,
                                 hint="a value is empty or up to 63 of A-Z a-z 0-9 - _ . , "
                                      "starting and ending alphanumeric"))
        return out
    for i, name in enumerate(sel.names):
        if fleet.get(name) is None:
            at = sel.name_spans[i] if i < len(sel.name_spans) else sel.span
            out.append(error("E1123", f"intent {intent.name!r} selects cluster {name!r}, which is not in "
                                      f"{fleet.directory or 'the fleet'}{did_you_mean(name, fleet.names)}", at,
                             hint=f"clusters: {', '.join(fleet.names[:8])}"))
    return out


def for_cluster(name: str, labels: Mapping[str, str]) -> Callable[[Intent], bool]:
    """Whether an intent goes to this cluster (no `clusters:`: yes)."""
    def accepts(intent: Intent) -> bool:
        return intent.clusters is None or intent.clusters.selects(name, labels)
    return accepts


def select(program: Program, fleet: Fleet) -> Selection:
    chosen: dict[str, set[str]] = {c.name: set() for c in fleet.clusters}
    diags: list[Diagnostic] = []
    for intent in program.intents:
        sel = intent.clusters
        if sel is None:
            for names in chosen.values():
                names.add(intent.name)
            continue
        problems = _selector_problems(intent, sel, fleet)
        diags.extend(problems)
        if problems:
            continue
        hits = [c.name for c in fleet.clusters if sel.selects(c.name, c.label_map)]
        for c in hits:
            chosen[c].add(intent.name)
        if not hits:
            what = "no cluster has labels " + ", ".join(f"{k}={v}" for k, v in sel.match_labels) \
                if sel.by_labels and sel.match_labels else "it lists no cluster"
            diags.append(warning("W1130", f"intent {intent.name!r} selects no cluster ({what}); "
                                          f"it is compiled for none", sel.span,
                                 hint=f"clusters: {', '.join(fleet.names[:8])}"))
    return Selection({k: frozenset(v) for k, v in chosen.items()}, tuple(diags))
