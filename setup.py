"""The one compiled module: `intentc/frontend/_yamlfast.pyx` (libyaml's events
walked in C, the common case of `yaml_read.Reader`).

Optional, as PyYAML's own libyaml binding is: without Cython, a C compiler or
libyaml's headers the package installs without it and reads YAML in Python,
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
    """Build the extension if this machine can; say why not when it cannot."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:    # noqa: BLE001 - distutils raises several unrelated types
            if REQUIRED:
                raise
            print(f"intentc: building the libyaml reader failed ({exc}); YAML is read in Python",
                  file=sys.stderr)


def extensions() -> list[Extension]:
    ext = Extension("intentc.frontend._yamlfast", ["intentc/frontend/_yamlfast.pyx"], libraries=["yaml"])
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRED:
            raise
        print("intentc: Cython is not installed; YAML is read in Python", file=sys.stderr)
        return []
    return list(cythonize([ext], quiet=True))    # language_level: the .pyx says


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
