"""Loading many files: discovery, decoding, parsing, merging.

Per-file parsing is pure, so results can be cached by content hash and
computed in parallel; this module owns both concerns so the surfaces stay
simple functions.
"""

from __future__ import annotations

from typing import Sequence

from intentc.diagnostics import Diagnostic, Span, error
from intentc.frontend import FileResult, Loaded, merge, parse_source
from intentc.ir import Program
from intentc.sources import SourceFile, discover, read_source


def _parse_guarded(source: SourceFile) -> FileResult:
    """A crash in a surface is a bug, but the user still gets a diagnostic, not a traceback."""
    try:
        return parse_source(source)
    except RecursionError:
        return FileResult(Program(), (error("E0203", "input nested too deeply to process",
                                            Span.point(source.path, 1, 1)),))


def load(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None) -> Loaded:
    files, diags = discover(paths)
    sources: list[SourceFile] = []
    for f in files:
        src, read_diags = read_source(f)
        diags.extend(read_diags)
        if src is not None:
            sources.append(src)
    results = [_parse_guarded(s) for s in sources]
    program, parse_diags = merge(results)
    all_diags: list[Diagnostic] = diags + parse_diags
    return Loaded(program, tuple(all_diags), {s.path: s.text for s in sources})
