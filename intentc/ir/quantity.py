"""Kubernetes resource quantities (`500m`, `16`, `64Gi`, `1.5e3`) as exact decimals.

The IR keeps quantities as the text the user wrote; this module is where
that text gets a value, so the domain pass (is it valid?), the planner
(does 80Gi of GPU memory satisfy 81559Mi?) and the renderer agree.
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}

# The grammar of k8s.io/apimachinery resource.Quantity (without the sign).
_QUANTITY = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                       r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

SUFFIXES = tuple(_BINARY) + tuple(s for s in _DECIMAL if s)


@functools.lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Decimal | None:
    """The value of a quantity, or None when the text is not one.

    Cached: the same few texts ("16", "64Gi") recur on every intent, and the
    local passes read each one twice (domain, kube_limits).  A `Decimal`
    is immutable, and nothing in intentc changes the decimal context."""
    m = _QUANTITY.match(text.strip())
    if not m:
        return None
    try:
        num = Decimal(m["num"])
    except InvalidOperation:
        return None
    suffix = m["suffix"] or ""
    if suffix in _BINARY:
        return num * _BINARY[suffix]
    if suffix in _DECIMAL:
        return num * _DECIMAL[suffix]
    if len(suffix) > 8:          # an exponent past 10^9999999 is no quantity (and int() of 5,000 digits raises)
        return None
    try:
        return num * (Decimal(10) ** int(suffix[1:]))
    except ArithmeticError:      # decimal.Overflow: beyond what Decimal holds
        return None


def is_quantity(text: str) -> bool:
    return parse_quantity(text) is not None


_PARAMETERS = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<suffix>[KMBT]?)$")
_PARAMETER_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def parse_parameters(text: str) -> int | None:
    """A model's parameter count as written on an intent (`8B`, `350M`, `1.5B`), or None.

    B is a billion (the convention of model names such as llama3-8b), not a byte.
    """
    m = _PARAMETERS.match(text.strip())
    if not m:
        return None
    return int(Decimal(m["num"]) * _PARAMETER_SCALE[m["suffix"]])
