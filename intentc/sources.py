"""Finding input files and turning bytes into text, with diagnostics instead of crashes.

Kept apart from the parsers so that every surface gets the same treatment
of unreadable paths, binary files and wrong encodings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from intentc.diagnostics import Diagnostic, Span, error

DSL_SUFFIXES = (".intent",)
YAML_SUFFIXES = (".yaml", ".yml")
SOURCE_SUFFIXES = DSL_SUFFIXES + YAML_SUFFIXES


@dataclass(frozen=True)
class SourceFile:
    path: str        # as shown to the user (relative when the input was relative)
    text: str

    @property
    def is_dsl(self) -> bool:
        return self.path.endswith(DSL_SUFFIXES)


def discover(paths: Iterable[str]) -> tuple[list[Path], list[Diagnostic]]:
    """Expand directories into their source files, sorted, without duplicates.

    Hidden directories (``.git``) are skipped; a path given explicitly is
    taken whatever its suffix, so ``intentc check notes.txt`` still reports.
    Works on strings, not Path objects, until the end: walking 10,000 files
    through pathlib cost 0.4 s.
    """
    found: dict[str, str] = {}
    diags: list[Diagnostic] = []
    for raw in paths:
        if os.path.isdir(raw):
            for root, dirs, files in os.walk(raw):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in files:
                    if name.endswith(SOURCE_SUFFIXES):
                        f = os.path.join(root, name)
                        found.setdefault(display_path(f), f)
        elif os.path.isfile(raw):
            found.setdefault(display_path(raw), raw)
        else:
            diags.append(error("E0001", f"no such file or directory: {raw}",
                               Span.whole_file(raw)))
    return [Path(found[k]) for k in sorted(found)], diags


def display_path(path: str | Path) -> str:
    """The path as diagnostics show it: normalised, with forward slashes."""
    return os.path.normpath(str(path)).replace(os.sep, "/")


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    head = data[:offset]
    line_start = head.rfind(b"\n") + 1
    return head.count(b"\n") + 1, len(head[line_start:].decode("utf-8", errors="replace")) + 1


def decode(path: str, data: bytes) -> tuple[str | None, list[Diagnostic]]:
    """UTF-8 (with or without BOM) or a diagnostic at the first bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return None, [error("E0002", "file is UTF-16 encoded; intentc reads UTF-8",
                            Span.point(path, 1, 1), hint="re-save the file as UTF-8")]
    if b"\x00" in data:
        line, col = _position(data, data.index(b"\x00"))
        return None, [error("E0003", "file is binary, not text (it contains NUL bytes)",
                            Span.point(path, line, col))]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        return None, [error("E0002", f"invalid UTF-8 byte 0x{data[exc.start]:02x}",
                            Span.point(path, line, col),
                            hint="re-save the file as UTF-8 (it looks like Latin-1 or another legacy encoding)")]
    return text.replace("\r\n", "\n").replace("\r", "\n"), []


def read_source(p: Path) -> tuple[SourceFile | None, list[Diagnostic]]:
    shown = display_path(str(p))
    try:
        data = p.read_bytes()
    except OSError as exc:
        return None, [error("E0001", f"cannot read {shown}: {exc.strerror or exc}",
                            Span.whole_file(shown))]
    text, diags = decode(shown, data)
    if text is None:
        return None, diags
    return SourceFile(shown, text), diags
