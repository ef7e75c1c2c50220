"""The intent fields of issue 15 are checked where they are written (E1001–E1007)."""

from __future__ import annotations

import pytest

from intentc.frontend import parse_source
from intentc.frontend.sources import SourceFile
from intentc.passes.domain import check_domain

BASE = """\
tenant t {{ tier: gold }}
intent j {{
  trigger: on push
  action: {kind} image "x:1" {{
    {settings}
  }}
  context: tenant t
  constraints: gpus 1{constraints}
}}
"""


def codes(settings: str = "batch: 8", constraints: str = "", kind: str = "inference") -> list[tuple[str, int, int]]:
    text = BASE.format(kind=kind, settings=settings, constraints=constraints)
    result = parse_source(SourceFile("j.intent", text))
    assert [d for d in result.diagnostics if d.is_error] == []
    _, diags = check_domain(result.program)
    return [(d.code, d.span.line, d.span.column) for d in diags]


@pytest.mark.parametrize(("settings", "constraints", "kind", "expected"), [
    ("parameters: 8X", "", "inference", [("E1001", 5, 17)]),
    ("kv_reuse: 1.5", "", "inference", [("E1002", 5, 15)]),
    ("throughput_mode: bursty", "", "serve", [("E1003", 5, 22)]),
    ("throughput_mode: burst", "", "inference", [("E0419", 5, 22)]),
    ("throughput_mode: steady", "", "training", [("E0419", 5, 22)]),
    ("batch: 8", ", slack 11", "inference", [("E1004", 8, 30)]),
    ("batch: 8", ", retries 101", "inference", [("E1005", 8, 32)]),
    ("batch: 8", ", fallback gpu", "inference", [("E1006", 8, 33)]),
    ("batch: 8", ", retries 2", "serve", [("E1007", 8, 32)]),
    ("model_memory: 16Gx", "", "inference", [("E0411", 5, 19)]),
    ("parameters: 1.5B\n    kv_reuse: 0.8\n    model_memory: 3Gi\n    throughput_mode: burst", ", slack 0.5, "
     "retries 0", "serve", [("E1007", 11, 43), ("E1007", 11, 30)]),
])
def test_bad_values_have_positions(settings: str, constraints: str, kind: str,
                                   expected: list[tuple[str, int, int]]) -> None:
    assert codes(settings, constraints, kind) == expected


def test_good_values_pass() -> None:
    assert codes("parameters: 1.5B\n    kv_reuse: 0.8\n    model_memory: 3Gi", ", slack 0.5, retries 0, fallback cpu") == []


def test_yaml_and_dsl_agree() -> None:
    yaml_text = """\
apiVersion: intentc.dev/v1alpha1
kind: Intent
metadata: {name: j}
spec:
  trigger: push
  action:
    kind: inference
    image: "x:1"
    settings: {parameters: 70B, kv_reuse: 0.9, model_memory: 140Gi, throughput_mode: steady}
  context: {tenant: t}
  constraints: {gpus: {count: 1}, slack: 0.5, retries: 4, fallback: cpu}
"""
    dsl_text = BASE.format(kind="inference", settings="parameters: 70B\n    kv_reuse: 0.9\n    model_memory: 140Gi\n"
                                                      "    throughput_mode: steady",
                           constraints=", slack 0.5, retries 4, fallback cpu").split("\n", 1)[1]
    from_yaml = parse_source(SourceFile("j.yaml", yaml_text)).program.intents[0]
    from_dsl = parse_source(SourceFile("j.intent", dsl_text)).program.intents[0]
    assert from_yaml == from_dsl
