"""Plain parameter values converted without pydantic.

Recent typer releases convert every parameter's value, defaults included,
through a pydantic `TypeAdapter` built for it on first use: every
`intentc` command that runs (or whose `--help` is asked for, since the root
`--color` is converted first) imports pydantic and builds some adapters.
That was a large share of what `intentc check` of one file ran, once the
other commands' modules were no longer imported: more than importing the
command line itself.

Every intentc parameter is a string, a list of strings, an enum, a number
with at most a lower bound, or a path without flags.  For those, the value
typer's adapter would return is known without it, so `install` puts a
`RuntimeParam` in front of typer's that returns such values directly, using
typer's own choice and path functions, and hands anything else to typer's
adapter: a value it does not recognise, a value out of bounds or not a
choice (so every error message is typer's own), an annotation or option it
does not cover, or a typer whose internals differ (any exception).  The
patch is process-wide, on typer's parameter class; it changes no result.  Older
typer releases (0.16, the lowest supported) use click's types and have
none of this: `install` then leaves them alone.
"""

from __future__ import annotations

import enum
import math
import re
from pathlib import Path
from typing import Any, get_args, get_origin

# An int as pydantic reads it, in the spelling every reading agrees on.
_INT = re.compile(r"-?[0-9]{1,18}")


class _NotPlain(Exception):
    """The value is not one `_plain` converts: typer's adapter decides."""


def _within(value: float, info: Any) -> bool:
    return (info.min is None or value >= info.min) and (info.max is None or value <= info.max)


def _plain(annotation: Any, info: Any, value: Any, ctx: Any, param: Any) -> Any:
    """What typer's adapter for `annotation` returns for `value`, or `_NotPlain`."""
    from typer._param_types import coerce_cli_choice, coerce_cli_path

    if info.parser is not None:
        raise _NotPlain
    if annotation is str and type(value) is str:
        return value
    if (get_origin(annotation) is list and get_args(annotation) == (str,)
            and isinstance(value, (list, tuple)) and all(type(v) is str for v in value)):
        return list(value)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        try:
            return coerce_cli_choice(value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:
            raise _NotPlain from None
    if annotation is int and not info.clamp:
        number = value if type(value) is int else int(value) if type(value) is str and _INT.fullmatch(value) else None
        if number is not None and _within(number, info):
            return number
    if (annotation is float and not info.clamp and type(value) is float and math.isfinite(value)
            and _within(value, info)):
        return value
    if isinstance(annotation, type) and issubclass(annotation, Path) and info.path_type is None:
        # typer's adapter has pydantic make the path (pydantic calls the class on a str), then checks it
        if type(value) is str:
            value = annotation(value)
        if isinstance(value, annotation):
            return coerce_cli_path(value, info, path_type=annotation, param=param, ctx=ctx)
    raise _NotPlain


def install() -> None:
    """Convert plain values without pydantic in typer releases that would use it."""
    try:
        from typer import _coercion, core
        from typer._param_types import coerce_cli_choice, coerce_cli_path  # noqa: F401  (present: _plain can run)

        parameter = core._TyperParameter
        base = _coercion.RuntimeParam
        build = _coercion.build_runtime_param
        original = parameter.get_runtime_param
    except (ImportError, AttributeError):
        return

    class PlainFirst(base):   # type: ignore[misc,valid-type]
        """typer's runtime parameter, with plain values converted before its adapter is built."""

        def __init__(self, descriptor: Any) -> None:
            super().__init__(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
            object.__setattr__(self, "descriptor", descriptor)
            object.__setattr__(self, "typer_param", None)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.descriptor.file_annotation is None:
                try:
                    return _plain(self.annotation, self.parameter_info, value, ctx, param)
                except Exception:     # _NotPlain, an error typer reports its own way, other internals
                    pass
            if self.typer_param is None:
                object.__setattr__(self, "typer_param", build(self.descriptor))
            return self.typer_param._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            try:
                self._runtime_param = PlainFirst(self.type_descriptor)
            except Exception:       # a typer whose runtime parameters are built otherwise
                return original(self)
        return self._runtime_param

    setattr(parameter, "get_runtime_param", get_runtime_param)
