"""Following the input files: OS change events, batched, fed to a `Reloader`.

watchfiles (inotify underneath) coalesces an editor's save (write temp,
rename, chmod) into one batch, so one save is one reload.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import watchfiles

from intentc.daemon.reload.reloader import Reloader
from intentc.daemon.reload.state import ReloadResult


def watch_roots(reloader: Reloader) -> list[str]:
    """What to hand to the OS watcher: the inputs and the topology's folder."""
    roots = {str(Path(p).resolve()) for p in reloader.paths if Path(p).exists()}
    roots.add(str(Path(reloader.topology_path).resolve().parent))
    return sorted(roots)


def follow(reloader: Reloader, on_result: Callable[[ReloadResult, float], None], stop: threading.Event,
           debounce_ms: int = 50) -> None:
    """Block, feeding batches of file changes to `reloader` until `stop` is set;
    `on_result` gets each result and the seconds the reload took, and each swap
    the reloader makes in the background (a full re-plan replacing an incremental
    one; 0 seconds: nobody waited for it).  A batch that touches no input is
    dropped without a reload."""
    reloader.listen(lambda result: on_result(result, 0.0))
    for changes in watchfiles.watch(*watch_roots(reloader), stop_event=stop, debounce=debounce_ms,
                                    step=20, raise_interrupt=False, yield_on_timeout=False):
        paths = sorted({p for _change, p in changes})
        if not any(reloader.display_name(p) is not None or reloader.is_topology(p) for p in paths):
            continue
        started = time.perf_counter()
        result = reloader.update(paths)
        on_result(result, time.perf_counter() - started)
