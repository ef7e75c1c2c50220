"""Writing a snapshot to an output directory (`intentc watch --out`).

Each file is written atomically and only when its text changed, so a tool
watching the output (kubectl, a git diff) sees one change per edit, never a
half-written file; manifests no longer produced are removed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from intentc.atomic import write_atomic
from intentc.daemon.reload.state import Snapshot
from intentc.frontend.sources import mark_output
from intentc.pipeline.result import MANIFESTS_DIR
from intentc.render.output import KUSTOMIZATION


def write_changed(snapshot: Snapshot, out_dir: str | Path, previous: Mapping[str, str] | None = None
                  ) -> tuple[list[str], list[str]]:
    """Write the snapshot's files under `out_dir`, each atomically, skipping
    files whose text is unchanged since `previous` (the last files written);
    remove manifests that are no longer produced.  Returns (written, removed)."""
    out = Path(out_dir)
    files = snapshot.files()
    old = dict(previous) if previous is not None else _existing(out)
    written = []
    for rel, text in sorted(files.items()):
        if old.get(rel) != text:
            write_atomic(out / rel, text)
            written.append(rel)
    if out.is_dir():
        mark_output(out)
    removed = []
    for rel in sorted(set(old) - set(files)):
        if rel.startswith(f"{MANIFESTS_DIR}/"):
            try:
                os.unlink(out / rel)
                removed.append(rel)
            except FileNotFoundError:
                pass
    return written, removed


def _existing(out: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for rel in ("plan.json", "graph.json"):
        if (out / rel).is_file():
            found[rel] = (out / rel).read_text(encoding="utf-8")
    mdir = out / MANIFESTS_DIR
    if mdir.is_dir():
        for f in sorted(mdir.iterdir()):
            if f.is_file() and (f.suffix == ".yaml" or f.name == KUSTOMIZATION) and not f.name.startswith("."):
                found[f"{MANIFESTS_DIR}/{f.name}"] = f.read_text(encoding="utf-8")
    return found
