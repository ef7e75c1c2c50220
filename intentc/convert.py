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
from intentc.frontend.dsl_print import format_program
from intentc.frontend.yaml_emit import dump_program
from intentc.sources import SourceFile


class Surface(str, enum.Enum):
    YAML = "yaml"
    DSL = "dsl"


def convert(source: SourceFile, to: Surface) -> tuple[str | None, list[Diagnostic]]:
    result = parse_source(source)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        return None, list(result.diagnostics)
    text = dump_program(result.program) if to is Surface.YAML else format_program(result.program)
    return text, list(result.diagnostics)
