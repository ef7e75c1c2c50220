"""Topology tooling: nvidia-smi matrices, default matrices, node import, loading, CLI."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from typer.testing import CliRunner

from intentc.cli import app
from intentc.topology import nodes_import, nvsmi
from intentc.topology.labels import GPU_PRODUCT
from intentc.topology.load import load_topology
from intentc.topology.matrix import GpuMatrix, Link, LinkInfo
from tests.golden_support import assert_golden

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "nvidia-smi"
NODES_JSON = HERE / "fixtures" / "nodes.json"
GOLDEN = HERE / "golden" / "topology"
EXAMPLE = HERE.parent / "examples" / "topologies" / "cluster.yaml"
REAL = ["real-hgx-h100-xd670", "real-hgx-h100-numa-off", "real-dgx-a100", "real-dgx-a100-nic-legend"]
MATRICES = [*REAL, "hgx-h100", "dgx-a100", "pcie-4gpu"]


def read(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text(encoding="utf-8")


def parse_ok(name: str) -> GpuMatrix:
    matrix, diags = nvsmi.parse(read(name), f"{name}.txt")
    assert diags == []
    assert matrix is not None
    return matrix


def parse_bad(text: str) -> list:
    matrix, diags = nvsmi.parse(text, "topo.txt")
    assert matrix is None
    assert diags
    return diags


def find(text: str, line_prefix: str, token: str, nth: int = 0) -> tuple[int, int]:
    """(line, column) of the nth `token` on the line starting with `line_prefix`."""
    for i, line in enumerate(text.split("\n"), start=1):
        if line.startswith(line_prefix):
            col = -1
            for _ in range(nth + 1):
                col = line.index(token, col + 1)
            return i, col + 1
    raise AssertionError(line_prefix)


# --------------------------------------------------------------------------
# nvidia-smi topo -m
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", MATRICES)
def test_nvidia_smi_golden(name: str) -> None:
    doc = nvsmi.to_obj(parse_ok(name))
    assert_golden(GOLDEN / f"{name}.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")


def test_hgx_h100_matrix() -> None:
    m = parse_ok("hgx-h100")
    assert len(m.gpus) == 8 and len(m.links) == 28
    assert {str(info) for _, _, info in m.links} == {"NV18"}
    assert [g.numa_node for g in m.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert m.gpus[5].cpu_affinity == "48-95,144-191"
    assert m.nics == tuple(f"mlx5_{k}" for k in range(10))
    # NIC names follow PCI order: GPU4's own NIC is mlx5_5 (mlx5_4 is socket 0's frontend NIC)
    assert nvsmi.nearest_nics(m, 4) == (("mlx5_5",), LinkInfo(Link.PIX))
    assert str({(n, g): i for n, g, i in m.nic_links}[("mlx5_4", 0)]) == "NODE"
    assert str({(n, g): i for n, g, i in m.nic_links}[("mlx5_4", 7)]) == "SYS"


def test_real_hgx_h100() -> None:
    m = parse_ok("real-hgx-h100-xd670")
    assert len(m.gpus) == 8 and {str(info) for _, _, info in m.links} == {"NV18"}
    assert [g.numa_node for g in m.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert m.gpus[4].cpu_affinity == "56-111,168-223"
    assert m.nics == tuple(f"mlx5_{k}" for k in range(12))        # from the NIC Legend
    # one PIX NIC per GPU; mlx5_4/5 and mlx5_10/11 are storage NICs no GPU sits next to
    nearest = [nvsmi.nearest_nics(m, g)[0] for g in range(8)]
    assert nearest == [("mlx5_0",), ("mlx5_1",), ("mlx5_2",), ("mlx5_3",),
                       ("mlx5_6",), ("mlx5_7",), ("mlx5_8",), ("mlx5_9",)]
    assert str({(n, g): i for n, g, i in m.nic_links}[("mlx5_1", 0)]) == "PXB"


def test_real_hgx_h100_with_numa_off() -> None:
    m = parse_ok("real-hgx-h100-numa-off")
    assert {g.numa_node for g in m.gpus} == {0} and m.gpus[7].cpu_affinity == "0-191"
    assert nvsmi.nearest_nics(m, 3) == (("mlx5_5",), LinkInfo(Link.PIX))
    assert nvsmi.nearest_nics(m, 7) == (("mlx5_11",), LinkInfo(Link.PIX))


@pytest.mark.parametrize("escape", ["\x1b", ""])
def test_underlined_header_of_newer_drivers(escape: str) -> None:
    lines = read("real-hgx-h100-xd670").split("\n")
    lines[0] = f"\t{escape}[4m{lines[0][1:]}{escape}[0m"
    m, diags = nvsmi.parse("\n".join(lines), "x")
    assert diags == [] and m == parse_ok("real-hgx-h100-xd670")


def test_real_dgx_a100_old_and_new_driver_layouts() -> None:
    old, new = parse_ok("real-dgx-a100"), parse_ok("real-dgx-a100-nic-legend")
    for m in (old, new):
        assert {str(info) for _, _, info in m.links} == {"NV12"}
        assert [g.numa_node for g in m.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
        assert m.gpus[4].cpu_affinity == "112-127,240-255"
        assert nvsmi.nearest_nics(m, 0) == (("mlx5_0", "mlx5_1"), LinkInfo(Link.PXB))
    assert old.nics == tuple(f"mlx5_{k}" for k in range(12))       # named in the header itself
    assert new.nics == tuple(f"mlx5_{k}" for k in range(10))       # NIC0.. mapped by the NIC Legend
    assert nvsmi.nearest_nics(old, 6) == (("mlx5_8", "mlx5_9"), LinkInfo(Link.PXB))
    assert nvsmi.nearest_nics(new, 6) == (("mlx5_6", "mlx5_7"), LinkInfo(Link.PXB))


def test_dgx_a100_matrix() -> None:
    m = parse_ok("dgx-a100")
    assert {str(info) for _, _, info in m.links} == {"NV12"}
    assert [g.numa_node for g in m.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert m.gpus[0].cpu_affinity == "48-63,176-191"
    assert nvsmi.nearest_nics(m, 6) == (("mlx5_8", "mlx5_9"), LinkInfo(Link.PXB))
    assert m.link(7, 2) == LinkInfo(Link.NVLINK, 12)


def test_pcie_box_from_an_older_driver() -> None:
    m = parse_ok("pcie-4gpu")
    assert [str(m.link(0, j)) for j in (1, 2, 3)] == ["PIX", "SYS", "SYS"]
    assert str(m.link(2, 3)) == "PHB"
    assert m.nics == ("mlx5_0",)            # old format: the NIC column carries the real name
    assert nvsmi.nearest_nics(m, 3) == (("mlx5_0",), LinkInfo(Link.SYS))


def test_space_aligned_copy_reads_like_the_tab_separated_original() -> None:
    assert parse_ok("dgx-a100-spaces") == parse_ok("dgx-a100")


def test_windows_line_endings_and_missing_legend_are_fine() -> None:
    text = read("hgx-h100")
    assert nvsmi.parse(text.replace("\n", "\r\n"), "x")[0] == parse_ok("hgx-h100")
    matrix_only = text.split("\n\n")[0] + "\n"
    m, diags = nvsmi.parse(matrix_only, "x")
    assert diags == [] and m is not None
    assert m.nics[0] == "NIC0"              # without the NIC Legend the column name is all there is


def test_unknown_link_type_points_at_the_cell() -> None:
    text = read("dgx-a100").replace("GPU3\tNV12\tNV12\tNV12\t X \tNV12", "GPU3\tNV12\tNV12\tNV12\t X \tNVX")
    [d] = parse_bad(text)
    line, col = find(text, "GPU3", "NVX")
    assert (d.code, d.span.line, d.span.column, d.span.end_column) == ("E0702", line, col, col + 3)
    assert "'NVX'" in d.message


def test_short_row_is_an_unreadable_line() -> None:
    text = read("hgx-h100").replace("GPU6\tNV18\t", "GPU6\t", 1)
    [d] = parse_bad(text)
    assert d.code == "E0701"
    assert d.span.line == find(text, "GPU6", "GPU6")[0]
    assert "GPU6" in d.message


def test_asymmetric_matrix() -> None:
    text = read("pcie-4gpu")
    lines = text.split("\n")
    lines[3] = lines[3].replace("SYS\t X \tPHB", "SYS\t X \tPXB")     # GPU2–GPU3 says PXB, GPU3–GPU2 PHB
    [d] = parse_bad("\n".join(lines))
    assert d.code == "E0703" and d.span.line == 5      # reported at the later of the two cells
    assert "GPU2–GPU3 is PXB but GPU3–GPU2 is PHB" in d.message


def test_missing_row_and_duplicate_row() -> None:
    text = read("pcie-4gpu")
    lines = text.split("\n")
    no_gpu1 = "\n".join(lines[:2] + lines[3:])
    [d] = parse_bad(no_gpu1)
    assert d.code == "E0704" and d.span.line == 1 and "GPU1" in d.message
    twice = "\n".join(lines[:3] + [lines[2]] + lines[3:])
    assert [x.code for x in parse_bad(twice)] == ["E0704"]


def test_x_off_the_diagonal_and_a_non_x_diagonal() -> None:
    text = read("pcie-4gpu").replace("GPU0\t X \tPIX", "GPU0\tPIX\t X ")
    diags = parse_bad(text)
    assert [d.code for d in diags] == ["E0702", "E0702"]


def test_not_nvidia_smi_output() -> None:
    [d] = parse_bad("$ nvidia-smi topo -m\n" + read("pcie-4gpu"))
    assert (d.code, d.span.line) == ("E0705", 1)
    assert [x.code for x in parse_bad("")] == ["E0705"]
    assert [x.code for x in parse_bad("\n\n  \n")] == ["E0705"]


def test_bad_affinity_values() -> None:
    text = read("dgx-a100").replace("48-63,176-191\t3", "48-63;176-191\tthree", 1)
    diags = parse_bad(text)
    assert [d.code for d in diags] == ["E0706", "E0706"]
    assert {d.span.line for d in diags} == {2}


def test_too_many_values_on_a_row() -> None:
    text = read("pcie-4gpu").replace("0-31,64-95\t0\n", "0-31,64-95\t0\t7\n", 1)
    [d] = parse_bad(text)
    assert d.code == "E0701" and d.span.line == 2


def test_unreadable_lines_after_the_matrix() -> None:
    text = read("dgx-a100")
    diags = parse_bad(text + "\nsomething else\n")
    assert [d.code for d in diags] == ["E0701"]
    assert diags[0].span.line == text.count("\n") + 2
    unknown_nic = text.replace("  NIC9: mlx5_9", "  NIC12: mlx5_12")
    assert [d.code for d in parse_bad(unknown_nic)] == ["E0707"]


def test_header_problems() -> None:
    text = read("pcie-4gpu")
    assert [d.code for d in parse_bad(text.replace("GPU2\tGPU3", "GPU3\tGPU2", 1))] == ["E0701", "E0701"]
    assert [d.code for d in parse_bad(text.replace("NUMA Affinity", "NUMA Affinity\tWhatever", 1))] == ["E0701"]


def test_multi_node_numa_affinity_reads_as_none() -> None:
    text = read("pcie-4gpu").replace("0-31,64-95\t0\n", "0-31,64-95\t0-1\n", 1)
    m, diags = nvsmi.parse(text, "x")
    assert diags == [] and m is not None
    assert m.gpus[0].numa_node is None and m.gpus[1].numa_node == 0


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_damaged_matrices_never_crash_and_never_half_parse(data: st.DataObject) -> None:
    """Random edits to a real file either still parse to a complete matrix or give
    diagnostics that point inside the file — never a traceback, never a partial matrix."""
    lines = read(data.draw(st.sampled_from(MATRICES))).split("\n")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "dup", "garble", "swap-token"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "garble":
            lines[i] = data.draw(st.text(max_size=30))
        else:
            toks = lines[i].split("\t")
            if toks:
                toks[data.draw(st.integers(0, len(toks) - 1))] = data.draw(
                    st.sampled_from(["NV4", "SYS", "X", "?", "", "N/A", "12"]))
                lines[i] = "\t".join(toks)
    text = "\n".join(lines)
    matrix, diags = nvsmi.parse(text, "t.txt")
    if matrix is None:
        assert diags and all(d.code.startswith("E07") for d in diags)
        n_lines = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        assert all(1 <= d.span.line <= n_lines for d in diags)
    else:
        assert diags == []
        n = len(matrix.gpus)
        assert len(matrix.links) == n * (n - 1) // 2
        assert len(matrix.nic_links) == n * len(matrix.nics)


# --------------------------------------------------------------------------
# Default matrices
# --------------------------------------------------------------------------

@pytest.mark.parametrize("product,count,expected", [
    ("H100-80GB", 8, {"NV18"}), ("NVIDIA-H100-80GB-HBM3", 8, {"NV18"}), ("NVIDIA-H200", 8, {"NV18"}),
    ("B200", 8, {"NV18"}), ("NVIDIA-GB200", 4, {"NV18"}), ("A100-80GB", 8, {"NV12"}),
    ("NVIDIA-A100-SXM4-40GB", 8, {"NV12"}), ("H800", 8, {"NV8"}),
    ("NVIDIA-H100-PCIe", 4, {"PHB", "SYS"}), ("NVIDIA-H100-NVL", 2, {"SYS"}), ("L40S", 4, {"PHB", "SYS"}),
    (None, 8, {"PHB", "SYS"}),
])
def test_default_matrix_link_types(product: str | None, count: int, expected: set[str]) -> None:
    m = nvsmi.default_matrix(count, product)
    assert {str(info) for _, _, info in m.links} == expected
    assert len(m.links) == count * (count - 1) // 2


def test_default_matrix_numa_split_and_edges() -> None:
    m = nvsmi.default_matrix(8, "L4")
    assert [g.numa_node for g in m.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert str(m.link(0, 3)) == "PHB" and str(m.link(3, 4)) == "SYS"
    assert m.nics == () and all(g.cpu_affinity is None for g in m.gpus)
    assert nvsmi.default_matrix(0, "H100") == GpuMatrix((), ())
    one = nvsmi.default_matrix(1, "H100")
    assert len(one.gpus) == 1 and one.links == () and one.gpus[0].numa_node == 0
    assert [g.numa_node for g in nvsmi.default_matrix(3, None).gpus] == [0, 0, 1]


# --------------------------------------------------------------------------
# Node import
# --------------------------------------------------------------------------

def _nodes() -> dict:
    return json.loads(NODES_JSON.read_text())


def test_import_golden_and_shape() -> None:
    text, diags = nodes_import.import_nodes(_nodes(), "eu-west", path="nodes.json",
                                            text=NODES_JSON.read_text())
    assert_golden(GOLDEN / "nodes-import.yaml", text)
    assert [d.code for d in diags] == ["W0701", "W0701"]
    assert {d.span.line for d in diags} == {215, 482}         # each node's "name" line
    doc = yaml.safe_load(text)
    assert doc["kind"] == "Topology" and doc["metadata"] == {"name": "eu-west"}
    assert doc["spec"]["levels"] == ["zone", "rack", "nvlink", "node"]
    nodes = {n["name"]: n for n in doc["spec"]["nodes"]}
    assert list(nodes) == sorted(nodes)
    h = nodes["hgx-h100-001"]
    assert h["gpu"] == {"product": "NVIDIA-H100-80GB-HBM3", "count": 8, "memory": "81559Mi"}
    assert h["cpu"] == "192"
    assert h["domains"] == {"zone": "eu-west-1a", "rack": "r07", "nvlink": "hgx-h100-001"}
    # the NVL72 trays share their clique as the NVLink domain
    assert nodes["gb200-c01-t01"]["domains"]["nvlink"] == nodes["gb200-c01-t02"]["domains"]["nvlink"]
    assert nodes["l40s-legacy-01"]["gpu"] == {"count": 4}       # device plugin only, no GFD labels
    assert "gpu" not in nodes["cpu-pool-01"] and nodes["cpu-pool-01"]["memory"] == "128Gi"
    assert not any(k.startswith("feature.node") for n in nodes.values() for k in n.get("labels", {}))


def test_import_is_independent_of_node_order_and_yaml_round_trips() -> None:
    nodes = _nodes()
    text, _ = nodes_import.import_nodes(nodes, "eu-west")
    shuffled = copy.deepcopy(nodes)
    random.Random(7).shuffle(shuffled["items"])
    assert nodes_import.import_nodes(shuffled, "eu-west")[0] == text
    assert YAML(typ="safe").load(text) == yaml.safe_load(text)


def test_import_options_and_bad_input() -> None:
    nodes = _nodes()
    text, _ = nodes_import.import_nodes(nodes, "x", rack_label="no.such/label", keep_labels=("nvidia.com/gpu.family",))
    doc = yaml.safe_load(text)
    assert doc["spec"]["levels"] == ["zone", "nvlink", "node"]
    assert all(set(n.get("labels", {})) <= {"nvidia.com/gpu.family"} for n in doc["spec"]["nodes"])
    single, diags = nodes_import.import_nodes(nodes["items"][1], "one")
    assert diags == [] and yaml.safe_load(single)["spec"]["nodes"][0]["name"] == "hgx-h100-002"
    _, diags = nodes_import.import_nodes({"kind": "Pod"}, "x")
    assert [d.code for d in diags] == ["E0710"]
    _, diags = nodes_import.import_nodes({"items": [{"metadata": {}}, "junk"]}, "x")
    assert [d.code for d in diags] == ["E0710", "E0710"]
    broken = copy.deepcopy(nodes)
    broken["items"][1]["metadata"]["labels"]["nvidia.com/gpu.count"] = "eight"
    text, diags = nodes_import.import_nodes(broken, "x")
    assert any(d.code == "W0701" and "eight" in d.message for d in diags)
    # the device plugin's capacity still gives the count
    assert "count: 8" in text.split("hgx-h100-002")[1].split("- name")[0]
    empty, diags = nodes_import.import_nodes({"kind": "List", "items": []}, "x")
    assert diags == [] and yaml.safe_load(empty)["spec"]["nodes"] == []


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=20))
def test_yaml_scalar_reads_back_as_the_same_string(value: str) -> None:
    rendered = "{k: " + nodes_import.yaml_scalar(value) + "}"
    assert yaml.safe_load(rendered) == {"k": value}
    assert YAML(typ="safe").load(rendered) == {"k": value}


@pytest.mark.parametrize("quantity,expected", [
    ("2147483648Ki", "2Ti"), ("2113455612Ki", "2113455612Ki"), ("131072Mi", "128Gi"), ("1024", "1Ki"),
    ("64Gi", "64Gi"), ("100M", "100M"), ("0", "0"),
])
def test_normalize_memory(quantity: str, expected: str) -> None:
    assert nodes_import.normalize_memory(quantity) == expected


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

runner = CliRunner()


@pytest.mark.parametrize("name", ["hgx-h100", "dgx-a100"])
def test_inspect_text_golden(name: str) -> None:
    result = runner.invoke(app, ["topology", "inspect", "--nvidia-smi", str(FIXTURES / f"{name}.txt")])
    assert result.exit_code == 0, result.stderr
    out = result.stdout.replace(str(FIXTURES) + "/", "")
    assert_golden(GOLDEN / f"inspect-{name}.txt", out)


def test_inspect_json_is_the_parsed_matrix() -> None:
    path = str(FIXTURES / "dgx-a100.txt")
    result = runner.invoke(app, ["topology", "inspect", "--nvidia-smi", path, "-o", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc.pop("file") == path
    assert doc == nvsmi.to_obj(parse_ok("dgx-a100"))


def test_inspect_reports_the_unreadable_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(read("pcie-4gpu").replace("GPU2\tSYS\tSYS\t X \tPHB", "GPU2\tSYS\tSYS\t X \tP?B"))
    result = runner.invoke(app, ["topology", "inspect", "--nvidia-smi", str(bad)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert f"{bad}:4:" in result.stderr and "error[E0702]: unknown link type 'P?B'" in result.stderr
    assert "GPU2\tSYS" not in result.stderr and "GPU2 SYS SYS" in result.stderr    # the line, shown
    missing = runner.invoke(app, ["topology", "inspect", "--nvidia-smi", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "E0001" in missing.stderr


def test_import_command(tmp_path: Path) -> None:
    out = tmp_path / "cluster.yaml"
    result = runner.invoke(app, ["topology", "import", "--nodes", str(NODES_JSON), "--name", "eu-west",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.read_text() == nodes_import.import_nodes(_nodes(), "eu-west")[0]
    assert "W0701" in result.stderr
    to_stdout = runner.invoke(app, ["topology", "import", "--nodes", str(NODES_JSON), "--name", "eu-west"])
    assert to_stdout.stdout == out.read_text()
    assert runner.invoke(app, ["topology", "import", "--nodes", str(NODES_JSON), "--name", "Bad_Name"]).exit_code == 2
    junk = tmp_path / "junk.json"
    junk.write_text('{"items": [')
    bad = runner.invoke(app, ["topology", "import", "--nodes", str(junk), "--name", "x"])
    assert bad.exit_code == 1 and "E0710" in bad.stderr and bad.stdout == ""


def test_help_has_examples() -> None:
    for args in (["topology", "--help"], ["topology", "import", "--help"], ["topology", "inspect", "--help"],
                 ["graph", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and "Examples:" in result.stdout


# --------------------------------------------------------------------------
# Loading a topology file with its matrices
# --------------------------------------------------------------------------

def test_load_example_cluster() -> None:
    loaded, diags = load_topology(str(EXAMPLE))
    assert diags == [] and loaded is not None
    topo = loaded.topology
    assert topo.name == "example" and topo.levels == ("zone", "rack", "nvlink", "node")
    assert len(topo.nodes) == 38 and [n for n, _ in loaded.matrices] == [n.name for n in topo.nodes]
    # one parse per distinct file: nodes of one type share the same matrix object
    assert loaded.matrix("hgx-001") is loaded.matrix("hgx-016")
    assert loaded.matrix("hgx-001") == parse_ok("real-hgx-h100-xd670")
    assert [g.numa_node for g in loaded.matrix("dgx-a100-04").gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    # GB200 trays ship no matrix: the default for the product
    assert loaded.matrix("nvl72-a-t07") == nvsmi.default_matrix(4, "GB200")
    assert {n.domain("nvlink") for n in topo.nodes if n.gpu_product == "GB200"} == {"nvl72-a"}
    with pytest.raises(KeyError):
        loaded.matrix("no-such-node")


def test_imported_file_loads_back(tmp_path: Path) -> None:
    text, _ = nodes_import.import_nodes(_nodes(), "eu-west")
    path = tmp_path / "eu-west.yaml"
    path.write_text(text)
    loaded, diags = load_topology(str(path))
    assert [d.code for d in diags if d.is_error] == [] and loaded is not None
    nodes = {n.name: n for n in loaded.topology.nodes}
    assert nodes["hgx-h100-001"].gpu_memory == "81559Mi"
    assert nodes["hgx-h100-001"].domains == (("zone", "eu-west-1a"), ("rack", "r07"), ("nvlink", "hgx-h100-001"))
    assert nodes["cpu-pool-01"].gpu_count == 0 and loaded.matrix("cpu-pool-01") == GpuMatrix((), ())
    assert {str(i) for _, _, i in loaded.matrix("gb200-c01-t01").links} == {"NV18"}


def _topology_yaml(*nodes: str) -> str:
    return ("apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {name: lab}\nspec:\n"
            "  levels: [zone, nvlink, node]\n  nodes:\n" + "".join(nodes))


def _node(name: str, count: int, topo: str | None) -> str:
    text = f"    - name: {name}\n      gpu: {{product: H100-80GB, count: {count}}}\n"
    return text + (f"      nvidiaSmiTopo: {topo}\n" if topo else "")


def test_load_errors_point_at_the_topology_file(tmp_path: Path) -> None:
    (tmp_path / "topo").mkdir()
    (tmp_path / "topo" / "h100.txt").write_text(read("hgx-h100"))
    path = tmp_path / "lab.yaml"
    path.write_text(_topology_yaml(_node("a", 8, "topo/h100.txt"), _node("b", 4, "topo/h100.txt"),
                                   _node("c", 8, "topo/missing.txt")))
    loaded, diags = load_topology(str(path))
    assert loaded is None
    by_code = {d.code: d for d in diags}
    assert sorted(by_code) == ["E0001", "E0708"]
    mismatch = by_code["E0708"]
    assert (mismatch.span.file, mismatch.span.line) == (str(path), 12)
    assert "declares 4 GPUs" in mismatch.message and "describes 8" in mismatch.message
    assert mismatch.related[0].span.line == 9
    missing = by_code["E0001"]
    assert (missing.span.file, missing.span.line) == (str(path), 15)


def test_load_reports_matrix_errors_in_the_matrix_file(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text(read("pcie-4gpu").replace("PHB", "PHX", 1))
    path = tmp_path / "lab.yaml"
    path.write_text(_topology_yaml(_node("a", 4, "bad.txt")))
    loaded, diags = load_topology(str(path))
    assert loaded is None
    assert [(d.code, d.span.file, d.span.line) for d in diags] == [("E0702", str(tmp_path / "bad.txt"), 4)]


def test_load_needs_exactly_one_topology(tmp_path: Path) -> None:
    two = tmp_path / "two.yaml"
    two.write_text(_topology_yaml(_node("a", 8, None)) + "---\n" + _topology_yaml(_node("b", 8, None)))
    loaded, diags = load_topology(str(two))
    assert loaded is None and [d.code for d in diags] == ["E0709"]
    assert diags[0].span.line == 10 and diags[0].related[0].span.line == 1
    none = tmp_path / "none.yaml"
    none.write_text("apiVersion: intentc.dev/v1alpha1\nkind: Dataset\nmetadata: {name: raw}\nspec: {uri: s3://x}\n")
    loaded, diags = load_topology(str(none))
    assert loaded is None and [d.code for d in diags] == ["E0709"]
    loaded, diags = load_topology(str(tmp_path / "absent.yaml"))
    assert loaded is None and [d.code for d in diags] == ["E0001"]
    schema_error = tmp_path / "bad.yaml"
    schema_error.write_text(_topology_yaml("    - name: a\n      gpu: {count: many}\n"))
    loaded, diags = load_topology(str(schema_error))
    assert loaded is None and diags and all(d.code.startswith("E02") for d in diags)


def test_the_importer_and_live_planning_read_a_node_alike(tmp_path: Path) -> None:
    """`topology import` writes, and a live plan adds, the same description of a GPU node:
    one reader (`topology/cluster_node.topology_node`), so the imported file loaded back
    equals what `with_cluster_nodes` adds to an empty topology on the file's levels."""
    from intentc import ir
    from intentc.ir.quantity import parse_quantity
    from intentc.plan.cluster_nodes import with_cluster_nodes
    from intentc.topology.load import LoadedTopology

    text, _ = nodes_import.import_nodes(_nodes(), "eu-west")
    (tmp_path / "t.yaml").write_text(text)
    imported, diags = load_topology(str(tmp_path / "t.yaml"))
    assert imported is not None, diags
    empty = LoadedTopology(ir.Topology("eu-west", imported.topology.levels, ()), ())
    live, _ = with_cluster_nodes(empty, _nodes()["items"])

    def seen(n: ir.TopologyNode) -> tuple:
        # a level the file leaves out for a node is that node's own domain (the W0701 the importer gives)
        domains = tuple((lvl, n.domain(lvl) or n.name) for lvl in imported.topology.levels if lvl != "node")
        return (n.name, n.gpu_count, n.gpu_product, n.gpu_memory, n.cpu, domains, n.taints,
                parse_quantity(n.memory) if n.memory else None)
    from_file = [seen(n) for n in imported.topology.nodes if n.gpu_count]
    assert len(from_file) >= 5 and [seen(n) for n in live.topology.nodes] == from_file


