"""`intentc schema-diff` on hostile schemas (issue 39): a diagnostic within 500 MiB, never a hang.

A pull request can change the JSON Schemas as well as the intents.  Each row
commits a base and a head schema to a real repository and runs the real CLI
in a child process (`run_intentc`: its own peak memory, a hang guard); a run
that needs more than 500 MiB is a blow-up, not a slow machine.  Without the
limits of `intentc/diff/schema_limits.py` the enum row ran past a minute at
370 MiB and the pattern row ran into the 120 s hang guard.  The time a run
takes is not asserted; the work it does is: a schema beyond a limit is
refused with nothing compared (no finding, no document checked), and one
within the limits yields at most one finding per enum value it changes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from adversarial import run_intentc
from intentc.diff.schema_limits import MAX_ENUM

MIB = 500.0


def schema(spec: Any, defs: dict[str, Any] | None = None) -> str:
    return json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema",
                       "$id": "https://example.test/thing.schema.json", "type": "object",
                       "properties": {"apiVersion": {"type": "string"}, "kind": {"const": "Thing"},
                                      "metadata": {"type": "object"}, "spec": spec}, "$defs": defs or {}})


def nested(depth: int) -> str:
    """A schema `depth` objects deep, written as text (json.dumps recurses)."""
    return '{"properties":{"a":' * depth + "{}" + "}}" * depth


CYCLE = {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
SELF = {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}}
REDOS = "^(a+)+$"

# id: (base schema text, head schema text, document spec, exit code, code expected or None)
CASES: dict[str, tuple[str, str, Any, int, str | None]] = {
    "ref-cycle": (schema({"$ref": "#/$defs/a"}, CYCLE),
                  schema({"$ref": "#/$defs/a"}, {**CYCLE, "b": {"$ref": "#/$defs/a", "maximum": 3}}), {"x": 1}, 1, None),
    "ref-recursive-properties": (schema({"$ref": "#/$defs/n"}, SELF),
                                 schema({"$ref": "#/$defs/n"}, {"n": {**SELF["n"], "required": ["d"]}}),
                                 {"c": {"c": {}}}, 1, None),
    "enum-100k": (schema({"properties": {"a": {"enum": [f"v{i}" for i in range(100_000)]}}}),
                  schema({"properties": {"a": {"enum": [f"w{i}" for i in range(100_000)]}}}), {"a": "v5"}, 2, "E0802"),
    "enum-at-the-limit": (schema({"properties": {"a": {"enum": [f"v{i}" for i in range(MAX_ENUM)]}}}),
                          schema({"properties": {"a": {"enum": [f"w{i}" for i in range(MAX_ENUM)]}}}), {"a": "v5"},
                          1, None),
    "pattern-catastrophic-head": (schema({"properties": {"a": {"type": "string"}}}),
                                  schema({"properties": {"a": {"type": "string", "pattern": REDOS}}}),
                                  {"a": "a" * 40 + "!"}, 2, "E0802"),
    "pattern-catastrophic-base": (schema({"properties": {"a": {"type": "string", "pattern": "(a|a)*b"}}}),
                                  schema({"properties": {"a": {"type": "string"}}}), {"a": "a" * 40}, 2, "E0802"),
    "pattern-properties-catastrophic": (schema({"type": "object"}),
                                        schema({"type": "object", "patternProperties": {r"^(\w+\s?)*$": {}}}),
                                        {("a" * 40 + "!"): 1}, 2, "E0802"),
    "nested-5000": (nested(5000), nested(5001), {}, 2, "E0802"),
    "nested-100": (schema(json.loads(nested(100))), schema(json.loads(nested(101))), {}, 2, "E0802"),
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_schema_is_answered_within_bounds(tmp_path: Path, name: str) -> None:
    base, head, spec, exit_code, code = CASES[name]
    (tmp_path / "schemas").mkdir()
    (tmp_path / "intents").mkdir()
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "schemas" / "thing.schema.json").write_text(base, encoding="utf-8")
    (tmp_path / "intents" / "doc.yaml").write_text(
        "apiVersion: intentc.dev/v1alpha1\nkind: Thing\nmetadata:\n  name: doc-one\nspec: " + json.dumps(spec) + "\n",
        encoding="utf-8")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "schemas" / "thing.schema.json").write_text(head, encoding="utf-8")
    _git(tmp_path, "commit", "-q", "-am", "head")
    run = run_intentc(["schema-diff", "--base", "HEAD~1", "--head", "HEAD"], tmp_path)
    assert "Traceback" not in run.output, run.output[-3000:]
    assert run.exit_code == exit_code, run.output[-3000:]
    if code is not None:
        assert f"error[{code}]" in run.output and "thing.schema.json" in run.output, run.output[-3000:]
    if code == "E0802":         # refused: nothing compared, no document checked
        assert not re.search(r"\bSD\d{3}\b", run.output) and "documents checked" not in run.output, \
            run.output[-3000:]
    else:                       # compared: one finding per enum value removed or added, at most
        assert len(re.findall(r"\bSD\d{3}\b", run.output)) <= 2 * MAX_ENUM, run.output[-3000:]
    assert run.peak_rss_mib <= MIB, (name, run.peak_rss_mib)
