"""The install step byte-compiles intentc (`.ci/run`, the README's first command)
so that each `intentc` process does not compile what it imports; byte code
checked by source hash can never run a source that was edited since."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
COMPILE = re.compile(r"python -m compileall ((?:--?[\w-]+(?: [\w-]+)? )*)intentc\b")


def _flags(text: str) -> list[str]:
    m = COMPILE.search(text)
    assert m, "no `python -m compileall ... intentc` step"
    return m.group(1).split()


def test_ci_and_readme_compile_the_same_way() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _flags(ci) == _flags(readme)
    install = ci.index("pip install --quiet --disable-pip-version-check -e '.[test]'")
    assert install < COMPILE.search(ci).start()       # type: ignore[union-attr]  # after the install


def test_an_edit_is_never_run_from_stale_byte_code(tmp_path: Path) -> None:
    """The edit keeps the size and the modification time (an edit in the same second:
    byte code checked by timestamp would run the old source); the import sees it."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    source = pkg / "__init__.py"
    source.write_text("X = 1\n")
    flags = _flags((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    subprocess.run([sys.executable, "-m", "compileall", *flags, str(pkg)], check=True)
    assert list((pkg / "__pycache__").glob("__init__.*.pyc"))
    stamp = source.stat()
    source.write_text("X = 2\n")
    os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    seen = subprocess.run([sys.executable, "-c", "import pkg; print(pkg.X)"], env=env, check=True,
                          capture_output=True, text=True).stdout
    assert seen.strip() == "2"
