"""The `intentc` command line.

One module per command group; each turns arguments into one library call
and prints the result.  No logic lives here: anything worth testing is in
the library.  Importing a module registers its commands on `app`.
Command modules import their heavy dependencies inside the command, so
`intentc check` does not pay for the daemon's (or `intentc --help` for anything).
"""

from __future__ import annotations

from intentc.cli.app import app, main

# Each import registers commands on `app`, in the order `intentc --help` lists them
# (the pipeline's order): keep it, do not sort.
# ruff: noqa: I001
from intentc.cli import check as _check  # noqa: F401,E402
from intentc.cli import convert as _convert  # noqa: F401,E402
from intentc.cli import graph as _graph  # noqa: F401,E402
from intentc.cli import topology as _topology  # noqa: F401,E402
from intentc.cli import plan as _plan  # noqa: F401,E402
from intentc.cli import diff as _diff  # noqa: F401,E402
from intentc.cli import compile as _compile  # noqa: F401,E402
from intentc.cli import apply as _apply  # noqa: F401,E402
from intentc.cli import fmt as _fmt  # noqa: F401,E402
from intentc.cli import drift as _drift  # noqa: F401,E402
from intentc.cli import daemon as _daemon  # noqa: F401,E402

__all__ = ["app", "main"]
