"""The compiler fingerprint (intentc/frontend/fingerprint.py): kept under a stamp of
`stat` calls, recomputed whenever a source or an installed distribution changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intentc.frontend import fingerprint

HOUR_NS = 3600 * 10**9


@pytest.fixture()
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package of two sources standing in for intentc's, on a clock whose slack
    lets a stamp vouch for files written moments ago (ctime cannot be set back)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    (pkg / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"not a source")
    monkeypatch.setattr(fingerprint, "SLACK_NS", -HOUR_NS)
    monkeypatch.setattr(fingerprint, "_roots", lambda: (pkg, tmp_path / "no-grammar", tmp_path / "no-schemas"))
    fingerprint.compiler_fingerprint.cache_clear()
    yield pkg
    fingerprint.compiler_fingerprint.cache_clear()


def _fresh(folder: Path) -> str:
    fingerprint.compiler_fingerprint.cache_clear()
    return fingerprint.compiler_fingerprint(str(folder))


def _computes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fingerprint._compute

    def counted(found: list[tuple[str, str]]) -> str:
        calls.append(len(found))
        return real(found)

    monkeypatch.setattr(fingerprint, "_compute", counted)
    return calls


def test_kept_and_given_back(sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    computes = _computes(monkeypatch)
    first = _fresh(cache)
    assert first == fingerprint.compiler_fingerprint(None) and len(first) == 64
    assert (cache / fingerprint.MEMO_NAME).exists() and computes == [2, 2]     # byte code is not a source
    assert _fresh(cache) == first and computes == [2, 2]


def test_an_edit_changes_it_even_with_the_size_and_mtime_put_back(sources: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _fresh(cache)
    target = sources / "sub" / "b.py"
    before = target.stat()
    target.write_text("B = 3\n")                              # same size; ctime moves
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _fresh(cache) != first


def _install(site: Path, version: str) -> None:
    """A distribution `fakelib` at `version` in `site`, as an installer leaves it."""
    for old in site.glob("fakelib-*.dist-info"):
        (old / "METADATA").unlink()
        old.rmdir()
    info = site / f"fakelib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n")
    (site / "fakelib.py").write_text(f"VERSION = {version!r}\n")


def test_a_new_source_or_an_upgraded_library_is_seen(sources: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = _fresh(cache)
    computes = _computes(monkeypatch)
    (sources / "c.py").write_text("C = 4\n")
    assert _fresh(cache) != first and computes == [3]
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "1.0")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(fingerprint, "LIBRARIES", (*fingerprint.LIBRARIES, ("fakelib", "fakelib")))
    one = _fresh(cache)
    assert _fresh(cache) == one and computes == [3, 3]          # kept under the new stamp
    _install(site, "2.0")                                       # an upgrade: another .dist-info
    two = _fresh(cache)
    assert two != one and computes == [3, 3, 3]


def test_the_current_directory_does_not_change_the_stamp(sources: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m intentc` puts the working directory first on `sys.path`; files written
    there (a report, a repository's new intent) must not cost the kept fingerprint."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.syspath_prepend(str(work))
    cache = tmp_path / "cache"
    first = _fresh(cache)
    computes = _computes(monkeypatch)
    (work / "report.xml").write_text("<x/>")
    assert _fresh(cache) == first and computes == []


def test_a_source_written_just_now_is_not_vouched_for(sources: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "SLACK_NS", HOUR_NS)   # every source within the slack of the stamp
    cache = tmp_path / "cache"
    computes = _computes(monkeypatch)
    first = _fresh(cache)
    assert not (cache / fingerprint.MEMO_NAME).exists()
    assert _fresh(cache) == first and len(computes) == 2


@pytest.mark.parametrize("damage", [b"", b"x" * 96, b"\xff" * 200])
def test_a_damaged_or_foreign_memo_is_recomputed(sources: Path, tmp_path: Path, damage: bytes,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first = _fresh(cache)
    memo = cache / fingerprint.MEMO_NAME
    memo.write_bytes(memo.read_bytes()[:32] + damage)
    assert _fresh(cache) == first
    memo.write_bytes(memo.read_bytes()[:32] + b"0" * 64)      # well formed, but written by another user:
    memo.chmod(0o666)
    assert _fresh(cache) == first
