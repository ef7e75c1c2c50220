"""An intent as an `Intent` custom object (render/crd.py), for the daemon to mirror.

The body is the intent's YAML document (the same `frontend/yaml_emit.py`
that `intentc convert` uses, so the object reads exactly like the file)
in its tenant's namespace, labelled like every intentc object.  The
status is separate because the API server only takes it through the
`status` subresource: the daemon applies the body, then patches the
status with what it observed (phase, planned placement, commit, last heal).
Pure: the daemon supplies the phase and the time of the last heal.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from intentc.frontend.yaml_emit import documents
from intentc.ir import Intent, Program
from intentc.plan.model import Placement
from intentc.render.meta import labels


def intent_object(intent: Intent) -> dict[str, Any]:
    ((_, doc),) = documents(Program(intents=(intent,)))
    body: dict[str, Any] = json.loads(json.dumps(doc))      # plain dicts, lists and scalars
    body["metadata"] = {"name": intent.name, "namespace": intent.tenant,
                        "labels": labels(intent.tenant, intent.name)}
    return body


def placement_text(placement: Placement | None) -> str:
    if placement is None or not placement.allocations:
        return "-"
    return ", ".join(f"{a.node}[{','.join(str(g) for g in a.gpus)}]" for a in placement.allocations)


def intent_status(placement: Placement | None, commit: str, phase: str, last_heal: str | None = None,
                  forecast: Mapping[str, Any] | None = None,
                  batch_recommendation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `status` of the mirrored object; `last_heal` is an RFC 3339 time or None, `forecast`
    the intent's live forecast (`forecast/text.status_of`) when the daemon made one,
    `batch_recommendation` its recommended batch (`tune/subjects.status_document`) when the
    daemon reads Prometheus."""
    status: dict[str, Any] = {"phase": phase, "placement": placement_text(placement), "commit": commit}
    if last_heal is not None:
        status["lastHeal"] = last_heal
    if forecast is not None:
        status["forecast"] = dict(forecast)
    if batch_recommendation is not None:
        status["batchRecommendation"] = dict(batch_recommendation)
    return {"status": status}
