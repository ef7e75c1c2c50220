"""The per-file table of a reload, and the whole program it makes, kept incrementally.

A repository of 100,000 one-intent files must not cost 100,000 steps per
edit.  The table keeps the file names sorted (an insertion is one `bisect`),
the whole `Program` as one tuple per kind in file-name order (which is
exactly `Program.canonical()` order, see `_concatenate`), and where each
file's declarations start in those tuples.  An edit that keeps a file's
number of declarations of each kind is patched into the tuples in place (a
C-level copy of the pointers); a file added or removed, or a count changed,
splices its declarations in or out and shifts the starts of the files after
it (one pass over an array of ints per kind whose count changed; a rebuild
walked every file, 0.2 s at 100,000).  Diagnostics are kept for the few files that
have some, and so are their texts (for carets), nothing else.

It also remembers, for every file changed since the snapshot in force, the
state it had in that snapshot (`changes`), which is what a reload compares.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, insort
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
        self._starts: tuple[array[int], ...] | None = None    # per kind, per file (name order): first index
        self._laid: list[str] = []                            # the files `_starts` describes (sorted)
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
        if self._starts is None:
            self._rebuild()
        elif self._pending:
            self._patch()
        self._pending.clear()
        return self._program

    def _patch(self) -> None:
        """Patch the pending edits in: files last to first, so that each splice leaves the
        positions of the files before it as they are."""
        starts = self._starts
        assert starts is not None
        laid = self._laid
        totals = [len(getattr(self._program, kind)) for kind in KINDS]
        whole: list[list[Any] | None] = [None] * len(KINDS)
        for name in sorted(self._pending, reverse=True):
            state = self._pending[name]
            i = bisect_left(laid, name)
            if i == len(laid) or laid[i] != name:
                if state is None:
                    continue                            # added and removed again since
                laid.insert(i, name)                    # a new file: no declarations yet
                for k in range(len(KINDS)):
                    starts[k].insert(i, starts[k][i] if i + 1 < len(laid) else totals[k])
            program = state.result.program if state is not None else Program()
            for k, kind in enumerate(KINDS):
                begin = starts[k][i]
                end = starts[k][i + 1] if i + 1 < len(laid) else totals[k]
                new = getattr(program, kind)
                if not new and end == begin:
                    continue
                part = whole[k]
                if part is None:
                    part = whole[k] = list(getattr(self._program, kind))
                part[begin:end] = new
                delta = len(new) - (end - begin)
                if delta:
                    tail = starts[k]
                    tail[i + 1:] = array("q", [x + delta for x in tail[i + 1:]])
                    totals[k] += delta
            if state is None:
                del laid[i]
                for k in range(len(KINDS)):
                    del starts[k][i]
        self._program = Program(*(tuple(w) if w is not None else getattr(self._program, kind)
                                  for w, kind in zip(whole, KINDS)))

    def _rebuild(self) -> None:
        programs = [self._states[n].result.program for n in self._names]
        starts = tuple(array("q") for _ in KINDS)
        counts = [0] * len(KINDS)
        for p in programs:
            for k, kind in enumerate(KINDS):
                starts[k].append(counts[k])
                counts[k] += len(getattr(p, kind))
        self._starts = starts
        self._laid = list(self._names)
        self._program = _concatenate(programs)


def _concatenate(programs: Iterable[Program]) -> Program:
    """Per-file programs (each in position order), in file-name order: that is
    exactly `Program.canonical()` order, without sorting every declaration."""
    parts = list(programs)
    return Program(tuple(chain.from_iterable(p.tenants for p in parts)),
                   tuple(chain.from_iterable(p.datasets for p in parts)),
                   tuple(chain.from_iterable(p.intents for p in parts)),
                   tuple(chain.from_iterable(p.topologies for p in parts)))
