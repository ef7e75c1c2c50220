"""Names a tenant may never take: namespaces the cluster or intentc itself
owns, and the groups Kubernetes gives to its own components.

A tenant's name becomes a namespace that intentc labels, binds a group in,
bounds with a quota and may later prune.  Letting a tenant be called
`kube-system` would hand that namespace to the tenant's group and let a
`--prune` delete it; a `system:` group is one every authenticated user or
every node is in.  The compiler refuses these names (E0901, E0902) and the
reconciler never deletes a reserved namespace whatever its inventory says.
Pure: the compiler side and the reconciler both read it.
"""

from __future__ import annotations

INTENTC_NAMESPACE = "intentc-system"     # the inventory and the daemon live here

# Exact names and prefixes (DNS-1123 labels cannot contain ':' so prefixes are plain).
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease",
                                 INTENTC_NAMESPACE})
RESERVED_NAMESPACE_PREFIXES = ("kube-", "intentc-", "openshift-")
RESERVED_GROUP_PREFIXES = ("system:",)


def reserved_namespace(name: str) -> bool:
    """True for a namespace no tenant may own (and intentc never deletes)."""
    return name in RESERVED_NAMESPACES or name.startswith(RESERVED_NAMESPACE_PREFIXES)


def reserved_group(name: str) -> bool:
    """True for Kubernetes' own groups (system:authenticated, system:masters, system:nodes, ...)."""
    return name.strip().lower().startswith(RESERVED_GROUP_PREFIXES)
