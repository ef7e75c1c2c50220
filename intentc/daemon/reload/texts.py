"""The source texts a reload's diagnostics point into, read only when shown.

Keeping every file's text would cost as much memory as the repository
(100,000 files); `compile` keeps only the texts of files that reported
something and reads the others a cross-file finding points into
(`pipeline.texts_for_carets`).  A reload does the same but reads lazily:
a kept warning that points into an unchanged file costs nothing until
someone prints it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Mapping

from intentc.diagnostics import Diagnostic
from intentc.sources import read_source


def files_of(diagnostics: Iterable[Diagnostic]) -> frozenset[str]:
    """Every file the diagnostics point into, their related locations included."""
    return frozenset(s.file for d in diagnostics for s in (d.span, *(r.span for r in d.related)))


class CaretTexts(Mapping[str, str]):
    """`known` texts plus, read on first access, the files `diagnostics` name
    (an unreadable file reads as empty, as `intentc check` shows it)."""

    def __init__(self, known: Mapping[str, str], diagnostics: Iterable[Diagnostic]) -> None:
        self._texts = dict(known)
        named = files_of(diagnostics)
        self._keys = sorted(named | self._texts.keys())
        self._named = frozenset(self._keys)

    def __getitem__(self, name: str) -> str:
        text = self._texts.get(name)
        if text is not None:
            return text
        if name not in self._named:
            raise KeyError(name)
        path = Path(name)
        src = read_source(path)[0] if path.is_file() else None
        text = self._texts[name] = src.text if src is not None else ""
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)
