"""The compiled modules, each the common case of a parser kept in Python:

* `intentc/frontend/_yamlfast.pyx`: libyaml's events walked in C (`yaml_read.Reader`);
* `intentc/frontend/_dslfast.pyx`: a `.intent` file's lexer and LALR loop (`dsl._run`).

Each is kept only while it buys what a second implementation must buy on the
command it exists for (docs/benchmarks.md, "The compiled modules").

Optional, as PyYAML's own libyaml binding is: without Cython, a C compiler or
libyaml's headers the package installs without them and parses in Python,
with the same results.  `INTENTC_REQUIRE_SPEEDUPS=1` (CI) makes a failed
build an error instead.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRED = os.environ.get("INTENTC_REQUIRE_SPEEDUPS") == "1"


class OptionalBuildExt(build_ext):
    """Build each extension if this machine can (the DSL's needs only a C
    compiler, the YAML reader libyaml's headers too); say why not when it cannot."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:    # noqa: BLE001 - distutils raises several unrelated types
            if REQUIRED:
                raise
            print(f"intentc: building {ext.name} failed ({exc}); its Python counterpart runs instead",
                  file=sys.stderr)


def extensions() -> list[Extension]:
    exts = [Extension("intentc.frontend._yamlfast", ["intentc/frontend/_yamlfast.pyx"], libraries=["yaml"]),
            Extension("intentc.frontend._dslfast", ["intentc/frontend/_dslfast.pyx"])]
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRED:
            raise
        print("intentc: Cython is not installed; the Python counterparts run instead", file=sys.stderr)
        return []
    return list(cythonize(exts, quiet=True))    # language_level: the .pyx says


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
