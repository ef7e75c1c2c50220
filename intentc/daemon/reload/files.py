"""The per-file table of a reload, and the whole program it makes, kept incrementally.

A repository of 100,000 one-intent files must not cost 100,000 steps per
edit.  The table keeps the file names sorted (an insertion is one `bisect`)
and the whole `Program` as one tuple per kind in file-name order (which is
exactly `Program.canonical()` order, see `_concatenate`).  Every declaration
carries its file's name (`span.file`), so a file's declarations are one run of
each tuple, found by binary search on that name: an edit, a file added or a
file removed is spliced in with one C-level copy of each tuple it changes.
(Before, the table kept per file where its declarations start, and a file
added or removed shifted the starts of every file after it: a Python loop
over every file in each reload.)  A file whose declarations name
another file (a path spelled two ways) cannot be found so: while the table
holds one, the program is concatenated anew instead.  Diagnostics are kept
for the few files that have some, and so are their texts (for carets),
nothing else.

It also remembers, for every file changed since the snapshot in force, the
state it had in that snapshot (`changes`), which is what a reload compares.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from itertools import chain
from typing import Any, Iterable

from intentc.daemon.reload.state import FileState
from intentc.diagnostics import Diagnostic
from intentc.ir import Program

KINDS = ("tenants", "datasets", "intents", "topologies")


class FileTable:
    def __init__(self) -> None:
        self._states: dict[str, FileState] = {}
        self._names: list[str] = []                           # sorted
        self._program = Program()
        self._laid = False                                    # `_program` made once
        self._foreign: set[str] = set()                      # files with declarations naming another file
        self._pending: dict[str, FileState | None] = {}      # edits not yet patched in (None: gone)
        self._noted: dict[str, tuple[Diagnostic, ...]] = {}  # files reporting something on their own
        self._texts: dict[str, str] = {}                     # ... and their texts, for carets
        self._before: dict[str, FileState | None] = {}       # states in the snapshot in force

    def __contains__(self, name: str) -> bool:
        return name in self._states

    def __len__(self) -> int:
        return len(self._states)

    def get(self, name: str) -> FileState | None:
        return self._states.get(name)

    def set(self, name: str, state: FileState | None, text: str | None = None) -> None:
        """Record the new state of `name` (None: the file is gone)."""
        old = self._states.get(name)
        self._before.setdefault(name, old)
        if state is None:
            if old is not None:
                del self._states[name]
                del self._names[bisect_left(self._names, name)]
                self._pending[name] = None
        else:
            if old is None:
                insort(self._names, name)
            self._states[name] = state
            self._pending[name] = state
        program = state.program if state is not None else Program()
        foreign = any(d.span.file != name for kind in KINDS for d in getattr(program, kind))
        if foreign or name in self._foreign:
            self._laid = False            # its run is not where its name says: concatenate anew
        if foreign:
            self._foreign.add(name)
        else:
            self._foreign.discard(name)
        noted = state.diagnostics if state is not None else ()
        if noted:
            self._noted[name] = noted
            if text is not None:
                self._texts[name] = text
            else:
                self._texts.pop(name, None)
        else:
            self._noted.pop(name, None)
            self._texts.pop(name, None)

    # -- what changed since the snapshot in force ---------------------------------
    def changes(self) -> list[tuple[str, FileState | None, FileState | None]]:
        """(name, state in the snapshot in force, state now) of every file changed since."""
        return [(n, b, self._states.get(n)) for n, b in sorted(self._before.items())]

    def settle(self) -> None:
        """The current states are now the snapshot's."""
        self._before.clear()

    # -- the whole -----------------------------------------------------------------------
    def diagnostics(self) -> list[Diagnostic]:
        """The files' own diagnostics, file by file in name order."""
        return list(chain.from_iterable(self._noted[n] for n in sorted(self._noted)))

    def texts(self) -> dict[str, str]:
        """Texts of the files that report something on their own."""
        return dict(self._texts)

    def program(self) -> Program:
        """All files' declarations, in `Program.canonical()` order."""
        if not self._laid or self._pending and self._foreign:
            self._rebuild()
        elif self._pending:
            self._patch()
        self._pending.clear()
        return self._program

    def _patch(self) -> None:
        """Splice the pending edits in: files last to first, so that each splice leaves the
        positions of the files before it as they are; each file's run found by its name."""
        whole: list[list[Any] | None] = [None] * len(KINDS)
        for name in sorted(self._pending, reverse=True):
            state = self._pending[name]
            program = state.program if state is not None else Program()
            for k, kind in enumerate(KINDS):
                items = getattr(self._program, kind)
                begin = bisect_left(items, name, key=_file_of)
                end = bisect_right(items, name, lo=begin, key=_file_of)
                new = getattr(program, kind)
                if not new and end == begin:
                    continue
                part = whole[k]
                if part is None:
                    part = whole[k] = list(items)
                part[begin:end] = new
        self._program = Program(*(tuple(w) if w is not None else getattr(self._program, kind)
                                  for w, kind in zip(whole, KINDS)))

    def _rebuild(self) -> None:
        self._program = _concatenate(self._states[n].program for n in self._names)
        self._laid = True


def _file_of(declaration: Any) -> str:
    return declaration.span.file  # type: ignore[no-any-return]


def _concatenate(programs: Iterable[Program]) -> Program:
    """Per-file programs (each in position order), in file-name order: that is
    exactly `Program.canonical()` order, without sorting every declaration."""
    parts = list(programs)
    return Program(tuple(chain.from_iterable(p.tenants for p in parts)),
                   tuple(chain.from_iterable(p.datasets for p in parts)),
                   tuple(chain.from_iterable(p.intents for p in parts)),
                   tuple(chain.from_iterable(p.topologies for p in parts)))
