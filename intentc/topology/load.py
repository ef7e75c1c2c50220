"""A topology file plus the GPU matrix of every node: what the planner places onto.

The Topology document itself is read by the YAML surface (same schema
checks and spans as any other file); this module adds what only a topology
needs: each node's `nvidia-smi topo -m` file, resolved relative to the
topology file, parsed once however many nodes share it, and a default
matrix (`nvsmi.default_matrix`) for node types that ship none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from intentc import ir
from intentc.diagnostics import Diagnostic, Related, Span, error, has_errors
from intentc.frontend import parse_source
from intentc.frontend.sources import display_path, read_source, root_of
from intentc.topology import nvsmi
from intentc.topology.matrix import GpuMatrix


@dataclass(frozen=True)
class LoadedTopology:
    topology: ir.Topology
    matrices: tuple[tuple[str, GpuMatrix], ...]      # (node name, matrix), in topology order
    _index: dict[str, GpuMatrix] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # The planner asks for matrices in its inner loop; a dict keeps that O(1).
        object.__setattr__(self, "_index", dict(self.matrices))

    def matrix(self, node: str) -> GpuMatrix:
        """The node's matrix; KeyError for a name that is not in the topology."""
        return self._index[node]


def _read_matrix(path: Path, span: Span) -> tuple[GpuMatrix | None, list[Diagnostic]]:
    # confined to the repository of the topology file that names it (`../../etc/x` is refused)
    source, diags = read_source(path, root_of(str(span.file)))
    if source is None:
        # Point at the topology file's `nvidiaSmiTopo` value, where the user can fix it.
        return None, [error(d.code, d.message, span, hint=d.hint) for d in diags]
    return nvsmi.parse(source.text, source.path)


def _node_matrices(topology: ir.Topology, base: Path) -> tuple[list[tuple[str, GpuMatrix]], list[Diagnostic]]:
    parsed: dict[str, tuple[GpuMatrix | None, Span]] = {}
    out: list[tuple[str, GpuMatrix]] = []
    diags: list[Diagnostic] = []
    for node in topology.nodes:
        if node.nvidia_smi_topo is None:
            out.append((node.name, nvsmi.default_matrix(node.gpu_count, node.gpu_product)))
            continue
        span = node.spans.get("nvidia_smi_topo", node.span)
        key = display_path(base / node.nvidia_smi_topo)
        if key not in parsed:
            matrix, found = _read_matrix(base / node.nvidia_smi_topo, span)
            parsed[key] = (matrix, span)
            diags.extend(found)
        matrix, first_span = parsed[key]
        if matrix is None:
            continue
        if len(matrix.gpus) != node.gpu_count:
            related = [] if first_span == span else [Related("the file is also used here", first_span)]
            diags.append(error(
                "E0708", f'node "{node.name}" declares {node.gpu_count} GPUs but {key} describes '
                         f"{len(matrix.gpus)}", span, related=related,
                hint="point the node at the matrix of its own node type, or fix gpu.count"))
            continue
        out.append((node.name, matrix))
    return out, diags


def load_topology(path: str) -> tuple[LoadedTopology | None, list[Diagnostic]]:
    """Read one topology file and its nodes' matrices; None when anything is wrong."""
    source, diags = read_source(Path(path))
    if source is None:
        return None, diags
    result = parse_source(source)
    diags.extend(result.diagnostics)
    topologies = result.program.topologies
    if len(topologies) != 1:
        found = f"{len(topologies)} Topology documents" if topologies else "no Topology document"
        span = topologies[1].span if len(topologies) > 1 else Span.point(source.path, 1, 1)
        related = [Related("first Topology document", topologies[0].span)] if len(topologies) > 1 else []
        diags.append(error("E0709", f"{source.path} must hold exactly one Topology document, found {found}",
                           span, related=related, hint="keep one cluster per topology file"))
        return None, diags
    if has_errors(diags):
        return None, diags
    topology = topologies[0]
    matrices, matrix_diags = _node_matrices(topology, Path(path).parent)
    diags.extend(matrix_diags)
    if has_errors(diags):
        return None, diags
    return LoadedTopology(topology, tuple(matrices)), diags
