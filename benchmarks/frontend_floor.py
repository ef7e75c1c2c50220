"""The floor issue 17 sets for a cold `check`: libyaml composing the YAML half and
one pass of lark-cython over the DSL half, on every core, and nothing else.

    python benchmarks/frontend_floor.py DIR [--jobs N]

Every file under DIR is read; a `.yaml` file is composed into a node tree by
PyYAML's libyaml parser (`yaml.compose_all(..., CSafeLoader)`: the nodes carry
their positions, as a checker needs), an `.intent` file is parsed to a lark
tree by lark-cython with lark's own contextual lexer and intentc's grammar.
Nothing is lowered, checked, kept or printed, and no result crosses a
process: the files are split between N forked processes (one per core by
default) that each drop what they made.  It is a lower bound for a checker
built on the same two parsers, not a checker: `bench_frontend.py` runs it as a
fresh process beside `intentc check` on the same files and reports the ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import lark_cython
import yaml
from lark import Lark

GRAMMAR = Path(__file__).resolve().parents[1] / "grammar" / "intent.lark"


def parse_share(files: list[str], parser: Lark) -> int:
    """Parse each file; the number of top-level items made (so nothing is optimised away)."""
    made = 0
    for name in files:
        with open(name, encoding="utf-8") as f:
            text = f.read()
        if name.endswith((".yaml", ".yml")):
            made += sum(1 for _ in yaml.compose_all(text, Loader=yaml.CSafeLoader))
        elif name.endswith(".intent"):
            made += len(parser.parse(text).children)
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    # the parse table built once, before the fork, as a checker's cached table would be
    parser = Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                  _plugins=lark_cython.plugins, cache=True)
    files = sorted(str(p) for p in args.root.rglob("*") if p.is_file())
    children = []
    for k in range(1, args.jobs):
        pid = os.fork()
        if pid == 0:
            parse_share(files[k::args.jobs], parser)
            os._exit(0)
        children.append(pid)
    made = parse_share(files[0::args.jobs], parser)
    failed = [pid for pid in children if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
    if failed or made == 0:
        sys.exit(f"frontend_floor: {len(failed)} worker(s) failed, {made} items parsed here")


if __name__ == "__main__":
    main()
