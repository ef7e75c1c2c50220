"""The typed, frozen intermediate representation shared by every later stage.

Both surfaces (the DSL and YAML) lower to these classes, and nothing after
the front end ever looks at a parse tree or a YAML node again.

Two rules shape this file:

* Values are kept as the user wrote them (strings for enum-like settings,
  quantity strings such as ``"64Gi"``), so that a semantic pass can report
  ``kv_cache: recyle`` with a suggestion instead of the parser rejecting it.
  The closed vocabularies live here as enums; passes check against them.
* Every node carries the `Span` of the text it came from, and `FieldSpans`
  for its individual values.  Spans never take part in equality
  (``compare=False``), so the same intent written in DSL and in YAML is
  *equal* — the property the ``convert`` round trip relies on.

The nodes live here, in the package's face, because every stage names them
and the parse cache pickles them by this path.  Beside them, what the IR's
values mean, read the same way by the checks, the planner and the cluster
side: `duration`, `quantity`, `cron`, `reserved` (names a tenant may not
take) and `tolerance` (what a declared tolerance allows).
"""

from __future__ import annotations

import enum
import functools
import operator
import struct
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, ClassVar, Iterator, Mapping

from intentc.compact import Compact
from intentc.diagnostics import Span, make_span

NO_SPAN = Span("<none>", 0, 0, 0, 0)


# --------------------------------------------------------------------------
# Closed vocabularies (docs/diagnostics.md, the E04xx domain rules)
# --------------------------------------------------------------------------

class Tier(enum.Enum):
    GOLD = "gold"
    SILVER = "silver"
    BRONZE = "bronze"

    @property
    def default_weight(self) -> int:
        return {"gold": 4, "silver": 2, "bronze": 1}[self.value]

    @property
    def default_max_sla(self) -> "SlaClass":
        """The most urgent SLA class a tenant of this tier may use unless its
        `max_sla` says otherwise: a cheaper tier cannot jump the queue of a
        dearer one by marking all of its work P0 (docs/tenancy.md)."""
        return {"gold": SlaClass.P0, "silver": SlaClass.P1, "bronze": SlaClass.P2}[self.value]


class SlaClass(enum.Enum):
    P0 = "P0"
    P1 = "P1"
    P2 = "P2"
    P3 = "P3"

    @property
    def rank(self) -> int:
        """0 is admitted first."""
        return int(self.value[1])


class KvCache(enum.Enum):
    RECYCLE = "recycle"
    RETAIN = "retain"
    EVICT = "evict"


class Precision(enum.Enum):
    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"


class ThroughputMode(enum.Enum):
    """How a serving intent meets its load (docs/sizing.md): `steady` keeps the
    planned replicas and grows batches slowly, `burst` scales replicas with
    load inside the planned GPUs and grows batches fast."""

    STEADY = "steady"
    BURST = "burst"


class Fallback(enum.Enum):
    """What a Job may fall back to once its GPU retries and its GPU variants (power
    cap, smaller chunk, smaller batch) have failed (docs/failure-fallback.md)."""

    NONE = "none"
    CPU = "cpu"


class ActionKind(enum.Enum):
    BATCH = "batch"          # run-to-completion container (Job)
    TRAINING = "training"    # run-to-completion, usually multi-GPU / multi-node (Job)
    INFERENCE = "inference"  # offline inference over a dataset (Job)
    SERVE = "serve"          # online serving (Deployment + Service)


class TriggerKind(enum.Enum):
    PUSH = "push"            # every commit that changes the intent
    SCHEDULE = "schedule"    # cron expression
    AFTER = "after"          # when the named intents have completed
    MANUAL = "manual"


class Scope(enum.Enum):
    """Placement scopes, innermost first; `within X` keeps a gang inside one X."""

    NVLINK = "nvlink"
    NODE = "node"
    RACK = "rack"
    ZONE = "zone"


class DriftPolicy(enum.Enum):
    REPORT = "report"
    HEAL = "heal"
    ROLLBACK = "rollback"


@functools.cache
def vocabulary(enum_cls: type[enum.Enum]) -> tuple[str, ...]:
    """The allowed spellings of a closed vocabulary (cached: passes ask per value)."""
    return tuple(str(m.value) for m in enum_cls)


# --------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------

