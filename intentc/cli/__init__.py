"""The `intentc` command line.

One module per command group; each turns arguments into one library call
and prints the result.  No logic lives here: anything worth testing is in
the library.  Importing a module registers its commands on `app`; the app
imports a command's module only when that command is run or its help shown
(`cli/lazy.py`, whose `LISTED` names every command), so `intentc check`
pays neither for the other commands' modules nor for building their
parameters.  Command modules import their heavy dependencies inside the
command, so `intentc --help` pays for none of them.
"""

from __future__ import annotations

from intentc.cli.app import app, console, main

__all__ = ["app", "console", "main"]