# --------------------------------------------------------------------------
# GPU product names: GFD's long ones, the intents' short ones
# --------------------------------------------------------------------------

GFD_PRODUCTS = {"H100-80GB": "NVIDIA-H100-80GB-HBM3", "A100-80GB": "NVIDIA-A100-SXM4-80GB", "GB200": "NVIDIA-GB200"}


@pytest.mark.parametrize(("long", "short"), [
    ("NVIDIA-H100-80GB-HBM3", "H100-80GB"), ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
    ("NVIDIA-A100-80GB-PCIe", "A100-80GB"), ("NVIDIA-A100-SXM4-40GB", "A100-40GB"), ("NVIDIA-GB200", "GB200"),
    ("NVIDIA-B200", "B200"), ("NVIDIA-H200", "H200-141GB"), ("NVIDIA-H100-PCIe", "H100-80GB"),
    ("NVIDIA-H100-NVL", "H100-94GB"), ("NVIDIA-H200-NVL", "H200-141GB"), ("Tesla-V100-SXM2-16GB", "V100-16GB"),
    ("NVIDIA H100 80GB HBM3", "H100-80GB"), ("NVIDIA-GH200-480GB", "GH200-480GB"),
    ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB-MIG-1g.5gb"),
    # the short names are their own short names
    ("H100-80GB", "H100-80GB"), ("GB200", "GB200"), ("L40S", "L40S"), ("H200", "H200-141GB"),
])
def test_gpu_product_names_meet_in_one_short_name(long: str, short: str) -> None:
    from intentc.topology.products import describe, product_key, same_product, short_name

    assert short_name(long) == short and short_name(short) == short
    assert same_product(long, short) and product_key(long.lower()) == product_key(short)
    assert describe(long) == (long if long == short else f"{long} (matches intents' {short})")