_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {}
_POSITION = struct.Struct("=4I")          # line, column, end line, end column: 32-bit ...
_SHORT = struct.Struct("=4H")             # ... or 16-bit, when every one of a node's is under 65,536
_PACKERS: dict[tuple[int, bool], struct.Struct] = {}
_POSITION_OF = operator.attrgetter("line", "column", "end_line", "end_column")
_FILE = operator.attrgetter("file")
OWN = ""       # the key a node's own span is kept under (it sorts before every field name)


def _packer(fields: int, wide: bool) -> struct.Struct:
    key = (fields, wide)
    return _PACKERS.get(key) or _PACKERS.setdefault(key, struct.Struct(f"={4 * fields}{'I' if wide else 'H'}"))


def _packed(flat: list[int]) -> bytes:
    """Four positions per span, 16-bit when they fit (nearly always), else 32-bit."""
    try:
        return _packer(len(flat) // 4, False).pack(*flat)
    except struct.error:        # a line or column past 65,535
        return _packer(len(flat) // 4, True).pack(*flat)


def _shared_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple object per set of field names, however many nodes use it."""
    return _KEYS.setdefault(keys, keys)


@dataclass(frozen=True, slots=True)
class FieldSpans(Compact):
    """Where a node and each of its values were written, keyed by field name.

    Stored flat — the file once, the field names as one shared tuple, and
    line, column, end line, end column of each field packed as 16-bit
    integers (32-bit when one is too large) — and turned back into `Span`s
    only when asked (`get`, `items`, `own`), which is when a diagnostic is
    made.  The node's own span is the entry under `OWN` (first: it sorts
    first), so a node holds no `Span` object of its own.  As `Span`s (72
    bytes each) these were over half the memory of a parsed repository.
    Hashable and frozen like the rest of the IR.
    """

    file: str = ""
    keys: tuple[str, ...] = ()
    positions: bytes = b""

    def _shape(self) -> struct.Struct:
        """How the positions are packed: 8 bytes a span (16-bit) or 16 (32-bit)."""
        return _SHORT if len(self.positions) // len(self.keys) == 8 else _POSITION

    def _position(self, index: int) -> tuple[int, ...]:
        """Line, column, end line, end column of entry `index`."""
        shape = self._shape()
        return shape.unpack_from(self.positions, shape.size * index)

    def _at(self, index: int) -> Span:
        return make_span(self.file, *self._position(index))

    def get(self, key: str, default: Span) -> Span:
        keys = self.keys
        if key not in keys or key == OWN:
            return default
        return self._at(keys.index(key))

    def own(self) -> Span:
        """The node's own span (`NO_SPAN` for a node made without one)."""
        keys = self.keys
        return self._at(0) if keys and keys[0] == OWN else NO_SPAN

    def own_start(self) -> tuple[str, int, int]:
        """(file, line, column) of `own()`, without making the `Span`: what sorting
        100,000 declarations by position needs (a `Span` each was half of `merge`)."""
        keys = self.keys
        if not keys or keys[0] != OWN:
            return NO_SPAN.file, NO_SPAN.line, NO_SPAN.column
        line, column = self._position(0)[:2]
        return self.file, line, column

    @property
    def items(self) -> tuple[tuple[str, Span], ...]:
        keys = self.keys
        if not keys:
            return ()
        return tuple((k, make_span(self.file, *p))
                     for k, p in zip(keys, self._shape().iter_unpack(self.positions)) if k != OWN)

    @classmethod
    def of(cls, mapping: dict[str, Span], own: Span | None = None) -> "FieldSpans":
        if own is not None:
            mapping = {**mapping, OWN: own}
        if not mapping:
            return _NO_FIELD_SPANS
        files = set(map(_FILE, mapping.values()))
        if len(files) != 1:
            raise ValueError("the field spans of one node lie in one file")
        return cls.located(files.pop(), mapping)

    @classmethod
    def at(cls, own: Span) -> "FieldSpans":
        """Only the node's own span."""
        return cls(own.file, _shared_keys((OWN,)), _packed(list(_POSITION_OF(own))))

    @classmethod
    def located(cls, file: str, mapping: Mapping[str, Any]) -> "FieldSpans":
        """`of` for values that carry ``line``, ``column``, ``end_line`` and
        ``end_column``, all in `file`: `Span`s, or a parser's tokens, so that a
        front end need not make a `Span` of each.  The node's own span, if it
        has one, is the entry under `OWN`."""
        if not mapping:
            return _NO_FIELD_SPANS
        keys = tuple(sorted(mapping))
        return cls(file, _shared_keys(keys),
                   _packed(list(chain.from_iterable(map(_POSITION_OF, map(mapping.__getitem__, keys))))))

    @classmethod
    def pack(cls, file: str, positions: dict[str, tuple[int, int, int, int]],
             own: tuple[int, int, int, int] | None = None) -> "FieldSpans":
        """`of` from (line, column, end line, end column) of each field, all in `file`."""
        if own is not None:
            positions = {**positions, OWN: own}
        if not positions:
            return _NO_FIELD_SPANS
        keys = tuple(sorted(positions))
        return cls(file, _shared_keys(keys), _packed(list(chain.from_iterable(map(positions.__getitem__, keys)))))

    def __reduce__(self) -> tuple[object, ...]:
        return _field_spans, (self.file, self.keys, self.positions)


def _field_spans(file: str, keys: tuple[str, ...], positions: bytes) -> FieldSpans:
    """Unpickling: the names tuple is shared again across files."""
    return FieldSpans(file, _shared_keys(keys), positions)



_NO_FIELD_SPANS = FieldSpans()
NO_FIELD_SPANS = _NO_FIELD_SPANS

def _spans() -> FieldSpans:
    return field(default_factory=FieldSpans, compare=False, repr=False)  # type: ignore[return-value]


class Located(Compact):
    """A node whose own span is kept with its fields' (`FieldSpans.own`): one
    `Span` object less per node."""

    __slots__ = ()
    spans: FieldSpans

    @property
    def span(self) -> Span:
        return self.spans.own()

    @property
    def has_span(self) -> bool:
        """Made with a span of its own (`span` is not `NO_SPAN`), without unpacking it."""
        keys = self.spans.keys
        return bool(keys) and keys[0] == OWN


def _position(default: Any) -> Any:
    return field(default=default, compare=False, repr=False)


class Placed(Compact):
    """A node that keeps where it was written as its own five fields (`file`, `line`,
    `column`, `end_line`, `end_column`) rather than as a `Span` object: 40 bytes less
    per node (there are about five per intent: references and triggers)."""

    __slots__ = ()
    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def span(self) -> Span:
        return make_span(self.file, self.line, self.column, self.end_line, self.end_column)


def placed(span: Span) -> dict[str, Any]:
    """A `Span`'s five fields, to make a `Placed` node with: ``Ref(name, **placed(span))``."""
    return {"file": span.file, "line": span.line, "column": span.column, "end_line": span.end_line,
            "end_column": span.end_column}


# Where a value was written, as (a node's field spans, the field's name, what to use
# when that field has none: a `Span`, or the node whose own span it is): a check passes
# this along and builds the `Span` (`span_of`) only when it reports, not for every
# value it looks at (a node's own span is unpacked too: `Located.span`).
Where = tuple[FieldSpans, str, "Span | Located | Placed"]


def span_of(where: Where) -> Span:
    spans, key, default = where
    if key in spans.keys and key != OWN:
        return spans.get(key, NO_SPAN)
    return default if isinstance(default, Span) else default.span


@dataclass(frozen=True, slots=True)
class Ref(Placed):
    """A reference to a named declaration (tenant, dataset, intent) where it was written."""

    INTERNED: ClassVar[tuple[str, ...]] = ("name",)

    name: str
    file: str = _position(NO_SPAN.file)
    line: int = _position(0)
    column: int = _position(0)
    end_line: int = _position(0)
    end_column: int = _position(0)


# --------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Tenant(Located):
    name: str
    tier: str | None = None            # gold | silver | bronze
    weight: int | None = None          # explicit fair-share weight; else the tier's default
    quota_gpus: int | None = None
    quota_cpu: str | None = None       # quantity string
    quota_memory: str | None = None    # quantity string
    group: str | None = None           # bound to the namespace with a RoleBinding
    drift: str | None = None           # report | heal | rollback (default for its intents)
    max_sla: str | None = None         # most urgent SLA class its intents may use; else the tier's default
    spans: FieldSpans = _spans()     # its own span too (`span`)


@dataclass(frozen=True, slots=True)
class Dataset(Located):
    """A named piece of data.  Declared datasets exist outside the repository
    (external inputs) unless an intent produces them."""

    name: str
    uri: str | None = None
    spans: FieldSpans = _spans()     # its own span too (`span`)


@dataclass(frozen=True, slots=True)
class Trigger(Placed):
    INTERNED: ClassVar[tuple[str, ...]] = ("kind",)

    kind: str                           # a TriggerKind value
    after: tuple[Ref, ...] = ()
    schedule: str | None = None
    file: str = _position(NO_SPAN.file)
    line: int = _position(0)
    column: int = _position(0)
    end_line: int = _position(0)
    end_column: int = _position(0)


@dataclass(frozen=True, slots=True)
class Batch(Compact):
    """`batch: 32` (fixed) or `batch: auto` / `batch: auto(max 256)`.  Made by `batch`,
    which shares one object per value, also when unpickled (`__reduce__`)."""

    auto: bool
    size: int | None = None
    max: int | None = None

    def __reduce__(self) -> tuple[object, ...]:
        return _shared_batch, (self.auto, self.size, self.max)


def batch(auto: bool, size: int | None = None, max: int | None = None) -> Batch:  # noqa: A002
    """The `Batch` of this value: one object for every intent that writes it (most write
    `batch: auto`; 56 bytes an intent otherwise).  Frozen, without a span: safe to share."""
    return _shared_batch(auto, size, max)


@functools.lru_cache(maxsize=4096, typed=True)      # keyed by all three, positionally
def _shared_batch(auto: bool, size: int | None, max: int | None) -> Batch:  # noqa: A002
    return Batch(auto, size, max)


@dataclass(frozen=True, slots=True)
class ModelSettings(Located):
    INTERNED: ClassVar[tuple[str, ...]] = ("kv_cache", "precision")

    batch: Batch | None = None
    seq_len: int | None = None
    kv_cache: str | None = None
    precision: str | None = None
    model_memory: str | None = None     # size of the weights, quantity string ("16Gi")
    parameters: str | None = None       # parameter count ("8B", "350M"); × precision = weights
    kv_reuse: float | None = None       # expected KV-cache reuse ratio, 0..1
    throughput_mode: str | None = None  # steady | burst (a ThroughputMode value)
    spans: FieldSpans = _spans()     # its own span too (`span`)


SETTING_KEYS = ("batch", "seq_len", "kv_cache", "precision", "model_memory", "parameters", "kv_reuse",
                "throughput_mode")


@dataclass(frozen=True, slots=True)
class Action(Located):
    INTERNED: ClassVar[tuple[str, ...]] = ("kind", "image", "model")

    kind: str                           # an ActionKind value
    image: str
    command: tuple[str, ...] = ()
    model: str | None = None
    settings: ModelSettings | None = None
    replicas: int | None = None         # serve only
    port: int | None = None             # serve only
    spans: FieldSpans = _spans()     # its own span too (`span`)


@dataclass(frozen=True, slots=True)
class Context(Located):
    INTERNED: ClassVar[tuple[str, ...]] = ("drift",)

    tenant: Ref
    tags: tuple[str, ...] = ()
    drift: str | None = None            # overrides the tenant's drift policy
    tag_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)  # one per tag, where known
    spans: FieldSpans = _spans()     # its own span too (`span`)

    def tag_span(self, index: int) -> Span:
        """Where tag `index` was written: its own span (DSL, YAML), else the tags clause."""
        if index < len(self.tag_spans):
            return self.tag_spans[index]
        return self.spans.get("tags", self.span)


