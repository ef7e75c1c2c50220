"""The cluster the planner places onto.

* `matrix`       — the GPU link matrix inside one node (the contract with the planner);
* `nvsmi`        — `nvidia-smi topo -m` text → matrix, plus a default matrix per GPU product;
* `load`         — a Topology YAML file plus every node's matrix, ready for placement;
* `nodes_import` — `kubectl get nodes -o json` → Topology YAML, from GPU Feature Discovery labels.
* `cluster_node` — one Kubernetes node → `ir.TopologyNode` (the reading `nodes_import` prints and live planning adds).

The cluster is described by files in the repository, never read live: the
compiler stays pure, and a change to the inventory is reviewed like code.
"""
