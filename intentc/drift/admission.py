"""Where Kueue put a workload, next to where the plan put it, and why they differ.

With `--render-target kueue` intentc does not pin pods: Kueue's
topology-aware scheduling assigns each PodSet to domains at admission, on
live state, and records it in the Workload (`status.admission.
podSetAssignments[].topologyAssignment`).  The plan was made earlier from the
topology file.  `compare` reads both and says, per node, what differs and
the most specific reason it can find in what it is given: a planned node
that is cordoned, not Ready or tainted, GPUs there held by other admitted
workloads, pods packed where the plan spread them, or a different choice
among equally valid domains.  It is pure: the caller reads the cluster.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from intentc.plan.model import Placement
from intentc.topology.labels import GPU_RESOURCE

HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True, order=True)
class AssignmentDifference:
    intent: str
    kind: str          # "nodes" | "packing" | "unassigned"
    message: str


def decode(topology_assignment: Mapping[str, Any]) -> dict[tuple[str, ...], int]:
    """Kueue's compressed assignment (v1beta2 `levels` + `slices`) → {domain values per level: pods}."""
    levels = list(topology_assignment.get("levels", []))
    out: Counter[tuple[str, ...]] = Counter()
    for sl in topology_assignment.get("slices", []):
        n = int(sl["domainCount"])
        columns: list[list[str]] = []
        for v in sl["valuesPerLevel"]:
            if "universal" in v:
                columns.append([str(v["universal"])] * n)
            else:
                ind = v["individual"]
                columns.append([f"{ind.get('prefix') or ''}{r}{ind.get('suffix') or ''}" for r in ind["roots"]])
        counts = sl["podCounts"]
        pods = [int(counts["universal"])] * n if "universal" in counts else [int(c) for c in counts["individual"]]
        for i in range(n):
            out[tuple(col[i] for col in columns)] += pods[i]
    assert all(len(k) == len(levels) for k in out), "one value per level"
    return dict(out)


def assigned_nodes(workload: Mapping[str, Any]) -> Counter[str]:
    """Pods per node that Kueue assigned (hostname must be the Topology's lowest level)."""
    pods: Counter[str] = Counter()
    admission = workload.get("status", {}).get("admission") or {}
    for psa in admission.get("podSetAssignments", []):
        ta = psa.get("topologyAssignment")
        if not ta:
            continue
        levels = list(ta["levels"])
        if not levels or levels[-1] != HOSTNAME_LABEL:
            continue
        for values, count in decode(ta).items():
            pods[values[-1]] += count
    return pods


def _gpus_held(workloads: Iterable[Mapping[str, Any]], exclude: str) -> dict[str, list[str]]:
    """node → names of other admitted workloads holding pods there."""
    held: dict[str, list[str]] = {}
    for w in workloads:
        name = f"{w['metadata'].get('namespace', '')}/{w['metadata']['name']}"
        if name == exclude:
            continue
        for node in assigned_nodes(w):
            held.setdefault(node, []).append(name)
    return held


def _node_problem(node: Mapping[str, Any] | None) -> str | None:
    if node is None:
        return "it is not in the cluster"
    spec, status = node.get("spec", {}), node.get("status", {})
    if spec.get("unschedulable"):
        return "it is cordoned (spec.unschedulable)"
    ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
    if ready is not None and ready != "True":
        return "it is not Ready"
    taints = [t["key"] for t in spec.get("taints", []) if t.get("effect") in ("NoSchedule", "NoExecute")
              and t["key"] != GPU_RESOURCE]
    if taints:
        return f"it is tainted ({', '.join(sorted(taints))})"
    return None


def compare(placement: Placement, workload: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]] = (),
            others: Sequence[Mapping[str, Any]] = ()) -> list[AssignmentDifference]:
    """The differences between the plan's placement of one intent and Kueue's admission of
    its Workload; empty when Kueue chose the planned nodes with the planned pods per node.
    `nodes` (live Node objects) and `others` (other admitted Workloads) sharpen the reasons."""
    intent = placement.intent
    got = assigned_nodes(workload)
    if not got:
        return [AssignmentDifference(intent, "unassigned", "Kueue has not assigned a topology (not admitted, "
                                                             "or its flavor has no Topology)")]
    planned = Counter(a.node for a in placement.allocations)
    if got == planned:
        return []
    out: list[AssignmentDifference] = []
    by_name = {n["metadata"]["name"]: n for n in nodes}
    me = f"{workload['metadata'].get('namespace', '')}/{workload['metadata']['name']}"
    held = _gpus_held(others, me)
    missing, extra = sorted(set(planned) - set(got)), sorted(set(got) - set(planned))
    if missing or extra:
        reasons = []
        for node in missing:
            problem = _node_problem(by_name.get(node)) if nodes else None
            if problem:
                reasons.append(f"{node}: {problem}")
            elif node in held:
                reasons.append(f"{node}: its GPUs were held by {', '.join(sorted(held[node]))} at admission")
        why = ("; ".join(reasons) if reasons else
               "both satisfy the request; Kueue chose on live free capacity, the plan on the topology file")
        out.append(AssignmentDifference(
            intent, "nodes", f"Kueue assigned {', '.join(sorted(got))}, the plan {', '.join(sorted(planned))} "
                             f"(planned but not assigned: {', '.join(missing) or '-'}; assigned but not planned: "
                             f"{', '.join(extra) or '-'}): {why}"))
    packed = sorted(n for n in got if got[n] > 1)
    if len(got) < len(planned) and packed:
        out.append(AssignmentDifference(
            intent, "packing", f"Kueue put {', '.join(f'{got[n]} pods on {n}' for n in packed)} where the plan "
                               f"spread {sum(planned.values())} pods over {len(planned)} nodes: nothing required "
                               f"one pod per node, and Kueue packs pods into the fewest domains"))
    return out
