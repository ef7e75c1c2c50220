"""Reading `nvidia-smi topo -m` output into a `GpuMatrix`.

The text is a square matrix of devices (``GPU0..``, then NICs as ``NIC0..``
or, from older drivers, ``mlx5_0..``) followed by up to three per-GPU
columns (``CPU Affinity``, ``NUMA Affinity``, ``GPU NUMA ID``), a
``Legend:`` block and, on newer drivers, a ``NIC Legend:`` that maps
``NIC0`` to its real name (``mlx5_0``).  nvidia-smi separates cells with
tabs, but copies pasted from terminals and issue trackers have spaces;
every cell is a single token, so both read the same.  Drivers from about
r550 underline the header row with terminal escapes (``ESC[4m`` ... ``ESC[0m``),
which survive in saved captures, sometimes without the ESC byte; they are
blanked out, keeping every column where it was for diagnostics.

The planner trusts what this returns, so the parser never guesses: a line
it cannot read, an unknown link type or an asymmetric matrix is a
diagnostic pointing at that line and cell, and no matrix is returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from intentc.diagnostics import Diagnostic, Span, error, excerpt
from intentc.topology.matrix import GpuInfo, GpuMatrix, Link, LinkInfo

TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_TRAILING = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
_GPU = re.compile(r"GPU(\d+)")
_NV = re.compile(r"NV(\d+)")
_CPUSET = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")
_LEGEND_ENTRY = re.compile(r"\s*(?:X|NV#|[A-Z]+)\s*=\s*\S.*")
_NIC_LEGEND_ENTRY = re.compile(r"\s*(NIC\d+)\s*:\s*(\S+)\s*")
_TERMINAL_STYLE = re.compile(r"\x1b?\[\d+(?:;\d+)*m")
# "SOC" is what drivers before 2017 printed for today's "SYS".
_LINKS = {"PIX": Link.PIX, "PXB": Link.PXB, "PHB": Link.PHB, "NODE": Link.NODE,
          "SYS": Link.SYS, "SOC": Link.SYS}


@dataclass(frozen=True)
class _Tok:
    text: str
    col: int          # 1-based


def _tokens(line: str) -> list[_Tok]:
    return [_Tok(m.group(), m.start() + 1) for m in re.finditer(r"\S+", line)]


class _Reader:
    """One parse: the text, its path, and the diagnostics found so far."""

    def __init__(self, text: str, path: str) -> None:
        text = _TERMINAL_STYLE.sub(lambda m: " " * len(m.group()), text)
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.path = path
        self.diags: list[Diagnostic] = []

    def at(self, line_no: int, tok: _Tok) -> Span:
        return Span(self.path, line_no, tok.col, line_no, tok.col + len(tok.text))

    def line_span(self, line_no: int) -> Span:
        line = self.lines[line_no - 1]
        start = len(line) - len(line.lstrip()) + 1
        return Span(self.path, line_no, start, line_no, len(line.rstrip()) + 1)

    def err(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diags.append(error(code, message, span, hint=hint))

    def numbered(self, start: int) -> Iterator[tuple[int, str]]:
        for i in range(start, len(self.lines)):
            yield i + 1, self.lines[i]


@dataclass(frozen=True)
class _Header:
    line_no: int
    devices: tuple[_Tok, ...]          # GPU columns first, then NIC columns
    trailing: tuple[str, ...]          # subset of TRAILING_COLUMNS, in order
    gpu_count: int


def _parse_header(r: _Reader) -> tuple[_Header | None, int]:
    """The first non-blank line must be the column header starting at GPU0."""
    for line_no, line in r.numbered(0):
        if not line.strip():
            continue
        m = _TRAILING.search(line)
        head = line[: m.start()] if m else line
        devices = tuple(_tokens(head))
        trailing: list[str] = []
        if m:
            rest = line[m.start():]
            names = [" ".join(x.split()) for x in _TRAILING.findall(rest)]
            leftover = _TRAILING.sub("", rest).strip()
            if leftover or names != [c for c in TRAILING_COLUMNS if c in names]:
                r.err("E0701", f"cannot read the column header: unexpected {excerpt(leftover or rest.strip())!r}",
                      r.line_span(line_no), hint="expected the columns " + ", ".join(TRAILING_COLUMNS))
                return None, line_no
            trailing = names
        if not devices or devices[0].text != "GPU0":
            r.err("E0705", "not `nvidia-smi topo -m` output: the first line should be the header "
                           "row GPU0 GPU1 ... CPU Affinity", r.line_span(line_no),
                  hint="save the output of `nvidia-smi topo -m` unchanged")
            return None, line_no
        gpu_count = 0
        seen: set[str] = set()
        ok = True
        for tok in devices:
            gm = _GPU.fullmatch(tok.text)
            if tok.text in seen:
                r.err("E0701", f"device {tok.text} appears twice in the header", r.at(line_no, tok))
                ok = False
            seen.add(tok.text)
            if gm:
                if int(gm.group(1)) != gpu_count or gpu_count != devices.index(tok):
                    r.err("E0701", f"unexpected column {tok.text}: GPU columns must be GPU0, GPU1, ... "
                                   "in order, before the NIC columns", r.at(line_no, tok))
                    ok = False
                gpu_count += 1
        if not ok:
            return None, line_no
        return _Header(line_no, devices, tuple(trailing), gpu_count), line_no
    r.err("E0705", "empty file: expected `nvidia-smi topo -m` output", Span.point(r.path, 1, 1))
    return None, 0


def _cell(r: _Reader, line_no: int, tok: _Tok, diagonal: bool) -> LinkInfo | None:
    if diagonal:
        if tok.text != "X":
            r.err("E0702", f"expected X on the diagonal, found {excerpt(tok.text)!r}", r.at(line_no, tok))
        return None
    nv = _NV.fullmatch(tok.text)
    if nv and int(nv.group(1)) > 0:
        return LinkInfo(Link.NVLINK, int(nv.group(1)))
    link = _LINKS.get(tok.text)
    if link is None:
        r.err("E0702", f"unknown link type {excerpt(tok.text)!r}", r.at(line_no, tok),
              hint="expected X (diagonal only), NV#, PIX, PXB, PHB, NODE or SYS")
        return None
    return LinkInfo(link)


def _affinity(r: _Reader, line_no: int, column: str, tok: _Tok) -> tuple[bool, str | int | None]:
    """(ok, value) for one trailing column; "N/A" reads as None."""
    if tok.text == "N/A":
        return True, None
    if not _CPUSET.fullmatch(tok.text):
        r.err("E0706", f"invalid {column} value {excerpt(tok.text)!r}", r.at(line_no, tok),
              hint="expected N/A or CPU/NUMA ids such as 0-47,96-143")
        return False, None
    if column == "CPU Affinity":
        return True, tok.text
    # A GPU whose NUMA affinity spans several nodes is bound to none of them.
    return True, int(tok.text) if tok.text.isdigit() else None


def _is_affinity(text: str) -> bool:
    return text == "N/A" or _CPUSET.fullmatch(text) is not None


@dataclass
class _Rows:
    cells: dict[tuple[int, int], tuple[LinkInfo | None, int, _Tok]]
    numa: dict[int, int | None]
    cpu: dict[int, str | None]
    seen: set[int]


def _parse_rows(r: _Reader, h: _Header) -> tuple[_Rows, int]:
    index = {tok.text: i for i, tok in enumerate(h.devices)}
    n = len(h.devices)
    rows = _Rows({}, {}, {}, set())
    next_line = len(r.lines) + 1
    for line_no, line in r.numbered(h.line_no):
        if not line.strip() or line.strip() in ("Legend:", "NIC Legend:"):
            next_line = line_no
            break
        toks = _tokens(line)
        label = toks[0]
        row = index.get(label.text)
        if row is None:
            r.err("E0701", f"cannot read matrix line: {excerpt(label.text)!r} is not a device of the header",
                  r.line_span(line_no))
            continue
        if row in rows.seen:
            r.err("E0704", f"row {label.text} given twice", r.at(line_no, label))
            continue
        rows.seen.add(row)
        # Link cells never look like affinity values (digits, ranges, N/A), so a
        # missing cell is caught here instead of shifting the affinities into the
        # matrix; surplus cell-like tokens are bad affinity values (E0706 below).
        k = 1
        while k < len(toks) and not _is_affinity(toks[k].text):
            k += 1
        k = min(k, 1 + n)
        cells, extra = toks[1:k], toks[k:]
        allowed = len(h.trailing) if row < h.gpu_count else 0
        if len(cells) != n:
            r.err("E0701", f"cannot read matrix line for {label.text}: {len(cells)} link cells, "
                           f"the header lists {n} devices", r.line_span(line_no))
            continue
        if len(extra) > allowed:
            r.err("E0701", f"cannot read matrix line for {label.text}: {len(extra)} values after the "
                           f"link cells, expected at most {allowed}", r.line_span(line_no))
            continue
        for col, tok in enumerate(cells):
            rows.cells[(row, col)] = (_cell(r, line_no, tok, col == row), line_no, tok)
        values: dict[str, str | int | None] = {}
        for column, tok in zip(h.trailing, extra):
            ok, value = _affinity(r, line_no, column, tok)
            if ok:
                values[column] = value
        if row < h.gpu_count:
            cpu, numa = values.get("CPU Affinity"), values.get("NUMA Affinity")
            rows.cpu[row] = cpu if isinstance(cpu, str) else None
            rows.numa[row] = numa if isinstance(numa, int) else None
    return rows, next_line


def _check_complete(r: _Reader, h: _Header, rows: _Rows) -> None:
    for i, tok in enumerate(h.devices):
        if i not in rows.seen:
            r.err("E0704", f"device {tok.text} has a column but no row", r.at(h.line_no, tok))
    n = len(h.devices)
    for a in range(n):
        for b in range(a + 1, n):
            x, y = rows.cells.get((a, b)), rows.cells.get((b, a))
            if x and y and x[0] and y[0] and x[0] != y[0]:
                later = max(x, y, key=lambda c: (c[1], c[2].col))
                r.err("E0703", f"matrix is not symmetric: {h.devices[a].text}–{h.devices[b].text} "
                               f"is {x[0]} but {h.devices[b].text}–{h.devices[a].text} is {y[0]}",
                      r.at(later[1], later[2]))


def _parse_legends(r: _Reader, h: _Header, start: int) -> dict[str, str]:
    """Check the Legend / NIC Legend blocks; return NIC# → real name."""
    nic_names: dict[str, str] = {}
    section = ""
    columns = {tok.text for tok in h.devices[h.gpu_count:]}
    for line_no, line in r.numbered(start - 1):
        text = line.strip()
        if not text:
            continue
        if text in ("Legend:", "NIC Legend:"):
            section = text
            continue
        if section == "Legend:" and _LEGEND_ENTRY.fullmatch(line):
            continue
        m = _NIC_LEGEND_ENTRY.fullmatch(line) if section == "NIC Legend:" else None
        if m:
            if m.group(1) not in columns:
                r.err("E0707", f"NIC legend names {m.group(1)}, which is not a column of the matrix",
                      r.line_span(line_no))
            nic_names[m.group(1)] = m.group(2)
            continue
        where = f"in the {section[:-1]} block" if section else "after the matrix"
        r.err("E0701", f"cannot read line {where}: {excerpt(text)!r}", r.line_span(line_no))
    return nic_names


