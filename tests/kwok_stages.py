"""kwok stages whose Job pods run for their intent's planned duration, scaled.

intentc puts the plan's duration of each intent on its Job's pod template
(`intentc.dev/planned-duration-seconds`, `render/model.py`).  These stages are
kwok's own "fast" set (`kwok-stages.yaml` from its module) with one change:
`pod-complete` — the stage that ends a Running Job pod — waits before it fires
for a delay kwok reads from that annotation with a jq expression
(`delay.durationFrom.expressionFrom`; a string result is parsed with Go's
`time.ParseDuration`).  The scale is the caller's: a test or benchmark says
how many milliseconds of cluster time one hour of plan time takes, so the
same rendered objects serve a 2-second test and a longer benchmark.  A pod
without the annotation gets `null` from the expression and completes at
once, as with the fast set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from intentc.render.model import PLANNED_DURATION_ANNOTATION


def delay_expression(ms_per_hour: int) -> str:
    """The jq expression: the annotation's seconds x `ms_per_hour` / 3600, as "<n>ms"."""
    if ms_per_hour <= 0:
        raise ValueError(f"ms_per_hour must be positive, not {ms_per_hour}")
    return (f'.metadata.annotations["{PLANNED_DURATION_ANNOTATION}"] | if . == null then null else '
            f'((((tonumber * {ms_per_hour}) / 3600) | floor | tostring) + "ms") end')


def planned_duration_stages(assets: Path, out: Path, ms_per_hour: int) -> Path:
    """kwok's fast stages with `pod-complete` delayed by each pod's planned duration, scaled;
    written to `out/kwok-stages-planned.yaml`."""
    docs: list[Any] = list(yaml.safe_load_all((assets / "kwok-stages.yaml").read_text()))
    [complete] = [d for d in docs if d and d.get("kind") == "Stage" and d["metadata"]["name"] == "pod-complete"]
    complete["spec"]["delay"] = {"durationFrom": {"expressionFrom": delay_expression(ms_per_hour)}}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "kwok-stages-planned.yaml"
    path.write_text(yaml.safe_dump_all(docs, width=10_000))
    return path
