"""`render.yaml_block` writes what PyYAML writes: on every object the repository's
intents render to (each target), on random objects, and on the strings whose
quoting is YAML's business (numbers, dates, keywords, indicators)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from intentc.pipeline import compile_paths
from intentc.render.capabilities import KubeVersion
from intentc.render.output import _dump, to_yaml
from intentc.render.yaml_block import BlockWriter

ROOT = Path(__file__).parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "repo"


@pytest.mark.parametrize("target", ["device-plugin", "dra", "kueue"])
def test_every_rendered_object_is_written_as_pyyaml_writes_it(target: str) -> None:
    result = compile_paths([str(ROOT / "intents")], str(ROOT / "examples" / "topologies" / "cluster.yaml"),
                           "0" * 40, KubeVersion(1, 34), target)
    assert result.rendered is not None and len(result.rendered.manifests) > 20
    for m in result.rendered.manifests:
        assert to_yaml(m.body) == _dump(m.body), m.ref


def test_an_ordinary_object_is_laid_out_here_not_by_pyyaml() -> None:
    """The fast path is taken: PyYAML is asked about single strings, never the object."""
    result = compile_paths([str(FIXTURE / "intents")], str(FIXTURE / "clusters" / "small.yaml"), "0" * 40)
    assert result.rendered is not None
    asked: list[Any] = []

    def fallback(body: Any) -> str:
        asked.append(body)
        return _dump(body)

    writer = BlockWriter(fallback)
    for m in result.rendered.manifests:
        if m.ref.kind in ("Job", "Deployment"):
            assert writer.write(m.body) == _dump(m.body)
    assert asked and all(list(body) == ["k"] for body in asked)


TRICKY = ["", "17", "017", "0x1F", "0b101", "1_000", "1.5", "1e5", "1e+5", ".inf", "-.inf", ".nan", "~", "null",
          "Null", "yes", "No", "on", "OFF", "y", "n", "true", "2026-12-02", "2026-12-02T07:31:04Z", "12:30",
          "1:20:30", "=", "<<", "-", "- a", "? a", ": a", "a:", "a: b", "a #b", "a#b", "#a", "!a", "&a", "*a",
          "|", ">", "'", '"', "%a", "@a", "`a", "[a]", "{a}", "a,b", " a", "a ", "a\nb", "a\tb", "é", "\u2028",
          "\x85", "\x00", "\ufeff", "34e6492ce55ba082", "0e12", "0be1", "deadbeef", "1234567890", "abc" * 400,
          "x" * 1025, "ghcr.io/acme/vllm:0.1", "ds-1=s3://b/ds-1", "out-1=", "after:job-1", "nvidia.com/gpu"]

_scalars = st.one_of(
    st.sampled_from(TRICKY), st.text(max_size=12),
    st.text(alphabet="abcdef0123456789:-_./=@+ #", max_size=10),
    st.integers(min_value=-10**20, max_value=10**20), st.booleans(), st.none(),
    st.floats(allow_nan=False, width=32))
_keys = st.one_of(st.sampled_from(TRICKY), st.text(alphabet="abcxyz-_./:", min_size=1, max_size=8),
                  st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(_keys, inner, max_size=4)), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6))
def test_random_objects_are_written_as_pyyaml_writes_them(body: dict[str, Any]) -> None:
    assert to_yaml(body) == _dump(body)


@pytest.mark.parametrize("text", TRICKY)
def test_each_tricky_string_as_a_value_a_key_and_an_item(text: str) -> None:
    for body in ({"k": text}, {text: 1}, {"k": [text, {"a": text}]}, {"k": {text: [text]}}):
        assert to_yaml(body) == _dump(body)