def test_distinct_products_stay_distinct_and_suggestions_keep_the_chip() -> None:
    from intentc.topology.products import nearest, same_product

    assert not same_product("NVIDIA-A100-SXM4-80GB", "A100-40GB")
    assert not same_product("NVIDIA-H100-80GB-HBM3", "H200-141GB")
    assert not same_product("NVIDIA-GB200", "B200")
    offered = ["NVIDIA-H100-80GB-HBM3", "NVIDIA-GB200"]
    assert nearest("H100-80G", offered) == "H100-80GB" and nearest("H100", offered) == "H100-80GB"
    assert nearest("A100-80GB", offered) is None           # another chip, however alike the spelling


def gfd_nodes_json(tmp_path: Path) -> Path:
    """The example cluster's nodes labelled as GPU feature discovery labels them (long product names)."""
    from tests.kube_nodes import node_manifest

    loaded, diags = load_topology(str(EXAMPLE))
    assert loaded is not None and not diags
    items = []
    for n in loaded.topology.nodes:
        m = node_manifest(n, loaded.topology.levels)
        if n.gpu_product:
            m["metadata"]["labels"][GPU_PRODUCT] = GFD_PRODUCTS[n.gpu_product]
        items.append(m)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_the_bundled_intents_plan_on_a_topology_imported_from_gfd_labels(tmp_path: Path) -> None:
    """`topology import` keeps GFD's `NVIDIA-H100-80GB-HBM3`; the intents say `H100-80GB`: the
    planner matches them (every intent was refused with E0601), and import's summary says so."""
    from intentc.pipeline import compile_paths

    result = runner.invoke(app, ["topology", "import", "--nodes", str(gfd_nodes_json(tmp_path)), "--name", "example"])
    assert result.exit_code == 0, result.stderr
    assert "product: NVIDIA-H100-80GB-HBM3" in result.stdout and "H100-80GB," not in result.stdout
    assert "NVIDIA-H100-80GB-HBM3 (matches intents' H100-80GB): 16 nodes, 128 GPUs" in result.stderr
    assert "NVIDIA-A100-SXM4-80GB (matches intents' A100-80GB): 4 nodes, 32 GPUs" in result.stderr
    topology = tmp_path / "imported.yaml"
    topology.write_text(result.stdout)
    compiled = compile_paths([str(HERE.parent / "intents")], str(topology), "a" * 40)
    assert [d.code for d in compiled.diagnostics if d.is_error] == []
    assert compiled.ok and compiled.plan is not None and not compiled.plan.unplaced
    assert not [d for d in compiled.diagnostics if d.code == "W0401"]
    imported, _ = load_topology(str(topology))
    assert imported is not None
    product_of = {n.name: n.gpu_product for n in imported.topology.nodes}
    used = {product_of[a.node] for p in compiled.plan.placements for a in p.allocations}
    assert used == set(GFD_PRODUCTS.values())
    shown = runner.invoke(app, ["topology", "inspect", "--topology", str(topology)])
    assert shown.exit_code == 0, shown.stderr
    assert "NVIDIA-GB200 (matches intents' GB200): 18 nodes, 72 GPUs" in shown.stdout


