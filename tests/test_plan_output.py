"""plan.json against its schema, the round trip, and `intentc plan` in each format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from intentc.cli import app
from intentc.pipeline import check
from intentc.plan.html import SCRIPT_HASH, render_html, waits_for
from intentc.plan.jsonio import plan_from_json, plan_to_json
from intentc.plan.model import Plan
from intentc.plan.planner import make_plan
from intentc.plan.text import render_text
from intentc.topology.load import load_topology

ROOT = Path(__file__).parent.parent
CASE = ROOT / "tests" / "golden" / "plan" / "small"
SCHEMA = json.loads((ROOT / "schemas" / "plan.schema.json").read_text(encoding="utf-8"))
runner = CliRunner()


@pytest.fixture()
def in_case(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CASE)
    return CASE


def _plan() -> Plan:
    topo, _ = load_topology("cluster.yaml")
    assert topo is not None
    return make_plan(check(["intents.yaml"]).program, topo)[0]


def test_schema_is_valid_and_has_descriptions() -> None:
    Draft202012Validator.check_schema(SCHEMA)

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if "type" in node or "enum" in node or "$ref" in node:
                assert "description" in node or "$ref" in node or path.endswith("/items"), path
            for k, v in node.items():
                walk(v, f"{path}/{k}")
    for name, prop in SCHEMA["properties"].items():
        walk(prop, f"/properties/{name}")


def test_plan_json_validates_and_round_trips(in_case: Path) -> None:
    plan = _plan()
    text = plan_to_json(plan)
    errors = sorted(Draft202012Validator(SCHEMA).iter_errors(json.loads(text)), key=str)
    assert not errors, errors[0].message
    assert text.endswith("}\n") and json.dumps(json.loads(text), indent=2, sort_keys=True,
                                               ensure_ascii=False) + "\n" == text
    assert plan_from_json(text) == plan


def test_cli_json_is_exactly_the_document(in_case: Path) -> None:
    result = runner.invoke(app, ["plan", "intents.yaml", "--topology", "cluster.yaml", "-o", "json"])
    assert result.exit_code == 1                                  # three intents cannot be placed
    assert result.stdout == plan_to_json(_plan())
    assert "error[E0601]" in result.stderr
    assert "intents.yaml:78:11" in result.stderr


def test_cli_out_writes_the_file(in_case: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = runner.invoke(app, ["plan", "intents.yaml", "-t", "cluster.yaml", "-o", "json", "--out", str(out)])
    assert result.exit_code == 1 and result.stdout == ""
    assert out.read_text(encoding="utf-8") == plan_to_json(_plan())


def test_cli_text_table(in_case: Path) -> None:
    result = runner.invoke(app, ["plan", "intents.yaml", "--topology", "cluster.yaml"])
    assert result.exit_code == 1
    out = result.stdout
    for needle in ("Waves", "Placements", "Unplaced", "Tenants", "Metrics", "pretrain",
                   "gb-1[0,1,2,3]", "nvlink nvl-a", "quota", "weighted Jain fairness",
                   "tokenize → pretrain → finetune → eval-chat"):
        assert needle in out, needle
    assert out == render_text(_plan())
    assert not any(line != line.rstrip() for line in out.splitlines())


def test_cli_html_picture(in_case: Path, tmp_path: Path) -> None:
    out = tmp_path / "cluster.html"
    result = runner.invoke(app, ["plan", "intents.yaml", "-t", "cluster.yaml", "-o", "html", "--out", str(out)])
    assert result.exit_code == 1
    page = out.read_text(encoding="utf-8")
    after = waits_for(check(["intents.yaml"]).program)
    assert after == {"eval-chat": ("finetune",), "finetune": ("pretrain",), "pretrain": ("tokenize",)}
    assert page == render_html(_plan(), load_topology("cluster.yaml")[0].topology, after)  # type: ignore[union-attr]
    # self-contained: no stylesheets, images, fonts or scripts fetched from anywhere; the one script is
    # inline and the only one the Content-Security-Policy lets run (beside the JSON it reads)
    assert not re.search(r"<link|<img|@import|url\(|src=", page)
    assert re.findall(r"<script[^>]*>", page) == ['<script type="application/json" id="plan-deps">', "<script>"]
    assert f"default-src 'none'; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}';" in page
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}
    # one bar per contiguous run of GPUs of each placed intent, coloured by tenant (a class per tenant)
    plan = _plan()
    bars = sum(len([g for i, g in enumerate(a.gpus) if i == 0 or a.gpus[i - 1] != g - 1])
               for p in plan.placements for a in p.allocations)
    assert sum(g.count("<rect") for g in re.findall(r'<g class="bar .*?</g>', page)) == bars > 0
    assert page.count('class="swatch"') == len(plan.tenants) + 4          # tenants, then P0-P3
    assert "<title>pretrain · " in page
    assert 'id="by-sla"' in page


def test_cli_html_default_out(in_case: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("cluster.yaml", "intents.yaml"):
        (tmp_path / name).write_text((CASE / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "topo").mkdir()
    for f in (CASE / "topo").iterdir():
        (tmp_path / "topo" / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plan", "intents.yaml", "-t", "cluster.yaml", "-o", "html"])
    assert result.exit_code == 1
    assert (tmp_path / "plan.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_unreadable_topology_exits_2(in_case: Path) -> None:
    result = runner.invoke(app, ["plan", "intents.yaml", "--topology", "missing.yaml"])
    assert result.exit_code == 2
    assert "E0001" in result.stderr and result.stdout == ""


def test_cli_clean_plan_exits_0(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: intentc.dev/v1alpha1\nkind: Topology\nmetadata: {name: one}\nspec:\n"
        "  nodes:\n    - name: n1\n      gpu: {product: L4, count: 4}\n", encoding="utf-8")
    (tmp_path / "jobs.yaml").write_text(
        "apiVersion: intentc.dev/v1alpha1\nkind: Tenant\nmetadata: {name: t}\nspec: {}\n---\n"
        "apiVersion: intentc.dev/v1alpha1\nkind: Intent\nmetadata: {name: j}\nspec:\n"
        "  trigger: push\n  action: {kind: batch, image: img}\n  context: {tenant: t}\n"
        "  constraints: {gpus: {count: 2}}\n", encoding="utf-8")
    result = runner.invoke(app, ["plan", str(tmp_path / "jobs.yaml"), "-t", str(tmp_path / "cluster.yaml"),
                                 "-o", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["placements"][0]["allocations"][0]["node"] == "n1"
    assert doc["placements"][0]["interconnect"] == "pcie"          # an L4 box has no NVLink


def test_help_has_examples() -> None:
    result = runner.invoke(app, ["plan", "--help"])
    assert result.exit_code == 0 and "Examples:" in result.stdout and "--topology" in result.stdout
