"""Hot reload: recompile only what a file change can have changed.

`intentc watch` and the daemon's local mode keep one `Reloader`.  On a
change it

1. re-reads and re-parses only the changed files (`parse_source` per file)
   and re-runs the per-declaration domain checks for those files only; the
   cross-reference passes (duplicates, names, GPU products) run again over
   the whole program only when a changed file's names or references changed
   (deleting a tenant in one file breaks intents in others), unless
   `references` can tell from the edit that no name is declared twice and
   no reference left dangling;
2. compares the changed files' declarations before and after (frozen-dataclass
   equality, which leaves spans out, the rule `intentc diff` uses) under the
   projections in `keys`: what the planner reads, what the cross-reference
   passes read;
3. re-plans only when something the planner reads changed (GPU requests,
   tenants, triggers and data edges, SLA, durations, the topology).  The
   planner is one global, deterministic function — fair share and packing
   make every placement depend on the others — so the swap takes an
   incremental plan (plan/incremental.py: only what the edit touches is
   placed again, intents added, removed or re-linked included) and the full
   planner runs behind it in the background; an edit to an image or a
   command reuses the previous plan as is;
4. re-renders only the affected intents (plus any whose placement or wave
   moved) and patches them into the previous snapshot's ordered manifests;
5. swaps the new snapshot in with one reference assignment, or — when the
   change does not compile — keeps the last good snapshot in force and
   returns the diagnostics.

A one-file edit that the planner does not read costs the size of the edit,
not of the repository: the whole program, the diagnostics and the ordered
manifests are patched (`files.FileTable`, `render.Renderer`), never rebuilt
by loops over every file or intent.  The result is byte-identical to a full
`compile_paths` of the same tree (tests check it).  Output files are written
atomically, and only those whose text changed (`output`).

Modules: `keys` (what an edit is compared on), `references` (the
cross-reference passes judged from an edit), `state` (the snapshot and
the per-file state), `files` (the per-file table and the program it makes),
`render` (incremental render), `layered` (the renders by intent, shared
between snapshots and patched by a small layer), `reloader` (the `Reloader`), `output`
(writing the output directory), `follow` (the file watcher).
"""

from intentc.daemon.reload.follow import follow, watch_roots
from intentc.daemon.reload.output import write_changed
from intentc.daemon.reload.reloader import Reloader
from intentc.daemon.reload.state import FileState, IntentRender, ReloadResult, Snapshot

__all__ = ["FileState", "IntentRender", "ReloadResult", "Reloader", "Snapshot", "follow", "watch_roots",
           "write_changed"]
