"""What the differential tests of the compiled modules (`setup.py`) share: skip
where a module was not built, unless CI requires it built
(``INTENTC_REQUIRE_SPEEDUPS=1``), in which case its absence is a failure."""

from __future__ import annotations

import os

import pytest

REQUIRED = os.environ.get("INTENTC_REQUIRE_SPEEDUPS") == "1"


def needs(module: object, what: str) -> pytest.MarkDecorator:
    """Skip a test of `module` (None when not built or turned off) where it may be absent."""
    return pytest.mark.skipif(module is None and not REQUIRED, reason=f"{what} is turned off or was not built on this machine")


def assert_built_where_required(module: object, what: str) -> None:
    if REQUIRED:
        assert module is not None, f"INTENTC_REQUIRE_SPEEDUPS=1 but {what} is not in use"
