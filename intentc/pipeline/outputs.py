"""The write stage: a compile's outputs on disk, replaced as a unit.

`write_outputs` replaces `DIR/manifests/` (with its `Kustomization`), `DIR/plan.json`
and `DIR/graph.json`: all new files are written beside the old ones first and
then renamed into place, so a failed or interrupted compile never leaves a
half-written mix.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from intentc.atomic import output_dir, write_atomic
from intentc.frontend.sources import mark_output
from intentc.pipeline.result import MANIFESTS_DIR, CompileResult
from intentc.render.output import KUSTOMIZATION, kustomization, manifest_names, to_yaml


def write_outputs(result: CompileResult, out_dir: str | Path) -> list[str]:
    """Write every output under `out_dir`; returns the relative paths written.

    The new manifests directory is built next to the old one and swapped in
    with renames; plan.json / graph.json are replaced atomically.  Files in
    `out_dir` that intentc does not own are left alone.
    """
    out = output_dir(out_dir)       # a link to a directory is written into; a file there is an error
    if result.rendered is None:
        return []
    manifests = result.rendered.manifests
    names = manifest_names(manifests)
    written = [f"{MANIFESTS_DIR}/{name}" for name in names]
    staging = Path(tempfile.mkdtemp(dir=out, prefix=f".{MANIFESTS_DIR}."))
    try:
        # one text at a time, not `files()`: every text at once is memory that grows with the repository
        for rel, m in zip(written, manifests):
            with open(staging / rel.split("/", 1)[1], "w", encoding="utf-8", newline="\n") as fh:
                fh.write(to_yaml(m.body))
        with open(staging / KUSTOMIZATION, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(kustomization(names))
        os.chmod(staging, 0o755)
        final = out / MANIFESTS_DIR
        old = None
        if final.exists():
            old = Path(tempfile.mkdtemp(dir=out, prefix=f".{MANIFESTS_DIR}.old."))
            os.rmdir(old)
            os.replace(final, old)
        os.replace(staging, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    write_atomic(out / "plan.json", result.plan_json)
    write_atomic(out / "graph.json", result.graph_json)
    mark_output(out)
    return sorted(written + [f"{MANIFESTS_DIR}/{KUSTOMIZATION}", "plan.json", "graph.json"])
