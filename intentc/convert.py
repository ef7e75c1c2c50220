"""Converting a file between the two surfaces (DSL ↔ YAML).

Both surfaces lower to the same IR, so conversion is parse → print with
the other surface's printer; the converted file compiles to an IR equal to
the original (spans aside), which the tests check for every example file.
A file with errors is not converted: a half-understood file would silently
lose what the parser could not read.
"""

from __future__ import annotations

import enum

from intentc.diagnostics import Diagnostic
from intentc.frontend import parse_source
from intentc.sources import SourceFile


class Surface(str, enum.Enum):
    YAML = "yaml"
    DSL = "dsl"


def convert(source: SourceFile, to: Surface) -> tuple[str | None, list[Diagnostic]]:
    result = parse_source(source)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        return None, list(result.diagnostics)
    if to is Surface.YAML:
        from intentc.frontend.yaml_emit import dump_program
        return dump_program(result.program), list(result.diagnostics)
    from intentc.frontend.dsl_print import format_program
    return format_program(result.program), list(result.diagnostics)
