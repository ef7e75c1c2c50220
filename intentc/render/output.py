"""Manifests on disk: one YAML file per object, names that sort in apply order.

`NN-kind-namespace-name.yaml` (cluster-scoped objects have no namespace
part): NN is the apply step (00 namespaces, 01 RBAC, 02 quotas, 03
priority classes, 04+ the plan's waves), so `kubectl apply -f DIR` — which
walks files in name order — applies in the same order as `intentc apply`.

Beside them, a `Kustomization` file lists the same files in the same order
(`kustomization`), so the directory plugs into kustomize, `kubectl apply
-k`, Argo CD and Flux as it is.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import yaml

from intentc.render.model import Manifest
from intentc.render.yaml_block import BlockWriter


_Base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)   # libyaml's emitter: C, not Python per event


class _Dumper(_Base):  # type: ignore[valid-type,misc]
    """Block style everywhere; never emit anchors/aliases for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(body: Any) -> str:
    return yaml.dump(dict(body), Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     allow_unicode=True, width=4096)


_WRITER = BlockWriter(_dump)


def to_yaml(body: Mapping[str, Any]) -> str:
    """The object as block YAML, as PyYAML writes it (`yaml_block`)."""
    return _WRITER.write(body)


def step_width(manifests: Sequence[Manifest]) -> int:
    return max(2, len(str(max((m.step for m in manifests), default=0))))


def manifest_filename(m: Manifest, width: int = 2) -> str:
    parts = [f"{m.step:0{width}d}", m.ref.kind.lower()]
    if m.ref.namespace:
        parts.append(m.ref.namespace)
    parts.append(m.ref.name)
    return "-".join(parts) + ".yaml"


def manifest_names(manifests: Sequence[Manifest]) -> list[str]:
    """Each manifest's file name, in order."""
    width = step_width(manifests)
    return [manifest_filename(m, width) for m in manifests]


def manifest_files(manifests: Sequence[Manifest]) -> dict[str, str]:
    """file name → YAML text, for every manifest."""
    return {name: to_yaml(m.body) for name, m in zip(manifest_names(manifests), manifests)}


# kustomize reads a directory's kustomization from `kustomization.yaml`, `kustomization.yml` or
# `Kustomization` (konfig.RecognizedKustomizationFileNames); the last has no YAML suffix, so
# `kubectl apply -f DIR`, which takes only .yaml/.yml/.json files from a directory, skips it
# instead of failing on a "Kustomization" object no cluster serves.
KUSTOMIZATION = "Kustomization"


def kustomization(names: Sequence[str]) -> str:
    """The `Kustomization` of a manifests directory holding the files `names` (in apply
    order, as `manifest_names` gives them).  `sortOptions: fifo` keeps that order in
    kustomize's output: its default ("legacy") sorts by kind, which would put a later
    wave's objects before an earlier one's."""
    return to_yaml({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                    "resources": list(names), "sortOptions": {"order": "fifo"}})
