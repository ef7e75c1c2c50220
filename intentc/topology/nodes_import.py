"""`kubectl get nodes -o json` → a Topology YAML file.

A live cluster already describes itself through labels: GPU Feature
Discovery publishes the GPU product, count, memory (MiB) and NVLink clique
(`nvidia.com/gpu.clique`, set on multi-node NVLink systems such as GB200
NVL72), the cloud provider or the admin sets the zone and a rack label.
Turning that into a checked-in file makes the planner's input reviewable
and reproducible: the compiler never reads the cluster itself.

Output is deterministic (nodes by name, fixed key order, no timestamps), so
re-importing an unchanged cluster gives a byte-identical file and a clean
`git diff`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from intentc import ir
from intentc.diagnostics import Diagnostic, Span, error, warning
from intentc.topology.cluster_node import topology_node, unreadable_labels
from intentc.topology.labels import RACK_LABEL, ZONE_LABEL

API_VERSION = "intentc.dev/v1alpha1"

# Labels worth carrying into the file (for node selection and for people
# reading it).  The rest (hostname, arch, NFD's hundreds of CPU flags) is
# noise that would churn the file on every driver upgrade.
DEFAULT_KEEP_LABELS: tuple[str, ...] = (
    "node.kubernetes.io/instance-type",
    "node-role.kubernetes.io/",
    "nvidia.com/gpu.family",
    "nvidia.com/gpu.machine",
    "nvidia.com/mig.strategy",
    "topology.kubernetes.io/region",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
)

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
# Numbers under YAML 1.2 (ruamel) that YAML 1.1 (PyYAML) reads as strings, e.g. 1e3, 0o17.
_NUMBERISH = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|0[xob][0-9a-fA-F_]+")
_BINARY_UNITS = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def yaml_scalar(value: str | int) -> str:
    """A YAML scalar that reads back as exactly `value` (strings that look like
    numbers, booleans or null are quoted), usable in flow context."""
    if isinstance(value, int):
        return str(value)
    if _PLAIN.fullmatch(value) and not _NUMBERISH.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    return '"' + "".join(_escape(c) for c in value) + '"'


def _escape(c: str) -> str:
    """One character inside a YAML double-quoted scalar: printable ASCII as is,
    everything else as a \\u / \\U escape (YAML readers reject raw control characters)."""
    if c in '"\\':
        return "\\" + c
    if " " <= c <= "~":
        return c
    return f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


def _flow(pairs: Sequence[tuple[str, str | int]]) -> str:
    return "{" + ", ".join(f"{yaml_scalar(k)}: {yaml_scalar(v)}" for k, v in pairs) + "}"


def normalize_memory(quantity: str) -> str:
    """``"2147483648Ki"`` → ``"2Ti"``: the largest binary unit that divides exactly.
    Anything that is not a plain binary quantity is kept as written."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|Pi|Ei)?", quantity)
    if m is None:
        return quantity
    amount = int(m.group(1))
    unit = _BINARY_UNITS.index(m.group(2)) + 1 if m.group(2) else 0
    while amount and amount % 1024 == 0 and unit < len(_BINARY_UNITS):
        amount //= 1024
        unit += 1
    return f"{amount}{_BINARY_UNITS[unit - 1]}" if unit else str(amount)


def _items(nodes_json: Mapping[str, Any], path: str) -> tuple[list[Mapping[str, Any]], list[Diagnostic]]:
    span = Span.whole_file(path)
    kind = nodes_json.get("kind") if isinstance(nodes_json, Mapping) else None
    if kind == "Node":
        return [nodes_json], []
    items = nodes_json.get("items") if isinstance(nodes_json, Mapping) else None
    if not isinstance(items, list):
        return [], [error("E0710", f"{path} is not a node list: expected an object with `items` "
                                   "(the output of `kubectl get nodes -o json`)", span)]
    good: list[Mapping[str, Any]] = []
    diags: list[Diagnostic] = []
    for i, item in enumerate(items):
        name = item.get("metadata", {}).get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not name:
            diags.append(error("E0710", f"items[{i}] has no metadata.name", span))
        else:
            good.append(item)
    return good, diags


@dataclass(frozen=True)
class _Where:
    """Positions for diagnostics: the JSON text is optional (a dict has no lines),
    and when given, a node is located by its `"name": "<node>"` member."""

    path: str
    text: str | None

    def node(self, name: str) -> Span:
        if self.text is not None:
            m = re.search(r'"name"\s*:\s*' + re.escape(json.dumps(name)), self.text)
            if m:
                line = self.text.count("\n", 0, m.start()) + 1
                col = m.start() - (self.text.rfind("\n", 0, m.start()) + 1) + 1
                return Span(self.path, line, col, line, col + len(m.group()))
        return Span.whole_file(self.path)