@dataclass(frozen=True, slots=True)
class GpuRequest(Located):
    INTERNED: ClassVar[tuple[str, ...]] = ("product", "memory", "within", "prefer")

    count: int
    product: str | None = None          # e.g. "H100-80GB"
    memory: str | None = None           # minimum GPU memory, quantity string
    within: str | None = None           # required scope (a Scope value)
    prefer: str | None = None           # preferred scope (a Scope value)
    spans: FieldSpans = _spans()     # its own span too (`span`)


@dataclass(frozen=True, slots=True)
class Constraints(Located):
    INTERNED: ClassVar[tuple[str, ...]] = ("cpu", "memory", "sla", "duration")

    cpu: str | None = None
    memory: str | None = None
    gpus: GpuRequest | None = None
    sla: str | None = None              # P0..P3
    tolerance: float | None = None      # success ratio the SLA tolerates, 0 < t <= 1
    duration: str | None = None         # estimated run time, e.g. "2h", "45m"
    slack: float | None = None          # activeDeadlineSeconds = duration x (1 + slack)
    retries: int | None = None          # the Job's backoffLimit (GPU retries on the same product)
    fallback: str | None = None         # none | cpu (a Fallback value)
    spans: FieldSpans = _spans()     # its own span too (`span`)


CONSTRAINT_KEYS = ("cpu", "memory", "gpus", "sla", "tolerance", "duration", "slack", "retries", "fallback")