def test_an_unknown_product_is_refused_with_the_topology_products(tmp_path: Path) -> None:
    """E0601 for a product no node has: did you mean (same chip) and, in the hint, every product
    in the intents' spelling with the nodes' own beside it."""
    from intentc.pipeline import compile_paths

    topology = tmp_path / "imported.yaml"
    topology.write_text(runner.invoke(app, ["topology", "import", "--nodes", str(gfd_nodes_json(tmp_path)),
                                            "--name", "example"]).stdout)
    (tmp_path / "intents").mkdir()
    (tmp_path / "intents" / "a.intent").write_text(
        'tenant t { tier: gold }\nintent train {\n  trigger: on push\n  action: training image "trainer:1"\n'
        '  context: tenant t\n  constraints: gpus 8 x "H100-80G" within nvlink\n}\n')
    compiled = compile_paths([str(tmp_path / "intents")], str(topology), "a" * 40)
    [refused] = [d for d in compiled.diagnostics if d.code == "E0601"]
    assert 'has H100-80G GPUs (did you mean "H100-80GB"?)' in refused.message
    assert refused.hint == ('ask for one of the products topology "example" offers: A100-80GB (NVIDIA-A100-SXM4-80GB), '
                            "GB200 (NVIDIA-GB200), H100-80GB (NVIDIA-H100-80GB-HBM3)")


def test_kueue_selects_nodes_by_the_topology_spelling_of_the_product(tmp_path: Path) -> None:
    """Kueue's Jobs carry a `nvidia.com/gpu.product` node selector; on a topology imported from
    GFD labels it is the label's value (the planned nodes'), not the intents' short name, which
    no node of a real cluster carries."""
    from intentc.pipeline import compile_paths
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION

    topology = tmp_path / "imported.yaml"
    topology.write_text(runner.invoke(app, ["topology", "import", "--nodes", str(gfd_nodes_json(tmp_path)),
                                            "--name", "example"]).stdout)
    compiled = compile_paths([str(HERE.parent / "intents")], str(topology), "a" * 40, DEFAULT_KUBE_VERSION, "kueue")
    assert compiled.rendered is not None
    selected = {m.body["spec"]["template"]["spec"]["nodeSelector"][GPU_PRODUCT]
                for m in compiled.rendered.manifests if m.ref.kind == "Job"
                and GPU_PRODUCT in m.body["spec"]["template"]["spec"].get("nodeSelector", {})}
    assert selected == set(GFD_PRODUCTS.values())