def parse(text: str, path: str) -> tuple[GpuMatrix | None, list[Diagnostic]]:
    """`nvidia-smi topo -m` text → GpuMatrix, or None with diagnostics (never a partial guess)."""
    r = _Reader(text, path)
    header, _ = _parse_header(r)
    if header is None:
        return None, r.diags
    rows, after = _parse_rows(r, header)
    _check_complete(r, header, rows)
    nic_names = _parse_legends(r, header, after)
    if r.diags:
        return None, r.diags

    g = header.gpu_count
    gpus = tuple(GpuInfo(i, rows.numa.get(i), rows.cpu.get(i)) for i in range(g))
    links = []
    for i in range(g):
        for j in range(i + 1, g):
            info = rows.cells[(i, j)][0]
            assert info is not None
            links.append((i, j, info))
    nics = tuple(nic_names.get(tok.text, tok.text) for tok in header.devices[g:])
    nic_links = []
    for k, nic in enumerate(nics):
        for i in range(g):
            info = rows.cells[(i, g + k)][0]
            assert info is not None
            nic_links.append((nic, i, info))
    return GpuMatrix(gpus, tuple(links), nics, tuple(nic_links)), []


# --------------------------------------------------------------------------
# Questions the planner and `topology inspect` ask of a matrix
# --------------------------------------------------------------------------

