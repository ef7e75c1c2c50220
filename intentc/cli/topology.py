"""`intentc topology import | inspect`: build a Topology file from a cluster's node
labels, and show what intentc reads from an `nvidia-smi topo -m` file."""

from __future__ import annotations

import enum
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Sequence

import typer

from intentc.cli.app import EXIT_USAGE, app, emit_diagnostics, exit_for, usage_error
from intentc.cli.common import format_option, read_input, write_output_or_exit
from intentc.cli.lazy import CONTEXT_SETTINGS
from intentc.diagnostics import (
    Diagnostic,
    OutputFormat,
    Span,
    error,
    sorted_diagnostics,
)
from intentc.topology.labels import RACK_LABEL, ZONE_LABEL

if TYPE_CHECKING:
    from intentc.ir import TopologyNode
    from intentc.topology.matrix import GpuMatrix

topology_app = typer.Typer(
    name="topology",
    help="Cluster topology: import node labels, inspect nvidia-smi matrices.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=CONTEXT_SETTINGS,
    epilog="""Examples:

  intentc topology import --nodes nodes.json --name prod --out clusters/prod.yaml

  intentc topology inspect --nvidia-smi topo/hgx-h100.txt
""",
)
app.add_typer(topology_app, name="topology")

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


class InspectFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


def _read_json(path: str) -> tuple[object | None, dict[str, str], list[Diagnostic]]:
    source, diags = read_input(path)
    if source is None:
        emit_diagnostics(diags, OutputFormat.TEXT, {}, to_stderr=True)
        raise typer.Exit(EXIT_USAGE)
    sources = {source.path: source.text}
    try:
        return json.loads(source.text), sources, diags
    except json.JSONDecodeError as exc:
        return None, sources, diags + [error("E0710", f"invalid JSON: {exc.msg}",
                                             Span.point(source.path, exc.lineno, exc.colno),
                                             hint="pass the output of `kubectl get nodes -o json`")]


@topology_app.command("import", epilog="""Examples:

  kubectl get nodes -o json > nodes.json

  intentc topology import --nodes nodes.json --name prod --out clusters/prod.yaml

  kubectl get nodes -o json | intentc topology import -f - --name prod   # from standard input

  intentc topology import --nodes nodes.json --name lab --rack-label example.com/rack
""")
def import_(
    nodes: str = typer.Option(..., "--nodes", "-f", metavar="FILE",
                              help="Output of `kubectl get nodes -o json` (-: standard input)."),
    name: str = typer.Option(..., "--name", metavar="NAME", help="Topology name (a DNS-1123 label)."),
    rack_label: str = typer.Option(RACK_LABEL, "--rack-label", metavar="LABEL", help="Node label naming the rack."),
    zone_label: str = typer.Option(ZONE_LABEL, "--zone-label", metavar="LABEL", help="Node label naming the zone."),
    keep_label: list[str] | None = typer.Option(
        None, "--keep-label", metavar="PREFIX", help="Label prefix to copy into the file (repeatable; replaces the default list)."),
    out: str | None = typer.Option(None, "--out", metavar="FILE", help="Write the YAML here instead of stdout (-: stdout)."),
    format: OutputFormat = format_option(OutputFormat.TEXT, "Diagnostics format."),
) -> None:
    """Turn node labels (GPU Feature Discovery, zone, rack) into a Topology YAML file."""
    from intentc.topology import nodes_import

    if not _DNS_LABEL.fullmatch(name):
        usage_error(f"--name {name!r} is not a DNS-1123 label (lowercase letters, digits and '-')")
    data, sources, diags = _read_json(nodes)
    if data is not None:
        if not isinstance(data, dict):
            diags.append(error("E0710", f"{nodes} holds a JSON {type(data).__name__}, not a node list",
                               Span.point(next(iter(sources)), 1, 1)))
        else:
            keep = tuple(keep_label) if keep_label else nodes_import.DEFAULT_KEEP_LABELS
            [(shown, raw)] = sources.items()
            text, found = nodes_import.import_nodes(data, name, rack_label=rack_label, zone_label=zone_label,
                                                    keep_labels=keep, path=shown, text=raw)
            diags.extend(found)
            if not any(d.is_error for d in diags):
                if out:
                    write_output_or_exit(out, text)
                else:
                    typer.echo(text, nl=False)
                if format is OutputFormat.TEXT:
                    _summary(name, nodes_import.imported_nodes(data, rack_label, zone_label, keep))
    diags = sorted_diagnostics(diags)
    emit_diagnostics(diags, format, sources, to_stderr=True)
    exit_for(diags)


def _summary(name: str, nodes: Sequence[TopologyNode]) -> None:
    """The imported topology's GPU products on stderr (stdout may hold the YAML), each with the
    intents' short name it matches: GFD's `NVIDIA-H100-80GB-HBM3` is what intents call
    `H100-80GB`, and the planner matches them (`topology.products`)."""
    from intentc.topology.products import offered

    gpus = sum(n.gpu_count for n in nodes if n.gpu_count > 0)
    lines = [f"topology {name}: {len(nodes)} nodes, {gpus} GPUs", *(f"  {line}" for line in offered(nodes))]
    typer.echo("\n".join(lines), err=True)