def _node_lines(item: Mapping[str, Any], rack_label: str, zone_label: str,
                keep_labels: Sequence[str], where: _Where, diags: list[Diagnostic]) -> tuple[list[str], set[str]]:
    """One node's YAML lines (the node as `topology_node` reads it) and the levels its labels give."""
    node = topology_node(item, rack_label=rack_label, zone_label=zone_label, keep_labels=keep_labels)
    for key, raw in unreadable_labels(item):
        diags.append(warning("W0701", f'node "{node.name}": label {key}={raw!r} is not a whole number; ignored',
                             where.node(node.name)))
    lines = [f"    - name: {yaml_scalar(node.name)}"]
    if node.gpu_count:
        gpu: list[tuple[str, str | int]] = []
        if node.gpu_product is not None:
            gpu.append(("product", node.gpu_product))
        gpu.append(("count", node.gpu_count))
        if node.gpu_memory is not None:
            gpu.append(("memory", node.gpu_memory))
        lines.append(f"      gpu: {_flow(gpu)}")
    if node.cpu is not None:
        lines.append(f"      cpu: {yaml_scalar(node.cpu)}")
    if node.memory is not None:
        lines.append(f"      memory: {yaml_scalar(normalize_memory(node.memory))}")
    lines.append(f"      domains: {_flow(list(node.domains))}")
    if node.labels:
        lines.append(f"      labels: {_flow(list(node.labels))}")
    if node.taints:
        lines.append("      taints:")
        lines.extend(f"      - {_flow([('key', k)] + ([('value', v)] if v else []) + [('effect', e)])}"
                     for k, v, e in node.taints)
    return lines, {lvl for lvl, _ in node.domains}


def imported_nodes(nodes_json: dict[str, Any], rack_label: str = RACK_LABEL, zone_label: str = ZONE_LABEL,
                   keep_labels: Sequence[str] = DEFAULT_KEEP_LABELS) -> list[ir.TopologyNode]:
    """The nodes `import_nodes` writes, as the topology file will read back (for its summary)."""
    return [topology_node(item, rack_label=rack_label, zone_label=zone_label, keep_labels=keep_labels)
            for item in _items(nodes_json, "<nodes>")[0]]


def import_nodes(nodes_json: dict[str, Any], name: str, rack_label: str = RACK_LABEL,
                 zone_label: str = ZONE_LABEL, keep_labels: Sequence[str] = DEFAULT_KEEP_LABELS,
                 path: str = "<nodes>", text: str | None = None) -> tuple[str, list[Diagnostic]]:
    """Node list → Topology YAML text.

    `path` and `text` (the JSON as read) only serve to point diagnostics at
    the node they concern.

    Levels are zone > rack > nvlink > node, minus zone or rack when no node
    carries that label.  A node missing a label the others have gets a
    warning: the planner would otherwise treat it as its own zone or rack.
    """
    where = _Where(path, text)
    items, diags = _items(nodes_json, path)
    items = sorted(items, key=lambda it: str(it["metadata"]["name"]))
    blocks: list[list[str]] = []
    present: list[set[str]] = []
    for item in items:
        lines, node_levels = _node_lines(item, rack_label, zone_label, keep_labels, where, diags)
        blocks.append(lines)
        present.append(node_levels)
    levels = [lvl for lvl in ("zone", "rack") if any(lvl in p for p in present)] + ["nvlink", "node"]
    for item, have in zip(items, present):
        for lvl in ("zone", "rack"):
            if lvl in levels and lvl not in have:
                label = zone_label if lvl == "zone" else rack_label
                diags.append(warning("W0701", f'node "{item["metadata"]["name"]}" has no {label} label '
                                              f"while other nodes do; it will count as its own {lvl}",
                                     where.node(str(item["metadata"]["name"]))))
    out = [
        "# Generated by `intentc topology import` from `kubectl get nodes -o json`.",
        f"apiVersion: {API_VERSION}",
        "kind: Topology",
        f"metadata: {_flow([('name', name)])}",
        "spec:",
        f"  levels: [{', '.join(levels)}]",
    ]
    if blocks:
        out.append("  nodes:")
        for lines in blocks:
            out.extend(lines)
    else:
        out.append("  nodes: []")
    return "\n".join(out) + "\n", diags