@dataclass(frozen=True, slots=True)
class ClusterSelector(Located):
    """Which clusters of a fleet an intent goes to (docs/fleets.md): the clusters
    named in `names`, or, with `by_labels`, those whose labels include every pair of
    `match_labels`.  An intent without one goes to every cluster."""

    names: tuple[str, ...] = ()
    match_labels: tuple[tuple[str, str], ...] = ()     # sorted by key
    by_labels: bool = False
    name_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)   # one per name, where known
    spans: FieldSpans = _spans()     # its own span too (`span`)

    def selects(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.by_labels:
            return all(labels.get(k) == v for k, v in self.match_labels)
        return name in self.names


@dataclass(frozen=True, slots=True)
class Intent(Located):
    name: str
    trigger: Trigger
    action: Action
    context: Context
    constraints: Constraints = field(default_factory=Constraints)
    consumes: tuple[Ref, ...] = ()
    produces: tuple[Ref, ...] = ()
    clusters: ClusterSelector | None = None     # None: every cluster of the fleet
    spans: FieldSpans = _spans()     # its own span too (`span`)

    @property
    def tenant(self) -> str:
        return self.context.tenant.name

    @property
    def gpu_count(self) -> int:
        return self.constraints.gpus.count if self.constraints.gpus else 0


# --------------------------------------------------------------------------
# Topology (the cluster inventory the planner places onto)
# --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopologyNode(Located):
    name: str
    gpu_count: int = 0
    gpu_product: str | None = None
    gpu_memory: str | None = None       # per GPU, quantity string
    cpu: str | None = None
    memory: str | None = None
    domains: tuple[tuple[str, str], ...] = ()   # (level, domain name), outermost first
    labels: tuple[tuple[str, str], ...] = ()
    nvidia_smi_topo: str | None = None  # path (relative to the topology file) of `nvidia-smi topo -m` output
    taints: tuple[tuple[str, str, str], ...] = ()   # (key, value, effect), sorted
    spans: FieldSpans = _spans()     # its own span too (`span`)

    def domain(self, level: str) -> str | None:
        for lvl, name in self.domains:
            if lvl == level:
                return name
        return None


@dataclass(frozen=True, slots=True)
class Topology(Located):
    name: str
    levels: tuple[str, ...] = ("zone", "rack", "nvlink", "node")  # outermost first
    nodes: tuple[TopologyNode, ...] = ()
    spans: FieldSpans = _spans()     # its own span too (`span`)

    @property
    def gpu_products(self) -> frozenset[str]:
        return frozenset(n.gpu_product for n in self.nodes if n.gpu_product)


# --------------------------------------------------------------------------
# The whole repository
# --------------------------------------------------------------------------

Declaration = Tenant | Dataset | Intent | Topology


@dataclass(frozen=True, slots=True)
class Program(Compact):
    """Everything declared in the files given to one run, in a canonical order
    (by file path, then position), so results never depend on argument order."""

    tenants: tuple[Tenant, ...] = ()
    datasets: tuple[Dataset, ...] = ()
    intents: tuple[Intent, ...] = ()
    topologies: tuple[Topology, ...] = ()

    def declarations(self) -> Iterator[Declaration]:
        yield from self.tenants
        yield from self.datasets
        yield from self.intents
        yield from self.topologies

    def tenant(self, name: str) -> Tenant | None:
        return next((t for t in self.tenants if t.name == name), None)

    def intent(self, name: str) -> Intent | None:
        return next((i for i in self.intents if i.name == name), None)

    def canonical(self) -> "Program":
        def key(d: Declaration) -> tuple[str, int, int, str]:
            return (*d.spans.own_start(), d.name)
        return Program(tuple(sorted(self.tenants, key=key)), tuple(sorted(self.datasets, key=key)),
                       tuple(sorted(self.intents, key=key)), tuple(sorted(self.topologies, key=key)))
