"""lark and lark-cython are used past their public API in exactly one module,
`intentc.frontend.lark_glue`; these tests fail loudly when either package is a
release that module was not checked against, or when an internal it reads moved.

On a new release: run the DSL tests (tests/test_dsl*.py) against it, and if they
pass add it to `lark_glue.TESTED` and widen the bound in pyproject.toml.
"""

from __future__ import annotations

import ast
from importlib.metadata import version
from pathlib import Path

import pytest

from intentc.frontend import dsl, lark_glue
from intentc.frontend.sources import SourceFile

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("package", sorted(lark_glue.TESTED))
def test_the_installed_release_is_one_the_glue_was_tested_with(package: str) -> None:
    installed = version(package)
    assert installed in lark_glue.TESTED[package], (
        f"{package} {installed} is installed, but intentc.frontend.lark_glue was only checked against "
        f"{', '.join(lark_glue.TESTED[package])}: run tests/test_dsl*.py against it, then add it to "
        f"lark_glue.TESTED and raise pyproject.toml's upper bound")


def test_pyproject_bounds_both_packages_to_the_tested_releases() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    for package, releases in lark_glue.TESTED.items():
        spec = next(line for line in text.splitlines() if line.strip().startswith(f'"{package}>='))
        assert f">={releases[0]}" in spec and f"<={releases[-1]}" in spec, (
            f"{package} must be bounded to the tested releases {releases[0]}..{releases[-1]}: {spec}")


def test_the_internals_the_glue_reads_are_where_it_reads_them() -> None:
    """Every internal the glue relies on, touched once: a renamed attribute fails here
    with its name, not as a confusing parse error elsewhere."""
    parser = dsl._PARSER
    assert parser.loop_module == "lark_cython.lark_cython"
    assert parser.states and all(isinstance(row, dict) for row in parser.states.values())
    assert parser.keywords["intent"] == "INTENT"
    try:
        parser.parse('intent j {\n  action: batch image "b:1"\n  @\n}\n')
    except Exception as exc:  # lark's UnexpectedCharacters, with its interactive parser
        ps = exc.interactive_parser.parser_state  # type: ignore[attr-defined]
        assert lark_glue.table_states(ps) is parser.states
        assert lark_glue.state_stack(ps) and lark_glue.value_stack(ps)
        lark_glue.restart_lexer(exc.interactive_parser, 0, 1, 0)  # type: ignore[attr-defined]
    else:
        pytest.fail("a stray '@' must be a syntax error")
    finally:
        dsl._LOWER.begin("")
    result = dsl.parse_full(SourceFile("x.intent", "tenant t { tier: gold }\n"))
    assert not result.diagnostics and len(result.program.tenants) == 1


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_other_module_reaches_past_the_public_api() -> None:
    """Outside the glue: lark's `Lark`, `Transformer`, `Token` and its exceptions, nothing
    of lark-cython, nothing under lark's subpackages but `lark.exceptions`."""
    allowed = {"lark", "lark.exceptions"}
    offenders = {}
    for path in sorted((ROOT / "intentc").rglob("*.py")):
        if path.name == "lark_glue.py":
            continue
        bad = {m for m in _imports(path) if (m == "lark" or m.startswith(("lark.", "lark_cython"))) and m not in allowed}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}
