"""From a live cluster's nodes and pods to what the planner must not use (pure).

`intentc plan --kubeconfig` (and `compile --kubeconfig`, `apply`) read the
cluster with `intentc.kube.cluster_state` and pass the JSON here; the
result is an `Occupancy` for `make_plan` and one note per decision, so the
plan says why a node or a GPU was left alone:

* a topology node the cluster does not have, a cordoned node
  (`spec.unschedulable`), a node whose `Ready` condition is not `True`, and
  a node with a `NoSchedule` / `NoExecute` taint that intentc's pods do not
  tolerate (they tolerate only `nvidia.com/gpu`) are unavailable;
* a node that reports fewer allocatable `nvidia.com/gpu` than the topology
  file gives it has the missing GPUs taken (highest indices first);
* GPUs requested by running pods that this target does not own are taken:
  at the indices another intentc target planned (its pods carry
  `intentc.dev/gpu-indices`), otherwise — the device plugin does not say
  which devices it handed out — as many as requested, highest indices first.
  Pods in the namespaces of this program's tenants that intentc manages are
  this target's own: the new plan replaces them, so they take nothing.

GPU nodes of the cluster that the topology file does not list are added
to the topology before this runs (`plan/cluster_nodes.py`); with
`--only-topology-nodes` they are not, and one note here names them.

Busy GPUs stay busy for the whole plan (`until_s` None): a running pod's
end is not known.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from intentc import ir
from intentc.ir.quantity import parse_quantity
from intentc.objectmeta import GPU_INDICES_ANNOTATION, INTENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from intentc.plan.model import Busy, Occupancy
from intentc.topology.cluster_node import gpu_count
from intentc.topology.labels import GPU_RESOURCE

TOLERATED_TAINTS = frozenset({GPU_RESOURCE})


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _node_problem(node: Mapping[str, Any]) -> str | None:
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return "cordoned"
    ready = next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return "NotReady"
    for t in spec.get("taints") or []:
        if t.get("effect") in ("NoSchedule", "NoExecute") and t.get("key") not in TOLERATED_TAINTS:
            value = f"={t['value']}" if t.get("value") else ""
            return f"tainted {t.get('key')}{value}:{t.get('effect')}"
    return None


def _gpus_requested(pod: Mapping[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        raw = (res.get("limits") or {}).get(GPU_RESOURCE) or (res.get("requests") or {}).get(GPU_RESOURCE)
        q = parse_quantity(str(raw)) if raw is not None else None
        total += int(q) if q is not None else 0
    return total


def _planned_indices(pod: Mapping[str, Any], node: str) -> tuple[int, ...] | None:
    """The indices another intentc target planned for this pod's node, if it says so."""
    raw = (_meta(pod).get("annotations") or {}).get(GPU_INDICES_ANNOTATION)
    if not raw:
        return None
    parts = dict(p.split("=", 1) for p in raw.split(";") if "=" in p) if "=" in raw else {node: raw}
    text = parts.get(node)
    if text is None:
        return None
    try:
        return tuple(sorted(int(x) for x in text.split(",") if x != ""))
    except ValueError:
        return None


def node_problem(node: Mapping[str, Any]) -> str | None:
    """Why the planner may not use a node (cordoned, NotReady, a taint intentc does not
    tolerate), or None; the forecast reads nodes as live planning does (forecast/observe.py)."""
    return _node_problem(node)


def pod_gpus(pod: Mapping[str, Any], node: str) -> tuple[int, tuple[int, ...] | None]:
    """How many GPUs a pod asks for, and the indices its intentc target planned for it on
    `node` (None: it does not say)."""
    return _gpus_requested(pod), _planned_indices(pod, node)


def _own(pod: Mapping[str, Any], own_namespaces: frozenset[str], own_intents: frozenset[str] | None) -> bool:
    labels = _meta(pod).get("labels") or {}
    return (_meta(pod).get("namespace") in own_namespaces and labels.get(MANAGED_BY_LABEL) in (MANAGED_BY, None)
            and INTENT_LABEL in labels and (own_intents is None or labels[INTENT_LABEL] in own_intents))


def occupancy(topology: ir.Topology, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              own_namespaces: Iterable[str] = (),
              own_intents: Iterable[str] | None = None) -> tuple[Occupancy, tuple[str, ...]]:
    """What the live cluster leaves for this plan, and why (one note per node or pod).
    With `own_intents` (re-planning one wave), only the pods of those intents are
    replaced by the plan; this target's other pods (earlier waves still running) are busy."""
    own = frozenset(own_namespaces)
    replaced = frozenset(own_intents) if own_intents is not None else None
    live = {str(_meta(n).get("name")): n for n in nodes}
    unavailable: set[str] = set()
    taken: dict[str, set[int]] = {}
    notes: list[str] = []
    count = {n.name: n.gpu_count for n in topology.nodes}

    def take(node: str, gpus: Iterable[int], why: str) -> None:
        new = sorted(set(gpus) - taken.setdefault(node, set()))
        if new:
            taken[node].update(new)
            notes.append(f"{node}: GPU {','.join(map(str, new))} taken ({why})")

    def highest_free(node: str, n: int) -> list[int]:
        free = [i for i in range(count[node] - 1, -1, -1) if i not in taken.get(node, set())]
        return free[:n]

    for tn in topology.nodes:
        node = live.get(tn.name)
        problem = "not in the cluster" if node is None else _node_problem(node)
        if problem is not None:
            unavailable.add(tn.name)
            notes.append(f"{tn.name}: unavailable ({problem})")
            continue
        assert node is not None
        raw = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE)
        allocatable = parse_quantity(str(raw)) if raw is not None else None
        if tn.gpu_count and allocatable is not None and int(allocatable) < tn.gpu_count:
            take(tn.name, highest_free(tn.name, tn.gpu_count - int(allocatable)),
                 f"the node reports {int(allocatable)} allocatable of {tn.gpu_count}")
    for pod in pods:
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        if node_name not in count or node_name in unavailable or _own(pod, own, replaced):
            continue
        n = _gpus_requested(pod)
        if not n:
            continue
        who = f"pod {_meta(pod).get('namespace')}/{_meta(pod).get('name')}"
        planned = _planned_indices(pod, node_name)
        if planned is not None and len(planned) == n and all(0 <= i < count[node_name] for i in planned):
            take(node_name, planned, who + ", as its intentc target planned")
        else:
            take(node_name, highest_free(node_name, n), who + f", {n} GPU(s) by count")
    busy = tuple(Busy(node, tuple(sorted(gpus))) for node, gpus in sorted(taken.items()) if gpus)
    outside = sorted(name for name, n in live.items() if name not in count and gpu_count(n) > 0)
    if outside:
        shown = ", ".join(outside[:5]) + (f", … (+{len(outside) - 5} more)" if len(outside) > 5 else "")
        notes.append(f"{len(outside)} GPU node(s) of the cluster are not in the topology file and are not "
                     f"planned onto: {shown} (`intentc topology import` adds them)")
    return Occupancy(busy, frozenset(unavailable)), tuple(notes)

