"""`intentc check` with a warm cache answers from the memo (intentc/pipeline/memo.py)
and prints, byte for byte, what a run without a cache prints, in every format."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import intentc.pipeline.checked
from intentc.cli import app
from intentc.frontend.cache import CACHE_ENV
from tests.cache_support import ROOT, aged, edit_same_size, make_repo

FORMATS = ("text", "json", "github", "sarif", "junit")


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture()
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def run(monkeypatch: pytest.MonkeyPatch, cache: Path | None, *args: str) -> tuple[int, str]:
    monkeypatch.setenv(CACHE_ENV, str(cache) if cache is not None else "")
    res = CliRunner().invoke(app, ["check", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout


def test_every_format_is_byte_identical_to_a_cold_run(repo: Path, cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cold = {fmt: run(monkeypatch, None, str(repo), "-o", fmt) for fmt in FORMATS}
    assert cold["text"][0] == 1 and "error[E0301]" in cold["text"][1] and "warning[W0401]" in cold["text"][1]
    assert "^" in cold["text"][1]                           # carets: the texts were read back
    assert run(monkeypatch, cache, str(repo), "-o", "json") == cold["json"]     # fills the cache and the memo
    with monkeypatch.context() as m:
        m.setattr(intentc.pipeline, "check_loaded", _refuse)
        for fmt in FORMATS:
            for _ in range(2):
                assert run(monkeypatch, cache, str(repo), "-o", fmt) == cold[fmt], fmt


def _refuse(loaded: object) -> object:
    raise AssertionError("the global passes ran; the memo should have answered")


def test_a_clean_repository_prints_the_same_counts(tmp_path: Path, cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "clean"
    shutil.copytree(ROOT / "intents", tree)
    cold = run(monkeypatch, None, str(tree))
    assert cold[0] == 0 and cold[1].startswith("ok: 17 intents, 3 tenants, 5 datasets")
    assert run(monkeypatch, cache, str(tree)) == cold
    monkeypatch.setattr(intentc.pipeline.checked, "check_loaded", _refuse)
    assert run(monkeypatch, cache, str(tree)) == cold


def test_strict_applies_to_a_remembered_report(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warn_only = tmp_path / "warn"
    shutil.copytree(ROOT / "tests" / "golden" / "passes" / "check_gpu_products--unknown-product", warn_only)
    first = run(monkeypatch, cache, str(warn_only))
    assert first[0] == 0 and "warning[W0401]" in first[1]
    monkeypatch.setattr(intentc.pipeline.checked, "check_loaded", _refuse)
    assert run(monkeypatch, cache, str(warn_only), "--strict") == (1, first[1])
    assert run(monkeypatch, cache, str(warn_only)) == first


def test_an_edit_is_reported_not_the_memo(repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    aged(monkeypatch)
    first = run(monkeypatch, cache, str(repo), "-o", "json")
    (repo / "refs" / "repo.intent").write_text((repo / "refs" / "repo.intent").read_text() + "tenant team-b { tier: gold }\n")
    edit_same_size(repo)
    (repo / "late.intent").write_text("tenant late { tier: gold }\ntenant late { tier: gold }\n")
    cold = run(monkeypatch, None, str(repo), "-o", "json")
    assert run(monkeypatch, cache, str(repo), "-o", "json") == cold
    assert "team-b" in first[1] and "team-b" not in cold[1] and "late.intent" in cold[1]


def test_exclusions_change_the_inputs(repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run(monkeypatch, cache, str(repo))
    for args in (["--exclude", "refs/"], ["--exclude", "gpus/"], []):
        assert run(monkeypatch, cache, str(repo), *args) == run(monkeypatch, None, str(repo), *args), args
    (repo / ".intentcignore").write_text("broken.intent\n")
    cold = run(monkeypatch, None, str(repo))
    assert "broken.intent" not in cold[1]
    assert run(monkeypatch, cache, str(repo)) == cold


def test_topology_is_checked_in_full(repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--topology plans the program, which a memo does not keep: it takes the full path, and its file is read anew."""
    topology = repo.parent / "cluster.yaml"
    shutil.copy(ROOT / "examples" / "topologies" / "cluster.yaml", topology)
    args = (str(repo), "--topology", str(topology), "-o", "json")
    run(monkeypatch, cache, str(repo), "-o", "json")
    cold = run(monkeypatch, None, *args)
    assert run(monkeypatch, cache, *args) == cold
    topology.write_text(topology.read_text().replace("kind: Topology", "kind: Topologie", 1))
    cold = run(monkeypatch, None, *args)
    assert run(monkeypatch, cache, *args) == cold


@pytest.mark.parametrize("suffix", [".cache", ".stat", ".memo"])
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_cache_file_is_ignored(repo: Path, cache: Path, suffix: str, damage: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cold = run(monkeypatch, None, str(repo), "-o", "json")
    run(monkeypatch, cache, str(repo), "-o", "json")
    (target,) = cache.glob(f"*{suffix}")
    data = target.read_bytes()
    target.write_bytes({"garbage": bytes(b ^ 0x5A for b in data), "truncated": data[:len(data) // 2],
                        "empty": b""}[damage])
    assert run(monkeypatch, cache, str(repo), "-o", "json") == cold
    assert run(monkeypatch, cache, str(repo), "-o", "json") == cold


def test_a_damaged_result_inside_the_cache_is_parsed_again(repo: Path, cache: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's index intact, one pickle in it overwritten: that file is parsed again."""
    cold = run(monkeypatch, None, str(repo), "-o", "json")
    run(monkeypatch, cache, str(repo), "-o", "json")
    for memo in cache.glob("*.memo"):
        memo.unlink()
    (store,) = cache.glob("*.cache")
    data = bytearray(store.read_bytes())
    data[10:60] = b"\xff" * 50
    store.write_bytes(bytes(data))
    assert run(monkeypatch, cache, str(repo), "-o", "json") == cold
