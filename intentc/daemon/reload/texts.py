"""The source texts a reload's diagnostics point into, read only when shown.

Keeping every file's text would cost as much memory as the repository
(100,000 files); `compile` keeps only the texts of files that reported
something and reads the others a cross-file finding points into
(`pipeline.texts_for_carets`).  A reload does the same but reads lazily:
a kept warning that points into an unchanged file costs nothing until
someone prints it.
"""

from __future__ import annotations

from bisect import bisect_left
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from intentc.diagnostics import Diagnostic
from intentc.frontend.sources import read_source


def files_of(diagnostics: Iterable[Diagnostic]) -> frozenset[str]:
    """Every file the diagnostics point into, their related locations included."""
    return frozenset(s.file for d in diagnostics for s in (d.span, *(r.span for r in d.related)))


class CaretTexts(Mapping[str, str]):
    """`known` texts plus, read on first access, the files `diagnostics` name
    (an unreadable file reads as empty, as `intentc check` shows it)."""

    def __init__(self, known: Mapping[str, str], diagnostics: Sequence[Diagnostic],
                 read: dict[str, str] | None = None) -> None:
        self._texts = dict(known)
        self._diagnostics = diagnostics
        # texts read so far, shared by one Reloader's reports (it forgets a file
        # when the file changes): `watch` prints every report, warnings included
        self._read = read if read is not None else {}
        self._keys: list[str] | None = None      # worked out when first needed: a big repository keeps many warnings

    def _named(self) -> list[str]:
        if self._keys is None:
            self._keys = sorted(files_of(self._diagnostics) | self._texts.keys())
        return self._keys

    def __getitem__(self, name: str) -> str:
        text = self._texts.get(name)
        if text is None:
            text = self._read.get(name)
        if text is not None:
            return text
        keys = self._named()
        i = bisect_left(keys, name)
        if i == len(keys) or keys[i] != name:
            raise KeyError(name)
        path = Path(name)
        src = read_source(path)[0] if path.is_file() else None
        text = self._read[name] = src.text if src is not None else ""
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._named())

    def __len__(self) -> int:
        return len(self._named())
