"""Topology files for tests and benchmarks: HGX nodes (8 × H100, each its own NVLink
domain) and GB200 nodes (4 × GB200, several to one multi-node NVLink domain), in one
zone, the HGX nodes in rack r1 and the GB200 ones in r2."""

from __future__ import annotations

from typing import Iterable


def topology(name: str, hgx: Iterable[str] = (), gb200: Iterable[tuple[str, str]] = ()) -> str:
    """A Topology named `name`: an HGX node per name in `hgx`, a GB200 node per
    (name, NVLink domain) in `gb200`."""
    nodes = "".join(f"""    - name: {node}
      gpu: {{product: H100-80GB, count: 8, memory: 80Gi}}
      cpu: "192"
      memory: 2Ti
      domains: {{zone: z1, rack: r1, nvlink: {node}}}
""" for node in hgx) + "".join(f"""    - name: {node}
      gpu: {{product: GB200, count: 4, memory: 192Gi}}
      cpu: "144"
      memory: 1Ti
      domains: {{zone: z1, rack: r2, nvlink: {domain}}}
""" for node, domain in gb200)
    return f"""apiVersion: intentc.dev/v1alpha1
kind: Topology
metadata: {{name: {name}}}
spec:
  levels: [zone, rack, nvlink, node]
  nodes:
{nodes}"""


def two_nvl72_halves(prefix: str = "") -> list[tuple[str, str]]:
    """Four GB200 nodes in two NVLink domains of two nodes each (nvl-a, nvl-b)."""
    return [(f"{prefix}gb{i}", "nvl-a" if i < 3 else "nvl-b") for i in (1, 2, 3, 4)]
