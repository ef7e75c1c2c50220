"""`intentc check` with a few files edited, patched from the last full check (intentc.pipeline.basis).

Every case compares with a full check of the same tree, cache off: the
findings (codes, messages, spans, order), the files and the counts must be
the same whichever path answered.  The spy says which path it was, so that
an edit the global passes can see is shown to take the full path.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intentc.pipeline import Summary, summarize
from intentc.pipeline import basis
from intentc.pipeline import loading
from tests.cache_support import make_repo

# (file, pattern, replacement): edits no global pass can see
LOCAL_EDITS = [
    ("nlp/pretrain.intent", r'tokenizer:1\.4"', 'tokenizer:1.5"'),
    ("nlp/pretrain.intent", r"duration 45m", "duration 50m"),
    ("nlp/pretrain.intent", r"seq_len: 8192", "seq_len: 0"),             # a local error (domain rule)
    ("nlp/pretrain.intent", r"cpu 16,", "cpu 17,"),
    ("vision/pipeline.yaml", r"(image: \S+?)(\n)", r"\1-b\2"),
    ("nlp/pretrain.intent", r"(intent tokenize-corpus \{)", r"\1  # a comment"),
]
# edits the global passes see: a full check must answer
GLOBAL_EDITS = [
    ("nlp/pretrain.intent", r"tenant team-nlp\n", "tenant team-nope\n"),     # an unknown tenant
    ("nlp/pretrain.intent", r"trigger: after tokenize-corpus", "trigger: after nothing-such"),
    ("nlp/pretrain.intent", r"intent tokenize-corpus", "intent tokenize-corpus-2"),
    ("nlp/pretrain.intent", r"gpus 16 x", "gpus 8 x"),
    ("nlp/pretrain.intent", r"sla P1", "sla P0"),
    ("nlp/pretrain.intent", r"^", "\n"),                                       # every span moves a line
    ("nlp/pretrain.intent", r"produces: corpus-tokens", "produces: corpus-other"),
]


def _full(repo: Path) -> Summary:
    return summarize([str(repo)], jobs=1, use_cache=False)


def _same(a: Summary, b: Summary) -> None:
    assert a.diagnostics == b.diagnostics
    assert [(d.code, d.span, d.message, d.related) for d in a.diagnostics] == \
           [(d.code, d.span, d.message, d.related) for d in b.diagnostics]
    assert a.files == b.files and a.counts == b.counts and a.sources == b.sources


def _edit(repo: Path, file: str, pattern: str, replacement: str) -> None:
    target = repo / file
    text = target.read_text()
    new = re.sub(pattern, replacement, text, count=1, flags=re.MULTILINE)
    assert new != text, (file, pattern)
    target.write_text(new)


@pytest.fixture()
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a run with the cache loaded every file (the full path; the
    cache-off checks the results are compared with are not counted)."""
    calls: list[int] = []
    real = loading.Inputs.load

    def spy(self: loading.Inputs, reuse: loading.Reused | None = None, behind: bool = False) -> loading.Loaded:
        if self._store is not None:     # a cache, filled or not yet
            calls.append(1)
        return real(self, reuse, behind)

    monkeypatch.setattr(loading.Inputs, "load", spy)
    return calls


@pytest.mark.parametrize("edit", LOCAL_EDITS, ids=[f"{e[0]}:{e[2]}" for e in LOCAL_EDITS])
def test_an_edit_the_global_passes_cannot_see_is_patched(tmp_path: Path, loads: list[int],
                                                         edit: tuple[str, str, str]) -> None:
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    assert loads == [1]
    _edit(repo, *edit)
    patched = summarize([str(repo)], jobs=1, cache_dir=cache)
    assert loads == [1]                 # nothing loaded: patched from the basis
    _same(patched, _full(repo))
    again = summarize([str(repo)], jobs=1, cache_dir=cache)     # the memo of the patched run
    assert loads == [1]
    _same(again, patched)


@pytest.mark.parametrize("edit", GLOBAL_EDITS, ids=[f"{e[0]}:{e[2]!r}" for e in GLOBAL_EDITS])
def test_an_edit_the_global_passes_see_is_checked_in_full(tmp_path: Path, loads: list[int],
                                                          edit: tuple[str, str, str]) -> None:
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    _edit(repo, *edit)
    result = summarize([str(repo)], jobs=1, cache_dir=cache)
    assert loads == [1, 1]
    _same(result, _full(repo))


def test_edits_in_a_row_and_put_back(tmp_path: Path, loads: list[int]) -> None:
    """The second edit of a file compares with the basis's record of the first (its
    result is not in the parse cache), and putting the text back is patched too."""
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    target = repo / "nlp" / "pretrain.intent"
    original = target.read_text()
    summarize([str(repo)], jobs=1, cache_dir=cache)
    for image in ("1.5", "1.6", "1.4"):
        target.write_text(original.replace("tokenizer:1.4", f"tokenizer:{image}"))
        _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    assert loads == [1]


def test_added_and_removed_files_are_checked_in_full(tmp_path: Path, loads: list[int]) -> None:
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    (repo / "extra.intent").write_text('dataset extra { uri: "s3://x/extra" }\n')
    _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    (repo / "extra.intent").unlink()
    _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    assert loads == [1, 1, 1]


def test_a_damaged_basis_is_a_full_check(tmp_path: Path, loads: list[int]) -> None:
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    for f in Path(cache).glob("*.basis"):
        f.write_bytes(f.read_bytes()[:40] + b"garbage")
    _edit(repo, *LOCAL_EDITS[0])
    _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    assert loads == [1, 1]


def test_more_edits_than_the_limit_are_checked_in_full(tmp_path: Path, loads: list[int],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(basis, "MAX_EDITED", 1)
    repo, cache = make_repo(tmp_path), str(tmp_path / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    _edit(repo, *LOCAL_EDITS[0])
    _edit(repo, *LOCAL_EDITS[4])
    _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    assert loads == [1, 1]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(LOCAL_EDITS + GLOBAL_EDITS), min_size=1, max_size=4), st.integers(0, 2**16))
def test_any_run_of_edits_reports_what_a_full_check_reports(tmp_path_factory: pytest.TempPathFactory,
                                                            edits: list[tuple[str, str, str]], seed: int) -> None:
    tmp = tmp_path_factory.mktemp("edits")
    repo, cache = make_repo(tmp), str(tmp / "cache")
    summarize([str(repo)], jobs=1, cache_dir=cache)
    rng = random.Random(seed)
    for file, pattern, replacement in edits:
        target = repo / file
        text = target.read_text()
        new = re.sub(pattern, replacement, text, count=1, flags=re.MULTILINE)
        target.write_text(new)
        if rng.random() < 0.5:          # sometimes check between edits, sometimes after several
            _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
    _same(summarize([str(repo)], jobs=1, cache_dir=cache), _full(repo))
