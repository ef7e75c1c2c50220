"""The check stage's patch mode: `intentc check` after a few files were edited, without loading the rest.

The memo (`pipeline.memo`) answers a run whose inputs are exactly the last
run's.  A pull request's run is not that: its cache comes from the default
branch and a few files differ.  Such a run unpickled every file's result and
ran the global passes again — work that grows with the repository — for an
edit of one image tag.

So the last full check also leaves a *basis*, under the digest of its file
list: each file's content key, each file's own findings (reading, parsing,
the local passes), the global findings, the counts.  A run over the same
file list in which at most `MAX_EDITED` files changed parses just those and
compares, file by file, the digest of what the global passes read
(`passes.reads.global_reads`) before and after.  When all are equal, the
global findings stand; the report is the edited files' new findings in
place of their old ones, plus the global findings, put together as a full
check does (`findings.report`).  Anything else — a file added, removed or
renamed, a finding of discovery or reading, an edit the global passes can
see, a result not at hand — is a full check, which leaves a new basis.

The digest before an edit comes from the basis (files edited since the
last full check) or from the cache's result for the file's old content.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from intentc.diagnostics import Diagnostic
from intentc.pipeline.findings import Counts, report

if TYPE_CHECKING:
    from intentc.pipeline.loading import Inputs

_FORMAT = 1
MAX_EDITED = 256        # more edited files than this: a full check is as quick


@dataclass(frozen=True)
class Basis:
    keys: bytes                                     # every file's content key, in file order
    own: dict[str, tuple[Diagnostic, ...]]          # each file's own findings (files with some)
    found: tuple[Diagnostic, ...]                   # the global passes' and the dependency findings
    counts: Counts
    reads: dict[str, bytes]                         # `global_reads` of files edited since the full check

    def to_bytes(self) -> bytes:
        return pickle.dumps((_FORMAT, self), pickle.HIGHEST_PROTOCOL)


def of_full_check(files: tuple[str, ...], keys: tuple[bytes, ...], own_findings: tuple[Diagnostic, ...],
                  found: list[Diagnostic], counts: Counts) -> Basis | None:
    """The basis a full check leaves, or None when its own findings cannot be told
    apart file by file in order (then no run is patched from it)."""
    own: dict[str, list[Diagnostic]] = {}
    for d in own_findings:
        own.setdefault(d.span.file, []).append(d)
    if [d for f in files for d in own.get(f, ())] != list(own_findings):
        return None             # a finding of another file, or out of file order
    return Basis(b"".join(keys), {f: tuple(ds) for f, ds in own.items()}, tuple(found), counts, {})


def recall(inputs: Inputs) -> Basis | None:
    blob = inputs.recall(basis=True)
    if blob is None:
        return None
    try:
        fmt, basis = pickle.loads(blob)
    except Exception:       # anything a damaged pickle raises; the cache only ever costs time
        return None
    return basis if fmt == _FORMAT and isinstance(basis, Basis) else None


def patch(inputs: Inputs, basis: Basis) -> tuple[list[Diagnostic], Basis] | None:
    """The report of `inputs` from `basis` (see the module docstring), and the basis
    for the next run; None when a full check is needed."""
    from intentc.passes.reads import global_reads

    files, keys = inputs.files, inputs.keys
    if inputs.diagnostics or not keys:
        return None
    width = len(keys[0])
    old_keys = [basis.keys[k:k + width] for k in range(0, len(basis.keys), width)]
    if len(old_keys) != len(keys):
        return None
    edited = [i for i, (old, new) in enumerate(zip(old_keys, keys)) if old != new]
    if not edited or len(edited) > MAX_EDITED:
        return None
    results = inputs.results_of(edited)
    if results is None:
        return None
    own = dict(basis.own)
    reads = dict(basis.reads)
    for i, result in zip(edited, results):
        name = files[i]
        before = reads.get(name)
        if before is None:
            old = inputs.cached_result(old_keys[i])
            if old is None:
                return None
            before = global_reads(old.program)
        after = global_reads(result.program)
        if after != before:
            return None
        reads[name] = after
        if result.diagnostics:
            own[name] = result.diagnostics
        else:
            own.pop(name, None)
    diags = report([d for f in files for d in own.get(f, ())], basis.found)
    return diags, replace(basis, keys=b"".join(keys), own=own, reads=reads)
