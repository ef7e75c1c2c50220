"""Discovery and guarded reads, in process (the CLI-level attacks are in tests/adversarial)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from intentc.frontend.sources import OUTPUT_MARKER, _read_at_most, discover, mark_output, read_guarded, read_source


def make(root: Path, *names: str) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("tenant t { tier: gold }\n", encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def found(paths: list[str], exclude: tuple[str, ...] = ()) -> list[str]:
    files, diags = discover(paths, exclude)
    assert diags == []
    return [f.as_posix() for f in files]


def test_intentcignore_has_gitignore_semantics(repo: Path) -> None:
    make(repo, "a.intent", "vendor/b.yaml", "x/vendor/c.yaml", "drafts/d.intent", "drafts/keep.intent",
         "notes/e.yml", "deep/er/scratch.intent")
    (repo / ".intentcignore").write_text("# comment\n/vendor/\ndrafts/*\n!drafts/keep.intent\n*.yml\n"
                                         "scratch.intent\n", encoding="utf-8")
    assert found(["."]) == ["a.intent", "drafts/keep.intent", "x/vendor/c.yaml"]


def test_exclude_patterns_are_relative_to_the_repository_root(repo: Path) -> None:
    make(repo, "intents/a.intent", "intents/gen/b.intent", "intents/c.yaml")
    assert found(["intents"], ("intents/gen/",)) == ["intents/a.intent", "intents/c.yaml"]
    assert found(["intents"], ("gen",)) == ["intents/a.intent", "intents/c.yaml"]   # any depth
    assert found(["intents"], ("*.yaml", "*.intent")) == []
    os.chdir(repo / "intents")                      # the same patterns from another directory
    assert found(["."], ("intents/gen/",)) == ["a.intent", "c.yaml"]


def test_a_file_named_on_the_command_line_is_read_whatever_the_exclusions(repo: Path) -> None:
    make(repo, "vendor/b.yaml")
    (repo / ".intentcignore").write_text("vendor/\n", encoding="utf-8")
    assert found(["vendor/b.yaml"], ("*.yaml",)) == ["vendor/b.yaml"]


def test_the_output_directory_is_never_read(repo: Path) -> None:
    make(repo, "a.intent", "build/manifests/00-namespace-t.yaml", "build/other.yaml", "old/manifests/x.yaml")
    mark_output(repo / "build")
    (repo / "old" / "plan.json").write_text("{}")            # a release before the marker
    (repo / "old" / "graph.json").write_text("{}")
    assert (repo / "build" / OUTPUT_MARKER).is_file()
    assert found(["."]) == ["a.intent", "build/other.yaml"]


def test_links_inside_are_followed_and_links_out_refused(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("token\n")
    make(repo, "shared/t.intent")
    os.symlink("shared/t.intent", repo / "in.intent")
    os.symlink(tmp_path / "secret", repo / "out.yaml")
    os.symlink("../secret", repo / "rel.yaml")
    assert read_source(Path("in.intent"))[0] is not None
    for name in ("out.yaml", "rel.yaml"):
        data, diags = read_guarded(name)
        assert data is None and [d.code for d in diags] == ["E0005"]
        assert "token" not in diags[0].message


def test_only_regular_files_within_the_size_limit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(repo / "pipe.yaml")
    assert [d.code for d in read_guarded("pipe.yaml")[1]] == ["E0006"]      # does not block
    assert [d.code for d in read_guarded("/dev/null")[1]] == ["E0006"]
    make(repo, "a.intent")
    monkeypatch.setenv("INTENTC_MAX_FILE_BYTES", "10")
    data, diags = read_guarded("a.intent")
    assert data is None and [d.code for d in diags] == ["E0007"] and "24 bytes" in diags[0].message
    monkeypatch.setenv("INTENTC_MAX_FILE_BYTES", "not a number")           # the default stays in force
    assert read_guarded("a.intent")[0] is not None


def test_a_link_into_a_sibling_whose_name_extends_the_roots_is_outside(repo: Path) -> None:
    """The inside test compares whole path components: `<root>2/` is not below `<root>/`."""
    sibling = Path(str(repo.resolve()) + "2")
    sibling.mkdir()
    (sibling / "s.intent").write_text("tenant s { tier: gold }\n")
    os.symlink(sibling / "s.intent", repo / "s.intent")
    data, diags = read_guarded("s.intent")
    assert data is None and [d.code for d in diags] == ["E0005"]


def test_a_file_that_grew_after_fstat_is_read_on_to_the_cap(tmp_path: Path) -> None:
    """One read of the size fstat gave, plus one byte; more only when the file grew, never past the cap."""
    (tmp_path / "f").write_bytes(b"x" * 100)
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert _read_at_most(fd, 100, 1000) == b"x" * 100
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_at_most(fd, 10, 1000) == b"x" * 100     # stale size: the rest is read too
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_at_most(fd, 10, 51) == b"x" * 51        # ... but never past the cap
    finally:
        os.close(fd)
