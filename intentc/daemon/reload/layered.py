"""A read-only mapping made of a shared base and a small layer of changes.

Every snapshot holds each intent's render by name (`Snapshot.intents`), and a
reload changes a handful of them.  Copying the previous snapshot's dictionary
to patch it touched every key and value, so a reload cost time in proportion
to the repository rather than to the edit, and more once an intent had been
removed (a dictionary with deleted entries is copied entry by entry).  The
previous snapshot may still be read by other threads, so its mapping cannot
be changed in place.

`Layered.patched` shares the base and copies only the layer, which holds the
entries changed since the base was made (a removed key maps to `_GONE`).
When the layer outgrows a fraction of the base it is folded into a new base
(`FOLD_SHARE`): one copy of the whole per that many changed names, not one
per reload.

Iteration order follows the edits, as a dictionary's does: the base's order
(replaced entries in their place, removed ones skipped), then the keys the
layer added.  Nothing that writes output depends on it (the apply order and
the choices are sorted).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_GONE = object()         # in a layer: the key was removed
_ABSENT = object()       # not in a layer
FOLD_SHARE = 32          # fold once the layer holds more than len(base) // FOLD_SHARE entries
FOLD_MIN = 256           # ... and more than this many (small mappings fold rarely too)


class Layered(Mapping[K, V], Generic[K, V]):
    """`base` overridden by `layer` (values `_GONE` mark removed keys); never changed."""

    __slots__ = ("_base", "_layer", "_len")

    def __init__(self, base: dict[K, V] | None = None) -> None:
        """`base` is handed over: the caller never changes it afterwards."""
        self._base: dict[K, V] = base if base is not None else {}
        self._layer: dict[K, object] = {}
        self._len = len(self._base)

    @classmethod
    def _of(cls, base: dict[K, V], layer: dict[K, object], length: int) -> Layered[K, V]:
        out: Layered[K, V] = cls.__new__(cls)
        out._base, out._layer, out._len = base, layer, length
        return out

    def patched(self, changes: Mapping[K, V], removed: tuple[K, ...] | list[K] = ()) -> Layered[K, V]:
        """This mapping with `changes` set and the `removed` keys taken out."""
        layer = dict(self._layer)
        base = self._base
        length = self._len
        for k in removed:
            if _has(base, layer, k):
                layer[k] = _GONE
                length -= 1
        for k, v in changes.items():
            if not _has(base, layer, k):
                length += 1
            layer[k] = v
        if len(layer) > max(FOLD_MIN, len(base) // FOLD_SHARE):
            # C-level: a replaced key keeps its place, an added one goes last (the walk's order)
            folded = dict(base)
            for k, w in layer.items():
                if w is _GONE:
                    folded.pop(k, None)
                else:
                    folded[k] = w                            # type: ignore[assignment]
            return Layered._of(folded, {}, length)
        return Layered._of(base, layer, length)

    @staticmethod
    def _items(base: dict[K, V], layer: dict[K, object]) -> Iterator[tuple[K, V]]:
        for k, v in base.items():
            w = layer.get(k, v)
            if w is not _GONE:
                yield k, w                                   # type: ignore[misc]
        for k, w in layer.items():
            if w is not _GONE and k not in base:
                yield k, w                                   # type: ignore[misc]

    def __getitem__(self, key: K) -> V:
        if key in self._layer:
            v = self._layer[key]
            if v is _GONE:
                raise KeyError(key)
            return v                                         # type: ignore[return-value]
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return _has(self._base, self._layer, key)

    def get(self, key: K, default: V | None = None) -> V | None:    # type: ignore[override]
        v = self._layer.get(key, _ABSENT)
        if v is _ABSENT:
            return self._base.get(key, default)
        return default if v is _GONE else v                  # type: ignore[return-value]

    def __iter__(self) -> Iterator[K]:
        return (k for k, _ in self._items(self._base, self._layer))

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"Layered({len(self)} entries, {len(self._layer)} in the layer)"


def _has(base: Mapping[Any, Any], layer: Mapping[Any, object], key: Any) -> bool:
    v = layer.get(key, _ABSENT)
    return key in base if v is _ABSENT else v is not _GONE
