"""A wheel built from the repository works outside the checkout: the grammar
and the schemas travel inside the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_wheel_carries_grammar_and_schemas_and_checks_outside_the_checkout(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("intentc-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "intentc/grammar/intent.lark" in names
    assert {f"intentc/schemas/{k}.schema.json" for k in ("intent", "tenant", "dataset", "topology", "plan")} <= set(names)
    info = next(n for n in names if n.endswith(".dist-info/METADATA")).rpartition("/")[0]
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()         # the SPDX form, not a License: text
    assert f"{info}/licenses/LICENSE" in names

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", repo)
    env = dict(os.environ, PYTHONPATH=str(site), INTENTC_CACHE_DIR="")
    res = subprocess.run([sys.executable, "-c", "import intentc, sys; print(intentc.__file__)"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert res.stdout.startswith(str(site))
    res = subprocess.run([sys.executable, "-m", "intentc", "check", str(repo)], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("ok: 17 intents")
