"""The `intentc` command line.

One module per command group; each turns arguments into one library call
and prints the result.  No logic lives here: anything worth testing is in
the library.  Importing a module registers its commands on `app`.
"""

from __future__ import annotations

from intentc.cli.app import app, main

# Each import registers commands on `app`.
from intentc.cli import check as _check  # noqa: F401,E402

__all__ = ["app", "main"]
