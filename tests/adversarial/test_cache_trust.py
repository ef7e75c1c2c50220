"""Poisoned caches: a pickle another user could write is never unpickled (intentc.cachetrust).

The attack, reproduced first: a parse cache whose bytes are a pickle that
runs a command.  Written by this user in a private folder, it runs — that is
what a cache is, and why the README says never to restore one an untrusted
job saved.  Writable by others, owned by someone else, reached through a
symbolic link or lying in a folder everyone may write: it is not read, the
run parses instead (same output) and says why on stderr.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentc import cachetrust
from intentc.pipeline import loading
from tests.adversarial import run_intentc

ROOT = Path(__file__).resolve().parents[2]


class _Poison:
    """Unpickling this runs `touch MARKER`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return subprocess.call, (["touch", str(self.marker)],)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    shutil.copytree(ROOT / "intents", tree)
    return tree


@pytest.fixture(autouse=True)
def _fresh_warnings() -> None:
    cachetrust._warned.clear()


def _poison_every_cache_file(cache: Path, marker: Path) -> list[Path]:
    """Each pickle intentc left in `cache` replaced by one that runs `touch marker`."""
    files = sorted(p for p in cache.rglob("*") if p.is_file() and p.suffix in (".cache", ".stat", ".memo", ".pickle"))
    assert files
    for f in files:
        f.write_bytes(pickle.dumps(_Poison(marker)))
    return files


def _check(repo: Path, cache: Path) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", str(repo)], cwd=repo,
                          env={**os.environ, "INTENTC_CACHE_DIR": str(cache), "NO_COLOR": "1",
                               "XDG_CACHE_HOME": str(cache.parent / "xdg")},
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_private_poisoned_cache_runs_code_which_is_why_the_checks_exist(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert _check(repo, cache)[0] == 0
    marker = tmp_path / "pwned"
    for f in _poison_every_cache_file(cache, marker):
        f.chmod(0o600)
    _check(repo, cache)
    assert marker.exists()       # same user, private files: trusted, as any cache must be


@pytest.mark.parametrize("spoil", ["group-writable file", "world-writable file", "world-writable folder"])
def test_a_cache_others_could_write_is_not_unpickled(repo: Path, tmp_path: Path, spoil: str) -> None:
    cache = tmp_path / "cache"
    code, clean_out, _ = _check(repo, cache)
    assert code == 0
    marker = tmp_path / "pwned"
    files = _poison_every_cache_file(cache, marker)
    for f in files:
        f.chmod({"group-writable file": 0o620, "world-writable file": 0o602}.get(spoil, 0o600))
    if spoil == "world-writable folder":
        cache.chmod(0o777)
    code, out, err = _check(repo, cache)
    assert not marker.exists()
    assert (code, out) == (0, clean_out)
    assert "not using the cache in" in err and "writable by" in err


def test_a_world_writable_folder_with_the_sticky_bit_is_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)            # as /tmp: others cannot rename or remove this user's files
    assert cachetrust.folder_trusted(folder)
    folder.chmod(0o777)
    assert not cachetrust.folder_trusted(folder)


def test_a_file_owned_by_another_user_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    f = tmp_path / "x.cache"
    f.write_bytes(b"data")
    f.chmod(0o600)
    assert cachetrust.read_trusted(f) == b"data"
    # the file's owner is not the effective user (as if another account had written it)
    monkeypatch.setattr(cachetrust, "_euid", lambda: os.geteuid() + 4242)
    with caplog.at_level(logging.WARNING, logger="intentc.cache"):
        assert cachetrust.read_trusted(f) is None
    assert "belongs to user id" in caplog.text


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.cache"
    real.write_bytes(b"data")
    real.chmod(0o600)
    link = tmp_path / "link.cache"
    link.symlink_to(real)
    assert cachetrust.read_trusted(real) == b"data"
    assert cachetrust.read_trusted(link) is None


def test_the_loader_parses_again_rather_than_read_an_untrusted_cache(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    (store,) = cache.glob("*.cache")
    store.chmod(0o666)
    again = loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    assert again.program == first.program and again.diagnostics == first.diagnostics


def test_new_cache_folders_are_private(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "deep" / "cache"
    loading.load([str(repo)], jobs=1, cache_dir=str(cache))
    assert cache.stat().st_mode & 0o777 == 0o700


def test_an_untrusted_grammar_cache_is_not_given_to_lark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from intentc.frontend import lark_glue

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = lark_glue.cache_file()
    assert isinstance(path, str) and Path(path).parent.stat().st_mode & 0o777 == 0o700
    Path(path).write_bytes(b"lark's pickle")
    Path(path).chmod(0o664)
    assert lark_glue.cache_file() is False
    Path(path).chmod(0o644)
    assert lark_glue.cache_file() == path


def test_the_diff_cache_is_checked_too(tmp_path: Path) -> None:
    from intentc.diff.cache import BlobCache

    marker = tmp_path / "pwned"
    cache = BlobCache(str(tmp_path))
    assert cache.dir is not None
    cache.dir.mkdir(parents=True)
    main = cache.dir / "main.pickle"
    main.write_bytes(pickle.dumps(_Poison(marker)))
    main.chmod(0o646)
    BlobCache(str(tmp_path))
    assert not marker.exists()


def test_check_in_a_child_process_says_why_it_ignores_the_cache(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    run = run_intentc(["check", str(repo)], repo, env={"INTENTC_CACHE_DIR": str(cache)})
    assert run.exit_code == 0
    run = run_intentc(["check", str(repo)], repo, env={"INTENTC_CACHE_DIR": str(cache)})
    assert run.exit_code == 0 and "writable by every user" in run.stderr