def _text_report(path: str, m: GpuMatrix) -> str:
    from intentc.topology import nvsmi

    numa = sorted({g.numa_node for g in m.gpus if g.numa_node is not None})
    lines = [(f"{path}: {len(m.gpus)} GPUs, {len(m.nics)} NICs, NUMA nodes "
             f"{', '.join(map(str, numa)) or 'unknown'}"), ""]
    rows = [("GPU", "NUMA", "CPU affinity", "nearest NICs")]
    for g in m.gpus:
        nics, link = nvsmi.nearest_nics(m, g.index)
        near = f"{', '.join(nics)} ({link})" if link else "-"
        rows.append((f"GPU{g.index}", "-" if g.numa_node is None else str(g.numa_node),
                     g.cpu_affinity or "-", near))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]
    if len(m.gpus) > 1:
        lines += ["", "GPU links:"]
        names = [f"GPU{g.index}" for g in m.gpus]
        width = max(len(n) for n in names + ["NV18"])
        lines.append(" " * width + "  " + "  ".join(n.ljust(width) for n in names).rstrip())
        for g in m.gpus:
            cells = ["X" if h.index == g.index else str(m.link(g.index, h.index)) for h in m.gpus]
            lines.append(f"GPU{g.index}".ljust(width) + "  " + "  ".join(c.ljust(width) for c in cells).rstrip())
    return "\n".join(lines) + "\n"


@topology_app.command("inspect", epilog="""Examples:

  nvidia-smi topo -m > hgx-h100.txt        # on the GPU node

  intentc topology inspect --nvidia-smi hgx-h100.txt

  intentc topology inspect --nvidia-smi hgx-h100.txt -o json | jq '.gpus[0]'

  intentc topology inspect --topology clusters/prod.yaml    # GPU products
""")
def inspect(
    nvidia_smi: str | None = typer.Option(None, "--nvidia-smi", "-f", metavar="FILE",
                                          help="A saved `nvidia-smi topo -m` output (-: standard input)."),
    topology: str | None = typer.Option(None, "--topology", "-t", metavar="FILE",
                                        help="A Topology file: its GPU products, as intents name them."),
    format: InspectFormat = format_option(InspectFormat.TEXT),
) -> None:
    """Show what intentc reads from an `nvidia-smi topo -m` file: each GPU's NUMA node and
    CPU affinity, its nearest NICs, and the link between every GPU pair.  With --topology,
    a topology file's nodes and GPU products instead, each with the intents' name it matches."""
    from intentc.topology import nvsmi

    if (nvidia_smi is None) == (topology is None):
        usage_error("give one of --nvidia-smi FILE and --topology FILE")
    if topology is not None:
        _inspect_topology(topology, format)
    assert nvidia_smi is not None
    source, diags = read_input(nvidia_smi)
    if source is None:
        emit_diagnostics(diags, OutputFormat.TEXT, {}, to_stderr=True)
        raise typer.Exit(EXIT_USAGE)
    matrix, found = nvsmi.parse(source.text, source.path)
    diags = sorted_diagnostics(diags + found)
    diag_format = OutputFormat.JSON if format is InspectFormat.JSON else OutputFormat.TEXT
    emit_diagnostics(diags, diag_format, {source.path: source.text}, to_stderr=True)
    if matrix is not None:
        if format is InspectFormat.JSON:
            doc = {"file": source.path, **nvsmi.to_obj(matrix)}
            typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        else:
            typer.echo(_text_report(source.path, matrix), nl=False)
    exit_for(diags)


def _inspect_topology(path: str, format: InspectFormat) -> NoReturn:
    """`inspect --topology`: the file's nodes and GPU products, each with the short name intents
    use for it (`NVIDIA-H100-80GB-HBM3 (matches intents' H100-80GB)`); exits."""
    from intentc.frontend.sources import read_text
    from intentc.topology.load import load_topology
    from intentc.topology.products import offered, short_name, tally

    loaded, diags = load_topology(path)
    diags = sorted_diagnostics(diags)
    text = read_text(path)
    diag_format = OutputFormat.JSON if format is InspectFormat.JSON else OutputFormat.TEXT
    emit_diagnostics(diags, diag_format, {Path(path).as_posix(): text} if text is not None else {}, to_stderr=True)
    if loaded is not None:
        nodes = loaded.topology.nodes
        gpus = sum(n.gpu_count for n in nodes if n.gpu_count > 0)
        if format is InspectFormat.JSON:
            doc = {"file": Path(path).as_posix(), "name": loaded.topology.name, "nodes": len(nodes), "gpus": gpus,
                   "products": [{"product": p, "intents": short_name(p), "nodes": k, "gpus": g}
                                for p, (k, g) in sorted(tally(nodes).items()) if p]}
            typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        else:
            typer.echo("\n".join([f"{Path(path).as_posix()}: topology {loaded.topology.name}, {len(nodes)} nodes, "
                                  f"{gpus} GPUs", *(f"  {line}" for line in offered(nodes))]))
    exit_for(diags)