def link_key(info: LinkInfo) -> tuple[int, int]:
    """Sort key, best link first: NVLink with more lanes beats fewer, then PCIe by distance."""
    return (info.link.rank, -info.nvlinks)


def nearest_nics(m: GpuMatrix, gpu: int) -> tuple[tuple[str, ...], LinkInfo | None]:
    """The NICs with the best link to `gpu` (all of them on a tie, in column order)."""
    mine = [(nic, info) for nic, g, info in m.nic_links if g == gpu]
    if not mine:
        return (), None
    best = min((info for _, info in mine), key=link_key)
    return tuple(nic for nic, info in mine if link_key(info) == link_key(best)), best


def to_obj(m: GpuMatrix) -> dict[str, object]:
    """A JSON-ready view: GPUs with NUMA, CPU affinity and nearest NICs; every GPU pair."""
    gpus = []
    for g in m.gpus:
        nics, link = nearest_nics(m, g.index)
        gpus.append({"index": g.index, "numa_node": g.numa_node, "cpu_affinity": g.cpu_affinity,
                     "nearest_nics": list(nics), "nic_link": str(link) if link else None})
    return {
        "gpus": gpus,
        "pairs": [{"a": i, "b": j, "link": str(info)} for i, j, info in m.links],
        "nics": [{"name": nic, "links": [str(info) for n, _, info in m.nic_links if n == nic]}
                 for nic in m.nics],
    }


