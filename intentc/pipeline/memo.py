"""The check stage's memo mode: what `intentc check` reports, remembered from one run to the next.

All that `intentc check` prints (without --topology) is the findings after
the global passes and four counts.  With a warm parse cache, a run over
unchanged files still unpickled every file's IR, ran the global passes and
built the dependency graph — all growing with the repository — to print the
same thing again.  So the report is kept in the cache's memo, named by the
digest of everything that went into it (`batch.Inputs.digest`: which files
were found, their contents, what discovery and reading reported; the
compiler, its libraries and the roots name the cache itself).  Options
that only change the exit status (--strict) or what is done with the
report (--format) are applied to it afterwards; --topology needs the program
itself, so `intentc check --topology` runs the stages (`Driver.run`).

A run whose digest differs is patched from the last full check when only a
few files were edited in ways the global passes cannot see (`pipeline.basis`);
otherwise (a file added, removed or renamed, an exclusion changed, an edit
the global passes see) it loads and checks as before; either way it
remembers its report.
The texts for carets are read back from the files, unchanged since
(that is what the digest says), as the check stage does for a cached file.

This module imports neither the passes nor networkx: a remembered report is
printed without paying for their imports.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from intentc import collector
from intentc.diagnostics import Diagnostic
from intentc.frontend.sources import texts_for_carets
from intentc.pipeline import basis
from intentc.pipeline.findings import Counts, report
from intentc.pipeline.loading import PARSING, Inputs, scan
from intentc.progress import Progress, silent

if TYPE_CHECKING:
    from intentc.pipeline.checked import Checked

_FORMAT = 1


@dataclass(frozen=True)
class Summary:
    """`Checked` without the program and the graph."""

    diagnostics: tuple[Diagnostic, ...]
    sources: dict[str, str]         # the texts the diagnostics point into
    files: tuple[str, ...]          # every file checked
    counts: Counts

    @classmethod
    def of(cls, checked: Checked) -> Summary:
        return cls(checked.diagnostics, checked.sources, checked.files, Counts.of(checked.program))


def summarize(paths: Sequence[str], jobs: int | None = None, cache_dir: str | None = None,
              use_cache: bool = True, progress: Progress = silent, exclude: Sequence[str] = ()) -> Summary:
    """The check stage's findings and counts, from the memo when the inputs are
    the ones it was made from (see the module docstring)."""
    with scan(paths, jobs, cache_dir, use_cache, progress, exclude) as inputs:
        remembered = _recall(inputs)
        if remembered is not None:
            diags, counts = remembered
            return _told(inputs, progress, tuple(diags), counts)
        known = basis.recall(inputs)
        patched = basis.patch(inputs, known) if known is not None else None
        if patched is not None and known is not None:
            patched_diags, after = patched
            summary = _told(inputs, progress, tuple(patched_diags), known.counts)
            inputs.remember(_report(summary))
            inputs.remember(after.to_bytes(), basis=True)
            return summary
        files, keys = inputs.files, inputs.keys
        loaded = inputs.load(behind=True)     # the cache finished beside the passes below
        if not keys:        # an empty cache, filled by this load: the files it read, their keys
            files, keys = inputs.files, inputs.keys
    # the cache closed and the file list gone before the passes
    from intentc.pipeline.checked import global_findings

    program, found = global_findings(loaded.program)
    own = loaded.diagnostics
    reported = report(own, found)
    summary = Summary(tuple(reported), texts_for_carets(reported, loaded.sources), loaded.files, Counts.of(program))
    collector.hold(loaded, program)     # not freed before the report is printed (`intentc check` ends here)
    del loaded, program
    inputs.remember(_report(summary))
    if keys and summary.files == files:
        left = basis.of_full_check(files, keys, own, found, summary.counts)
        if left is not None:
            inputs.remember(left.to_bytes(), basis=True)
    return summary


def _told(inputs: Inputs, progress: Progress, diags: tuple[Diagnostic, ...], counts: Counts) -> Summary:
    """A report given without loading: the texts for carets read back from the files."""
    count = len(inputs.files)
    progress(PARSING, count, count)
    return Summary(diags, texts_for_carets(diags, {}), inputs.files, counts)


def _report(summary: Summary) -> bytes:
    return pickle.dumps((_FORMAT, summary.diagnostics, summary.counts), pickle.HIGHEST_PROTOCOL)


def _recall(inputs: Inputs) -> tuple[tuple[Diagnostic, ...], Counts] | None:
    """The remembered findings and counts, or None (nothing remembered for these
    inputs, or what is there is not a report: a damaged memo is a miss)."""
    blob = inputs.recall()
    if blob is None:
        return None
    try:
        fmt, diags, counts = pickle.loads(blob)
    except Exception:       # anything a damaged pickle raises; the cache only ever costs time
        return None
    if fmt != _FORMAT or not isinstance(counts, Counts) or not isinstance(diags, tuple) \
            or not all(isinstance(d, Diagnostic) for d in diags):
        return None
    return diags, counts
