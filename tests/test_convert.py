"""DSL ↔ YAML conversion keeps the meaning: the converted file compiles to an
equal IR (spans aside) and to byte-identical manifests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intentc.cli import app
from intentc.frontend import parse_source
from intentc.frontend.convert import Surface, convert
from intentc.frontend.sources import SourceFile
from intentc.ir import Program

ROOT = Path(__file__).parents[1]
EXAMPLES = sorted(p for p in (ROOT / "intents").rglob("*") if p.suffix in (".intent", ".yaml"))


def _parse(path: str, text: str) -> Program:
    result = parse_source(SourceFile(path, text))
    assert [d for d in result.diagnostics if d.is_error] == []
    return result.program


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_round_trip_through_the_other_surface(path: Path) -> None:
    original = _parse(path.name, path.read_text())
    to = Surface.YAML if path.suffix == ".intent" else Surface.DSL
    text, diags = convert(SourceFile(path.name, path.read_text()), to)
    assert text is not None, diags
    name = "converted" + (".yaml" if to is Surface.YAML else ".intent")
    converted = _parse(name, text)
    assert converted == original
    back, _ = convert(SourceFile(name, text), Surface.DSL if to is Surface.YAML else Surface.YAML)
    assert back is not None
    assert _parse(path.name, back) == original


def test_converted_repository_compiles_to_identical_manifests(tmp_path: Path) -> None:
    """Convert every file of intents/ to the other surface; compile both trees."""
    from intentc.pipeline import compile_paths, write_outputs
    from intentc.render.capabilities import DEFAULT_KUBE_VERSION
    from intentc.render.targets import DEFAULT_TARGET

    converted = tmp_path / "converted"
    for path in EXAMPLES:
        to = Surface.YAML if path.suffix == ".intent" else Surface.DSL
        text, _ = convert(SourceFile(path.name, path.read_text()), to)
        assert text is not None
        rel = path.relative_to(ROOT / "intents").with_suffix(".yaml" if to is Surface.YAML else ".intent")
        (converted / rel).parent.mkdir(parents=True, exist_ok=True)
        (converted / rel).write_text(text)
    topology = str(ROOT / "examples" / "topologies" / "cluster.yaml")
    sha = "0" * 40
    outs = []
    for i, tree in enumerate([ROOT / "intents", converted]):
        result = compile_paths([str(tree)], topology, sha, DEFAULT_KUBE_VERSION, DEFAULT_TARGET, 0, 1)
        assert result.ok, [str(d.span) + d.message for d in result.diagnostics]
        out = tmp_path / f"out{i}"
        write_outputs(result, out)
        outs.append({p.relative_to(out).as_posix(): p.read_bytes()
                     for p in sorted((out / "manifests").iterdir())})
    assert outs[0] == outs[1]
    assert len(outs[0]) > 20


def test_file_with_errors_is_not_converted() -> None:
    text, diags = convert(SourceFile("bad.intent", "intent x {\n  trigger on push\n}\n"), Surface.YAML)
    assert text is None and any(d.is_error for d in diags)


def test_cli_convert(tmp_path: Path) -> None:
    src = ROOT / "intents" / "recsys" / "features.yaml"
    out = tmp_path / "features.intent"
    res = CliRunner().invoke(app, ["convert", str(src), "--to", "dsl", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "intent build-features {" in out.read_text()
    res = CliRunner().invoke(app, ["convert", str(tmp_path / "missing.intent"), "--to", "yaml"])
    assert res.exit_code == 2
    bad = tmp_path / "bad.intent"
    bad.write_text("intent x {\n")
    res = CliRunner().invoke(app, ["convert", str(bad), "--to", "yaml"])
    assert res.exit_code == 1 and "error[E0" in res.output


def test_ir_equality_ignores_spans_only() -> None:
    """The property conversion relies on: spans never take part in equality."""
    a = _parse("a.intent", 'tenant t { tier: gold }\n')
    b = _parse("b.intent", '\n\n  tenant   t {tier:gold}\n')
    assert a == b
    assert dataclasses.replace(a.tenants[0], tier="silver") != b.tenants[0]


# -- comments ---------------------------------------------------------------------

COMMENTED = """\
# Pipeline of the NLP team.
# Owner: nlp-platform, #ml-infra on chat

