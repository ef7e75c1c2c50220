"""intentc/cli/coercion.py: every parameter of every command converts the values
a command line or a default gives exactly as typer's own pydantic adapter does,
or fails with typer's own message."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main

from intentc.cli import app
from intentc.cli.lazy import load_all

_coercion = pytest.importorskip("typer._coercion", reason="typer before 0.2x converts with click's types")


def _params(cmd: Any, path: str = "intentc") -> Iterator[tuple[str, Any, Any]]:
    for p in cmd.params:
        if hasattr(p, "type_descriptor"):
            yield f"{path} {p.name}", cmd, p
    for name in getattr(cmd, "list_commands", lambda ctx: [])(None):
        yield from _params(cmd.get_command(None, name), f"{path} {name}")


def _samples(annotation: Any, default: Any) -> list[Any]:
    out: list[Any] = [default, "", " ", "x", "abc", "-1", "0", "7", "007", " 5", "5_0", "1" * 19, "1.5", "inf",
                      ("a", "b"), (), ["a"], ("a", 1), 0, 3, -1, True, 2.5, 0.0, -0.5, float("nan"),
                      Path("p"), Path("/no/such/dir/x"), "/no/such/dir/x", str(Path(__file__)), "-"]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        for member in annotation:
            out += [member, member.value, str(member.value).upper(), f" {member.value}"]
    return out


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        result = runtime._coerce_value(value, param=param, ctx=ctx)
    except Exception as e:      # the message the user would read
        return "error", (type(e).__name__, getattr(e, "message", str(e)))
    return type(result).__name__, result


def _cases() -> list[tuple[str, Any, Any]]:
    load_all()
    return list(_params(typer.main.get_command(app)))


@pytest.mark.parametrize("where,cmd,param", _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_plain_values_convert_as_typers_adapter_does(where: str, cmd: Any, param: Any) -> None:
    ctx = cmd.context_class(cmd, info_name=cmd.name)
    descriptor = param.type_descriptor
    param._runtime_param = None
    ours = param.get_runtime_param()
    assert type(ours).__name__ == "PlainFirst"
    theirs = _coercion.build_runtime_param(descriptor)
    for value in _samples(descriptor.annotation, param.default):
        if value is None:
            continue
        got, want = _outcome(ours, value, param, ctx), _outcome(theirs, value, param, ctx)
        assert got == want, (where, value)
        if want[0] == "float" and want[1] != want[1]:
            continue
        assert type(got[1]) is type(want[1]), (where, value)
