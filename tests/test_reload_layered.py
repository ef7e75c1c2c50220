"""daemon/reload/layered.py: a snapshot's renders patched by a layer, not copied.

Every patch must read exactly as the dictionary patched in place would (keys,
values, length, membership, `get`), whether the layer was folded into a new
base or not, and must leave the mapping it was made from as it was (the
previous snapshot is still read by other threads)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from intentc.daemon.reload import layered
from intentc.daemon.reload.layered import Layered

KEYS = st.sampled_from([f"k{i}" for i in range(12)])
PATCH = st.tuples(st.dictionaries(KEYS, st.integers(0, 99), max_size=4), st.lists(KEYS, max_size=3))


def _same(got: Layered[str, int], want: dict[str, int]) -> None:
    assert dict(got) == want and len(got) == len(want) and set(got) == set(want)
    for k in [f"k{i}" for i in range(13)]:
        assert (k in got) == (k in want)
        assert got.get(k) == want.get(k) and got.get(k, -1) == want.get(k, -1)
        if k in want:
            assert got[k] == want[k]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, st.integers(0, 99)), st.lists(PATCH, max_size=12), st.integers(0, 3))
def test_a_patched_mapping_reads_as_the_dictionary_patched_in_place(base: dict[str, int],
                                                                    patches: list[tuple[dict[str, int], list[str]]],
                                                                    fold_min: int) -> None:
    old_min = layered.FOLD_MIN
    try:
        want = dict(base)
        got: Layered[str, int] = Layered(dict(base))
        unfolded = got
        history = [(got, dict(want))]
        for changes, removed in patches:
            for k in removed:
                want.pop(k, None)
            want.update(changes)
            layered.FOLD_MIN = fold_min            # 0: fold at every patch; 3: after a few changes
            got = got.patched(changes, removed)
            layered.FOLD_MIN = 10**9
            unfolded = unfolded.patched(changes, removed)
            _same(got, want)
            _same(unfolded, want)
            history.append((got, dict(want)))
        for before, then in history:              # none of the earlier mappings moved
            _same(before, then)
    finally:
        layered.FOLD_MIN = old_min


def test_iteration_keeps_the_base_order_then_the_added_keys() -> None:
    got = Layered({"b": 1, "a": 2, "c": 3}).patched({"a": 20, "z": 4, "d": 5}, ["c"])
    assert list(got.items()) == [("b", 1), ("a", 20), ("z", 4), ("d", 5)]
    assert list(got.patched({}, ["z"])) == ["b", "a", "d"]