tenant team-nlp {
  tier: gold  # fair share 4
  # the monthly budget
  quota: gpus 96, cpu 1536, memory 12Ti  # reviewed by finance
}

# The nightly embedding job.
intent embed-corpus {
  # runs on every push
  trigger: on push
  action: inference model "llama3-8b" image "ghcr.io/acme/vllm:0.6#sha" {
    # long prompts
    seq_len: 4096  # tokens
  }
  context: tenant team-nlp  # who pays
  constraints: gpus 8 x "H100-80GB"
}

# end of the pipeline
"""


def test_comments_survive_dsl_to_yaml_to_dsl() -> None:
    from intentc.frontend.dsl_print import format_source

    yaml_text, diags = convert(SourceFile("a.intent", COMMENTED), Surface.YAML)
    assert yaml_text is not None, diags
    assert yaml_text.startswith("# Pipeline of the NLP team.\n# Owner: nlp-platform, #ml-infra on chat\n\n")
    assert "  tier: gold  # fair share 4\n" in yaml_text
    assert "---\n# The nightly embedding job.\napiVersion:" in yaml_text
    assert "spec:\n  # runs on every push\n  trigger: push\n" in yaml_text
    assert "    tenant: team-nlp  # who pays\n" in yaml_text        # on the first line of the clause's value
    assert "  quota:\n    # the monthly budget\n    gpus: 96  # reviewed by finance\n" in yaml_text
    assert "    settings:\n      # long prompts\n      seq_len: 4096  # tokens\n" in yaml_text
    assert yaml_text.endswith("      product: H100-80GB\n# end of the pipeline\n")
    assert _parse("a.yaml", yaml_text) == _parse("a.intent", COMMENTED)
    back, diags = convert(SourceFile("a.yaml", yaml_text), Surface.DSL)
    assert back is not None, diags
    canonical, _ = format_source(SourceFile("a.intent", COMMENTED))
    assert back == canonical                   # every comment back in its place, in `intentc fmt` layout
    again, _ = convert(SourceFile("b.intent", back), Surface.YAML)
    assert again == yaml_text                  # and stable from there on


def test_yaml_comments_are_found_by_the_yaml_scanner() -> None:
    from intentc.frontend.comments import yaml_comments

    text = ('# yaml-language-server: $schema=../schemas/intent.schema.json\n# header\n'
            'apiVersion: intentc.dev/v1alpha1  # trailing\nkind: Intent\nmetadata:\n  name: "x # not a comment"\n'
            'spec:\n  action:\n    command: |\n      echo "# not one either"\n    # before image\n    image: a\n')
    found = [(c.line, c.column, c.text, c.trailing) for c in yaml_comments(text)]
    assert found == [(2, 1, "# header", False), (3, 35, "# trailing", True), (11, 5, "# before image", False)]


def test_a_yaml_file_s_comments_become_dsl_comments() -> None:
    path = next(p for p in EXAMPLES if p.suffix == ".yaml" and "\n#" in p.read_text())
    text = path.read_text()
    own = [line.strip() for line in text.splitlines()
           if line.lstrip().startswith("#") and "yaml-language-server" not in line]
    assert own, f"{path.name} has no comment to carry"
    dsl, _ = convert(SourceFile(path.name, text), Surface.DSL)
    assert dsl is not None
    assert [line.strip() for line in dsl.splitlines() if line.lstrip().startswith("#")][:len(own)] == own


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.suffix == ".intent"],
                         ids=[p.name for p in EXAMPLES if p.suffix == ".intent"])
def test_example_files_keep_every_comment_through_yaml(path: Path) -> None:
    from intentc.frontend.dsl_print import format_source

    text = path.read_text()
    yaml_text, _ = convert(SourceFile(path.name, text), Surface.YAML)
    assert yaml_text is not None
    back, _ = convert(SourceFile("converted.yaml", yaml_text), Surface.DSL)
    assert back == format_source(SourceFile(path.name, text))[0]
