"""The live-binding section of `intentc diff` (diff/binding_diff.py): text, JSON, markdown, github views."""

from __future__ import annotations

import json

from intentc.diagnostics import Span
from intentc.diff.binding_diff import LiveBindingDiff, Rebinding, Waiting
from intentc.diff.format import render_report
from intentc.diff.graph_diff import GraphDiff
from intentc.diff.report import DiffReport
from intentc.plan.model import NodeAllocation
from intentc.plan.rebind import BindingChange, Blocked

MOVED = BindingChange("train", (NodeAllocation("n1", (0, 1, 2, 3)),), (NodeAllocation("n2", (4, 5, 6, 7)),),
                      ("n1 GPU 2,3 taken (pod research/nb, 2 GPU(s) by count)",))
STUCK = Blocked("eval", "capacity", "8 GPUs wanted, 4 free")
SPAN = Span("intents/a.intent", 3, 1, 8, 2)


def report(binding: LiveBindingDiff | None) -> DiffReport:
    return DiffReport("main", "working tree", (), GraphDiff(), None, (), binding=binding)


def differing() -> LiveBindingDiff:
    return LiveBindingDiff("prod", rebindings=(Rebinding(MOVED, SPAN),), waiting=(Waiting(STUCK, None),),
                           kept=(("batch/v1 Job t/old", "runs bound to n1 since it was created; kept there"),),
                           notes=("n1: GPU 2,3 taken (pod research/nb, 2 GPU(s) by count)",), intents=3)


def test_text_names_preview_live_and_why() -> None:
    text = render_report(report(differing()), "text")
    assert text.splitlines()[1:] == [
        "live binding on prod: 1 intent(s) bound elsewhere than the preview, 1 do not fit now, "
        "1 object(s) kept where they run",
        "  rebind train: preview n1 GPU 0-3 -> live n2 GPU 4-7 (n1 GPU 2,3 taken (pod research/nb, 2 GPU(s) by count))",
        "  wait eval does not fit now (capacity): 8 GPUs wanted, 4 free",
        "  kept batch/v1 Job t/old: runs bound to n1 since it was created; kept there"]


def test_equal_and_unbound_say_so() -> None:
    equal = LiveBindingDiff("prod", intents=5)
    assert equal.equal and render_report(report(equal), "text").endswith(
        "live binding on prod: equals the preview (5 intent(s))\n")
    none = LiveBindingDiff("prod", bound=False, notes=("the cluster has none of the topology's 2 GPU nodes",))
    assert "live binding on prod: none (the cluster has none of the topology's 2 GPU nodes)" in \
        render_report(report(none), "text")
    assert not differing().equal


def test_json_has_the_allocations_and_only_with_a_cluster() -> None:
    doc = json.loads(render_report(report(differing()), "json"))["binding"]
    assert doc["equal"] is False and doc["cluster"] == "prod" and doc["intents"] == 3
    assert doc["rebindings"] == [{"intent": "train", "preview": [{"node": "n1", "gpus": [0, 1, 2, 3]}],
                                  "live": [{"node": "n2", "gpus": [4, 5, 6, 7]}], "reasons": list(MOVED.reasons)}]
    assert doc["waiting"] == [{"intent": "eval", "reason": "capacity", "message": "8 GPUs wanted, 4 free"}]
    assert doc["kept"][0]["object"] == "batch/v1 Job t/old"
    assert "binding" not in json.loads(render_report(report(None), "json"))


def test_github_warns_at_the_intent_and_markdown_lists_it() -> None:
    lines = render_report(report(differing()), "github").splitlines()
    warn = next(line for line in lines if "train" in line)
    assert warn.startswith("::warning file=intents/a.intent,line=3,col=1,endLine=8,endColumn=2,"), warn
    assert "preview n1 GPU 0-3 -> live n2 GPU 4-7" in warn
    assert any(line.startswith("::warning title=") and "eval does not fit now" in line for line in lines), lines
    md = render_report(report(differing()), "markdown")
    assert "**live binding on prod: 1 intent(s) bound elsewhere" in md and "- rebind train: preview n1" in md
    assert "live binding" not in render_report(report(None), "markdown")