# --------------------------------------------------------------------------
# Node types without a matrix
# --------------------------------------------------------------------------

# Products whose GPUs sit on an NVSwitch baseboard (HGX / rack-scale NVL),
# with the NVLink count nvidia-smi reports between any two of them.
_NVSWITCH_PRODUCTS = (
    ("GB300", 18), ("GB200", 18), ("B300", 18), ("B200", 18), ("B100", 18),
    ("H200", 18), ("H100", 18), ("H800", 8), ("A100", 12), ("A800", 8),
)


def _nvlinks_for(product: str | None) -> int:
    p = (product or "").upper()
    if "PCIE" in p or re.search(r"\bNVL\b|-NVL(?:-|$)", p):
        # PCIe cards (H100 PCIe, H100 NVL pairs with a bridge) have no switch fabric.
        return 0
    for key, lanes in _NVSWITCH_PRODUCTS:
        if key in p:
            return lanes
    return 0


def default_matrix(gpu_count: int, product: str | None) -> GpuMatrix:
    """A plausible matrix for nodes that ship none.

    * SXM / HGX-class products (H100, H200, B200, GB200, ...: NV18; A100:
      NV12; H800/A800: NV8) — every GPU pair is connected through NVSwitch,
      which is how those baseboards are built;
    * anything else is treated as PCIe cards split over two NUMA nodes:
      PHB inside a half, SYS across — the pessimistic reading, so the
      planner never promises a bandwidth the node may not have.

    GPUs are split evenly over NUMA nodes 0 and 1 (first half on 0).  CPU
    affinity and NICs are unknown, so they are left empty rather than invented.
    """
    if gpu_count <= 0:
        return GpuMatrix((), ())
    half = (gpu_count + 1) // 2
    numa = [0 if i < half or gpu_count == 1 else 1 for i in range(gpu_count)]
    gpus = tuple(GpuInfo(i, numa[i], None) for i in range(gpu_count))
    lanes = _nvlinks_for(product)
    links = []
    for i in range(gpu_count):
        for j in range(i + 1, gpu_count):
            if lanes:
                info = LinkInfo(Link.NVLINK, lanes)
            else:
                info = LinkInfo(Link.PHB if numa[i] == numa[j] else Link.SYS)
            links.append((i, j, info))
    return GpuMatrix(gpus, tuple(links))
