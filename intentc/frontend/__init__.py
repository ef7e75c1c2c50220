"""Text → IR.  Each surface is a pure function `SourceFile -> (Program, diagnostics)`.

`load` is the one entry point later stages use: it discovers files, decodes
them, dispatches on the suffix and merges the per-file programs in a
canonical order.  Per-file results are independent, which is what makes the
content-hash cache and the process pool in `intentc.pipeline.loading` possible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from intentc.diagnostics import Diagnostic
from intentc.frontend.sources import SourceFile
from intentc.ir import Dataset, Intent, Program, Tenant, Topology


@dataclass(frozen=True)
class FileResult:
    program: Program
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True)
class Loaded:
    program: Program
    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    files: tuple[str, ...] = ()      # every file read, in discovery order (texts are kept only where needed)


def parse_source(source: SourceFile) -> FileResult:
    """Parse one decoded file with the surface its suffix names."""
    if source.is_dsl:
        from intentc.frontend.dsl import parse as parse_dsl
        program, diags = parse_dsl(source)
    else:
        from intentc.frontend.yaml import parse as parse_yaml
        program, diags = parse_yaml(source)
    return FileResult(program, tuple(diags))


def merge(results: Iterable[FileResult]) -> tuple[Program, list[Diagnostic]]:
    tenants: list[Tenant] = []
    datasets: list[Dataset] = []
    intents: list[Intent] = []
    topologies: list[Topology] = []
    diags: list[Diagnostic] = []
    for r in results:
        tenants.extend(r.program.tenants)
        datasets.extend(r.program.datasets)
        intents.extend(r.program.intents)
        topologies.extend(r.program.topologies)
        diags.extend(r.diagnostics)
    program = Program(tuple(tenants), tuple(datasets), tuple(intents), tuple(topologies))
    return program.canonical(), diags
