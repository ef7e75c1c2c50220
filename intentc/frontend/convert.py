"""Converting a file between the two surfaces (DSL ↔ YAML).

Both surfaces lower to the same IR, so conversion is parse → print with
the other surface's printer; the converted file compiles to an IR equal to
the original (spans aside), which the tests check for every example file.
A file with errors is not converted: a half-understood file would silently
lose what the parser could not read.  Comments are not in the IR; they are
carried across by position (`frontend.comments`), so a header comment and
the comments on clauses survive DSL → YAML → DSL.
"""

from __future__ import annotations

import enum

from intentc.diagnostics import Diagnostic
from intentc.frontend import parse_source
from intentc.frontend.dsl import Comment, parse_full
from intentc.frontend.sources import DSL_SUFFIXES, SourceFile


class Surface(str, enum.Enum):
    YAML = "yaml"
    DSL = "dsl"


def _comments(source: SourceFile) -> tuple[Comment, ...]:
    if source.path.endswith(DSL_SUFFIXES):
        return parse_full(source).comments
    from intentc.frontend.comments import yaml_comments
    return yaml_comments(source.text)


def convert(source: SourceFile, to: Surface) -> tuple[str | None, list[Diagnostic]]:
    result = parse_source(source)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        return None, list(result.diagnostics)
    comments = _comments(source)
    if to is Surface.YAML:
        from intentc.frontend.comments import attach_to_documents
        from intentc.frontend.yaml_emit import documents, dump_documents
        docs = documents(result.program)
        header, footer = attach_to_documents(result.program, comments, docs)
        return dump_documents(docs, header=header, footer=footer), list(result.diagnostics)
    from intentc.frontend.dsl_print import format_program
    return format_program(result.program, comments), list(result.diagnostics)
