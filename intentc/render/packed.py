"""Rendered bodies kept compactly, for a process that holds every object of a repository.

The daemon keeps the rendered objects of every intent (what it applies and
compares), and as nested dictionaries a Job body costs a dictionary per
mapping and a string per value.  A `PackedBody` keeps the same body as a
zlib-compressed pickle, a few dozen times smaller, because the compressor is primed with a preset
dictionary (`zdict`): the pickled body of the first object of the same kind
its `BodyCodec` packed, which shares nearly every key, label and annotation
with the rest.

Pickle, not JSON: it gives back exactly what was packed (tuples stay tuples,
ints stay ints, str subclasses keep their type), so whatever is made from an
unpacked body — the YAML `compile` writes, the object the daemon applies —
is byte-identical to what the unpacked body gives.  The bytes never leave
the process: nothing outside it ever sees them.
"""

from __future__ import annotations

import pickle
import threading
import zlib
from typing import Any, Callable, Mapping

_PROTOCOL = 5
_LEVEL = 6


class PackedBody:
    """One object's body, packed; `unpack()` gives a fresh, equal dictionary.

    One annotation's value (the commit stamp) can be kept aside, out of the packed
    bytes: the same object rendered at two commits then packs to the same bytes,
    which a `BodyCodec` given the objects in force (`like`) shares."""

    __slots__ = ("_zdict", "_data", "_aside")

    def __init__(self, zdict: bytes, data: bytes, aside: tuple[str, str] | None = None) -> None:
        self._zdict = zdict
        self._data = data
        self._aside = aside         # (annotation, value), put back by `unpack`

    def unpack(self) -> dict[str, Any]:
        d = zlib.decompressobj(zdict=self._zdict)
        body: dict[str, Any] = pickle.loads(d.decompress(self._data) + d.flush())
        if self._aside is not None:
            key, value = self._aside
            body["metadata"]["annotations"][key] = value      # the key is there: its place is kept
        return body

    def annotation(self, key: str) -> str | None:
        """One annotation's value (None when the body has none): the one kept aside
        without unpacking the body (the inventory records each object's commit stamp)."""
        if self._aside is not None and self._aside[0] == key:
            return self._aside[1]
        meta = self.unpack().get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        value = annotations.get(key) if isinstance(annotations, Mapping) else None
        return value if isinstance(value, str) else None

    def __len__(self) -> int:
        """Bytes held (for sizing reports)."""
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedBody):
            if other._zdict is self._zdict and other._data == self._data and other._aside == self._aside:
                return True
            return self.unpack() == other.unpack()
        if isinstance(other, Mapping):
            return self.unpack() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]   # equal to a dict, which has no hash

    def __repr__(self) -> str:
        return f"PackedBody({len(self._data)} bytes)"


def _set_aside(body: dict[str, Any], key: str) -> tuple[str, str] | None:
    """Empty annotation `key`'s value in `body` (a copy of the body: its metadata and
    annotations are copied here, the key left where it is so `unpack` restores the
    order), and give the (key, value) taken out."""
    meta = body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(key) if isinstance(annotations, Mapping) else None
    if not isinstance(value, str) or not value:
        return None
    assert isinstance(meta, Mapping) and isinstance(annotations, Mapping)
    body["metadata"] = {**meta, "annotations": {**annotations, key: ""}}
    return key, value


class BodyCodec:
    """Packs bodies with a preset dictionary per kind, chosen from the first body of
    that kind it packs.

    One dictionary for every kind, taken from whatever came first, primed the Jobs
    with a CustomResourceDefinition (render's first object): a Job packed against it
    shared little with its dictionary and came out several times larger.  Each `PackedBody`
    keeps a reference to the dictionary it was packed with, so a body stays
    readable whatever codec made it.

    `like` gives, for an object's key, its body as packed by the render in force
    (the daemon's git mode renders every commit in full while it holds the commit
    in force): a kind's dictionary is then taken from those bodies, and a body that
    packs to the same bytes as the one in force shares them instead of holding a
    second copy while both commits are held.  It costs no index: the daemon keeps
    the objects in force by key anyway."""

    __slots__ = ("_zdicts", "_asides", "_like")

    def __init__(self, like: Callable[[object], PackedBody | None] | None = None) -> None:
        self._zdicts: dict[object, bytes] = {}
        self._asides: dict[tuple[str, str], tuple[str, str]] = {}
        self._like = like

    def pack(self, body: Mapping[str, Any], aside: str | None = None, key: object = None) -> PackedBody:
        """`aside`: an annotation whose value is kept out of the packed bytes; `key`: the
        object's key for `like`."""
        flat = dict(body)
        kept = _set_aside(flat, aside) if aside is not None else None
        if kept is not None:
            kept = self._asides.setdefault(kept, kept)     # one tuple for a commit's bodies
        raw = pickle.dumps(flat, _PROTOCOL)
        kind = body.get("kind")
        before = self._like(key) if self._like is not None and key is not None else None
        zdict = self._zdicts.get(kind)
        if zdict is None:
            zdict = self._zdicts[kind] = before._zdict if before is not None else raw[-32768:]
        c = zlib.compressobj(_LEVEL, zdict=zdict)      # zlib reads at most the last 32 KiB of zdict
        data = c.compress(raw) + c.flush()
        if before is not None and before._zdict is zdict and before._data == data:
            data = before._data
        return PackedBody(zdict, data, kept)


class PackedText:
    """A long text kept zlib-compressed, or not made until first read (`plan.json`,
    `graph.json` of a snapshot the daemon holds: large as strings, and making them
    costs a transient peak of as much again; the daemon
    never reads them, `watch --out` does).  `str()` gives the text."""

    __slots__ = ("_data", "_make", "_lock")

    def __init__(self, text: str | None = None, make: Callable[[], str] | None = None) -> None:
        if (text is None) == (make is None):
            raise ValueError("a PackedText is given its text or a way to make it")
        self._data = zlib.compress(text.encode("utf-8"), _LEVEL) if text is not None else None
        self._make = make
        self._lock = threading.Lock()

    def __str__(self) -> str:
        with self._lock:          # snapshots are read from several threads
            if self._data is None:
                assert self._make is not None
                text = self._make()
                self._data, self._make = zlib.compress(text.encode("utf-8"), _LEVEL), None
                return text
            return zlib.decompress(self._data).decode("utf-8")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackedText) and (other is self or str(other) == str(self))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "PackedText(not made yet)" if self._data is None else f"PackedText({len(self._data)} bytes)"
