"""GPU product names: GPU feature discovery's long names and the short names intents use.

GPU feature discovery labels a node `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`
(NVML's device name, spaces as dashes), and `intentc topology import` copies
that value; intents, and topology files written by hand, say `H100-80GB`.
Compared as strings the two never meet, and every intent of an imported
topology was refused (E0601).  `short_name` maps either spelling to one short
name, so the planner (`product_key`), W0401 and the reports compare and show
products through this one place:

* `_SHORT` holds the names whose NVML spelling does not carry what intents
  spell out (`NVIDIA-H100-PCIe` is the 80 GB card, `NVIDIA-H200` the 141 GB
  one), keyed by the name with its vendor prefix taken off;
* every other name follows the rule: the vendor prefix (`NVIDIA-`, `Tesla-`)
  and the form factor and memory type (`-SXM4`, `-SXM5`, `-PCIe`, `-HBM3`,
  `-HBM3e`, `-NVL`, ...) are dropped, so `NVIDIA-A100-SXM4-80GB` and
  `NVIDIA-A100-80GB-PCIe` are both `A100-80GB` and `NVIDIA-GB200` is `GB200`.

Form factor and memory type are dropped because intents name the chip and
its memory size; a request that cares about the links asks for `within
nvlink`, and the planner reads those from the node's matrix, not its name.
Case is kept (`A100-40GB-MIG-1g.5gb` stays readable), comparison is by the
lower-cased short name.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from intentc import ir
from intentc.diagnostics.suggest import closest

_PREFIXES = ("NVIDIA-", "TESLA-")
# form factors and memory types, in NVML's device names
_DROPPED = frozenset({"SXM", "SXM2", "SXM3", "SXM4", "SXM5", "SXM6", "PCIE", "HBM2", "HBM2E", "HBM3", "HBM3E", "NVL"})
# upper-cased name without the vendor prefix -> the short name, where the rule would lose the memory size
_SHORT: dict[str, str] = {
    "H100-PCIE": "H100-80GB",
    "H100-NVL": "H100-94GB",
    "H200": "H200-141GB",
    "H200-NVL": "H200-141GB",
}


@lru_cache(maxsize=256)
def short_name(product: str) -> str:
    """The short name intents use for `product`, given in either spelling
    (`NVIDIA-H100-80GB-HBM3` and `H100-80GB` are both `H100-80GB`)."""
    name = "-".join(product.replace("_", " ").split()) if " " in product or "_" in product else product
    upper = name.upper()
    for prefix in _PREFIXES:
        if upper.startswith(prefix) and len(upper) > len(prefix):
            name, upper = name[len(prefix):], upper[len(prefix):]
            break
    known = _SHORT.get(upper)
    if known is not None:
        return known
    parts = name.split("-")
    kept = parts[:1] + [p for p in parts[1:] if p.upper() not in _DROPPED]
    return "-".join(kept)


def product_key(product: str) -> str:
    """What two product names are compared by: equal keys, the same GPUs."""
    return short_name(product).lower()


def same_product(a: str, b: str) -> bool:
    return product_key(a) == product_key(b)


def nearest(product: str, offered: Iterable[str]) -> str | None:
    """The short name of the offered product `product` most likely meant, for a did-you-mean:
    only among products of the same chip (`H100-80G` or `H100` → `H100-80GB`), never another
    chip however alike the spelling (`A100-80GB` is not a typo of `H100-80GB`: suggesting it
    would move a job to other hardware)."""
    want = short_name(product)
    chip = want.split("-", 1)[0].lower()
    same = sorted({s for s in map(short_name, offered) if s.split("-", 1)[0].lower() == chip})
    if len(same) == 1:
        return same[0]
    return closest(want, same)


def describe(product: str) -> str:
    """`product` as a report shows it: a name that is not the intents' spelling says which
    one it matches (`NVIDIA-H100-80GB-HBM3 (matches intents' H100-80GB)`)."""
    short = short_name(product)
    return product if short == product else f"{product} (matches intents' {short})"


def tally(nodes: Iterable[ir.TopologyNode]) -> dict[str, tuple[int, int]]:
    """GPU product -> (nodes, GPUs) over the nodes with GPUs ("" for those naming no product)."""
    count: dict[str, tuple[int, int]] = {}
    for n in nodes:
        if n.gpu_count > 0:
            k, g = count.get(n.gpu_product or "", (0, 0))
            count[n.gpu_product or ""] = (k + 1, g + n.gpu_count)
    return count


def offered(nodes: Iterable[ir.TopologyNode]) -> list[str]:
    """What a topology's GPU nodes are, one line per product in name order, for `intentc
    topology import` and `inspect`: `NVIDIA-H100-80GB-HBM3 (matches intents' H100-80GB): 2 nodes,
    16 GPUs` (nodes that name no product last)."""
    return [f"{describe(p) if p else '(no product named)'}: {k} node{'s' * (k != 1)}, {g} GPU{'s' * (g != 1)}"
            for p, (k, g) in sorted(tally(nodes).items(), key=lambda item: (not item[0], item[0]))]
