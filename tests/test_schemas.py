"""The JSON Schemas themselves: valid 2020-12, documented for editors, examples
that validate, agreement with the golden files, and agreement between the
fast validator and jsonschema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from intentc.frontend import schema
from intentc.frontend.yaml_read import Reader
from intentc.ir import Precision, vocabulary

SCHEMA_DIR = Path(__file__).parents[1] / "schemas"
FILES = [SCHEMA_DIR / name for name in (schema.COMMON_FILE, *schema.SCHEMA_FILES.values())]  # the YAML surface
GOOD_YAML = [p for p in sorted((Path(__file__).parent / "golden" / "yaml").glob("*.yaml"))
             if not p.name.startswith("bad-")] + sorted((Path(__file__).parents[1] / "intents").rglob("*.yaml"))


def _walk(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema with its JSON pointer."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in ("examples", "const", "enum", "default"):
                continue
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from _walk(sub, f"{pointer}/{key}/{name}")
            elif isinstance(value, (dict, list)):
                yield from _walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _walk(item, f"{pointer}/{i}")


def _docs(path: Path) -> list[Any]:
    reader = Reader(path.name, path.read_text(encoding="utf-8"))
    reader.read()
    assert reader.diags == []
    return [root for root, _ in reader.docs if root is not None]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_schema_is_valid_2020_12(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # No $id: relative $refs must resolve next to the file, for editors and check-jsonschema.
    assert "$id" not in doc
    assert doc["title"] and doc["description"]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_example_validates_against_its_own_subschema(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    checked = 0
    for pointer, sub in _walk(doc):
        for example in sub.get("examples", []):
            v = Draft202012Validator({"$ref": f"{path.name}#{pointer}"}, registry=schema.registry())
            errors = [e.message for e in v.iter_errors(example)]
            assert errors == [], f"{path.name}#{pointer}: example {example!r}: {errors}"
            checked += 1
    assert checked > 0


def _resolve(doc: dict[str, Any], sub: dict[str, Any]) -> dict[str, Any]:
    ref = sub.get("$ref")
    if ref is None:
        return sub
    file, _, pointer = ref.partition("#")
    target: Any = schema.load_schema(file) if file else doc
    for part in pointer.strip("/").split("/"):
        target = target[part]
    return dict(target)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_property_is_documented_for_editors(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    for pointer, sub in _walk(doc):
        for name, prop in sub.get("properties", {}).items():
            target = {**_resolve(doc, prop), **prop}
            where = f"{path.name}#{pointer}/properties/{name}"
            assert target.get("description"), f"{where} has no description"
            assert target.get("examples"), f"{where} has no examples"


def test_closed_vocabularies_match_the_ir() -> None:
    intent = schema.load_schema("intent.schema.json")
    settings_props = intent["$defs"]["settings"]["properties"]
    assert tuple(settings_props["precision"]["enum"]) == vocabulary(Precision)
    assert settings_props["seq_len"]["maximum"] == 32768


def test_every_object_is_closed() -> None:
    for path in FILES:
        doc = json.loads(path.read_text(encoding="utf-8"))
        for pointer, sub in _walk(doc):
            if sub.get("type") == "object" and "properties" in sub:
                assert sub.get("additionalProperties") is False, f"{path.name}#{pointer}"


@pytest.mark.parametrize("path", GOOD_YAML, ids=[p.name for p in GOOD_YAML])
def test_schemas_accept_good_files(path: Path) -> None:
    for doc in _docs(path):
        errors = [e.message for e in schema.validator(doc["kind"]).iter_errors(doc)]
        assert errors == []
        assert schema.is_valid(doc["kind"], doc)


def test_schema_path_and_validator_per_kind() -> None:
    for kind in schema.KINDS:
        assert schema.schema_path(kind).is_file()
        assert schema.validator(kind) is schema.validator(kind)


# Documents near the valid ones: a few values replaced by arbitrary JSON.
_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 70000) | st.floats(allow_nan=False)
                     | st.sampled_from(["auto", "push", "bf16", "16", "64Gi", "P1", "gold", "", "a-b", "X"]),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                         ["count", "auto", "max", "after", "name", "x"]), inner, max_size=3), max_leaves=6)
_SEEDS = [doc for p in GOOD_YAML for doc in _docs(p)]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, prefix + (i,)))
    return out


@st.composite
def _near_valid(draw: st.DrawFn) -> dict[str, Any]:
    doc = json.loads(json.dumps(draw(st.sampled_from(_SEEDS))))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = draw(_json)
    return doc


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_near_valid())
def test_fast_validator_agrees_with_jsonschema(doc: dict[str, Any]) -> None:
    kind = doc.get("kind")
    if kind not in schema.KINDS:
        return
    assert schema.is_valid(kind, doc) == schema.validator(kind).is_valid(doc)


def test_external_validator_resolves_the_refs_offline(tmp_path: Path) -> None:
    """`check-jsonschema --schemafile schemas/intent.schema.json` (what editors and
    users run) must resolve `common.schema.json` next to the file, offline."""
    import shutil
    import subprocess
    exe = shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (pip install '.[test]')")
    root = Path(__file__).parents[1]
    files = [str(p) for p in (root / "intents" / "recsys").glob("*.yaml")]
    res = subprocess.run([exe, "--schemafile", str(root / "schemas" / "intent.schema.json"), *files],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
