"""The compiler pipeline: load → check → graph → plan → render → write.

One `Driver` per run owns the parse cache, the memo and what the stages share
(`pipeline.driver`); the stages themselves, in order, are `pipeline.stages`.
The CLI, the fleet and the daemon call the driver and never wire passes
together themselves.

This face names what callers use.  A name is imported from its module when it
is first asked for: `intentc check` answered from the memo must not pay for
the passes, the planner or the renderer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intentc.frontend.sources import texts_for_carets
    from intentc.pipeline.checked import Checked, check_loaded, global_findings, global_pass_findings
    from intentc.pipeline.commit import CommitError, resolve_commit
    from intentc.pipeline.driver import Driver, check, compile_paths
    from intentc.pipeline.findings import Counts, prefer_specific, report
    from intentc.pipeline.memo import Summary, summarize
    from intentc.pipeline.outputs import write_outputs
    from intentc.pipeline.result import MANIFESTS_DIR, CompileResult, LiveReader
    from intentc.pipeline.stages import STAGES, Request, Stage, TopologyFile, Unit, load_file

_HOME = {
    "Checked": "checked", "check_loaded": "checked", "global_findings": "checked",
    "global_pass_findings": "checked",
    "CommitError": "commit", "resolve_commit": "commit",
    "Driver": "driver", "check": "driver", "compile_paths": "driver",
    "Counts": "findings", "prefer_specific": "findings", "report": "findings",
    "Summary": "memo", "summarize": "memo",
    "write_outputs": "outputs",
    "MANIFESTS_DIR": "result", "CompileResult": "result", "LiveReader": "result",
    "STAGES": "stages", "Request": "stages", "Stage": "stages", "TopologyFile": "stages", "Unit": "stages",
    "load_file": "stages",
}

__all__ = sorted([*_HOME, "texts_for_carets"])


def __getattr__(name: str) -> Any:
    if name == "texts_for_carets":
        from intentc.frontend.sources import texts_for_carets

        return texts_for_carets
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
