"""YAML intents → IR, with every value's line and column.

`intentc.frontend.yaml_read` turns the text into positioned values; this
module validates each document with the pre-built JSON Schema validator of
its kind and lowers it to the IR (best effort for documents with schema
errors, so one bad value does not turn into a cascade of unknown names).
ruamel.yaml's round trip stays where comments matter (``yaml_emit``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from intentc.diagnostics import Diagnostic, Span, error, excerpt, warning
from intentc.frontend.schema import (
    API_VERSION,
    CLUSTER_KIND,
    KINDS,
    POLICY_KIND,
    Pos,
    YList,
    YMap,
    schema_diagnostics,
    to_position,
    to_span,
)
from intentc.frontend.yaml_read import Reader
from intentc.ir import (
    CONSTRAINT_KEYS,
    OWN,
    SETTING_KEYS,
    Action,
    Batch,
    ClusterSelector,
    Constraints,
    Context,
    Dataset,
    FieldSpans,
    GpuRequest,
    Intent,
    ModelSettings,
    Program,
    Ref,
    Tenant,
    Topology,
    TopologyNode,
    Trigger,
    placed,
)
from intentc.diagnostics.suggest import did_you_mean
from intentc.frontend.sources import SourceFile
from intentc.ir import batch as make_batch

# --------------------------------------------------------------------------
# Documents → IR
# --------------------------------------------------------------------------

_EMPTY = YMap((0, 0, 0, 0))
# IR field -> YAML key, where they are the same
_SETTING_FIELDS = {k: k for k in SETTING_KEYS}
_ACTION_FIELDS = {k: k for k in ("kind", "image", "model", "command", "replicas", "port")}
_CONTEXT_FIELDS = {k: k for k in ("tenant", "tags", "drift")}
_GPU_FIELDS = {k: k for k in ("count", "product", "memory", "within", "prefer")}
_CONSTRAINT_FIELDS = {k: k for k in CONSTRAINT_KEYS}
_INTENT_FIELDS = {k: k for k in ("trigger", "action", "context", "constraints", "consumes", "produces", "clusters")}
_DEFAULT_LEVELS = Topology(name="").levels


class _Lower:
    """Best-effort lowering: a value of the wrong type becomes None (the schema
    already reported it), so one mistake never cascades into "unknown tenant"."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self._lines: list[str] | None = None

    def span(self, at: Pos) -> Span:
        return to_span(self.file, at)

    def vspan(self, m: YMap, key: str) -> Span | None:
        p = m.pos.get(key)
        return to_span(self.file, p[1]) if p else None

    def spans(self, m: YMap, own: Span, fields: dict[str, str],
              extra: dict[str, Span | None] | None = None) -> FieldSpans:
        """Where the node (`own`) and each field were written, packed straight from the
        reader's positions."""
        pos = m.pos
        found = {f: to_position(pos[k][1]) for f, k in fields.items() if k in pos}
        for f, s in (extra or {}).items():
            if s is not None:
                found[f] = (s.line, s.column, s.end_line, s.end_column)
        found[OWN] = (own.line, own.column, own.end_line, own.end_column)
        return FieldSpans.pack(self.file, found)

    # -- typed getters --------------------------------------------------------

    @staticmethod
    def map_of(m: YMap, key: str) -> YMap:
        v = m.get(key)
        return v if isinstance(v, YMap) else _EMPTY

    @staticmethod
    def str_of(m: YMap, key: str) -> str | None:
        v = m.get(key)
        return v if isinstance(v, str) else None

    @staticmethod
    def int_of(m: YMap, key: str) -> int | None:
        v = m.get(key)
        if isinstance(v, bool):
            return None
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v if isinstance(v, int) else None

    @staticmethod
    def float_of(m: YMap, key: str) -> float | None:
        v = m.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def quantity(self, m: YMap, key: str) -> str | None:
        """Quantities stay text: `cpu: 16` and the DSL's `cpu 16` both give "16"."""
        v = m.get(key)
        if isinstance(v, str):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            line, col, end_line, end_col = m.pos[key][1]
            if line == end_line:
                if self._lines is None:
                    self._lines = self.text.split("\n")
                if line < len(self._lines):
                    return self._lines[line][col:end_col]
            return str(v)
        return None

    def strs(self, m: YMap, key: str) -> tuple[str, ...]:
        v = m.get(key)
        return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()

    def item_spans(self, m: YMap, key: str) -> tuple[Span, ...]:
        """The spans of the string items of a list (what `strs` returns), in order."""
        v = m.get(key)
        if not isinstance(v, YList):
            return ()
        return tuple(to_span(self.file, at) for x, at in zip(v, v.pos) if isinstance(x, str))

    def refs(self, m: YMap, key: str) -> tuple[Ref, ...]:
        v = m.get(key)
        if isinstance(v, str):
            return (Ref(v, self.file, *to_position(m.pos[key][1])),)
        if not isinstance(v, YList):
            return ()
        file = self.file
        return tuple(Ref(x, file, *to_position(p)) for x, p in zip(v, v.pos) if isinstance(x, str))

    # -- kinds -------------------------------------------------------------------

    def tenant(self, doc: YMap, name: str, name_span: Span) -> Tenant:
        spec = self.map_of(doc, "spec")
        quota = self.map_of(spec, "quota")
        return Tenant(
            name=name, tier=self.str_of(spec, "tier"), weight=self.int_of(spec, "weight"),
            quota_gpus=self.int_of(quota, "gpus"), quota_cpu=self.quantity(quota, "cpu"),
            quota_memory=self.quantity(quota, "memory"), group=self.str_of(spec, "group"),
            drift=self.str_of(spec, "drift"), max_sla=self.str_of(spec, "max_sla"),
            spans=self.spans(spec, self.span(doc.at),
                             {"tier": "tier", "weight": "weight", "group": "group", "drift": "drift",
                              "max_sla": "max_sla"},
                             {"name": name_span, "quota_gpus": self.vspan(quota, "gpus"),
                              "quota_cpu": self.vspan(quota, "cpu"), "quota_memory": self.vspan(quota, "memory")}))

    def dataset(self, doc: YMap, name: str, name_span: Span) -> Dataset:
        spec = self.map_of(doc, "spec")
        return Dataset(name=name, uri=self.str_of(spec, "uri"),
                       spans=self.spans(spec, self.span(doc.at), {"uri": "uri"}, {"name": name_span}))

    def trigger(self, spec: YMap) -> Trigger:
        v = spec.get("trigger")
        p = spec.pos.get("trigger")
        at = (self.file, *to_position(p[1] if p else spec.at))
        if isinstance(v, str):
            return Trigger(v, (), None, *at)
        if isinstance(v, YMap):
            if "after" in v:
                return Trigger("after", self.refs(v, "after"), None, *at)
            if "schedule" in v:
                return Trigger("schedule", (), self.str_of(v, "schedule"), *at)
        return Trigger("manual", (), None, *at)        # missing or malformed: already reported

    def settings(self, m: YMap) -> ModelSettings:
        b = m.get("batch")
        batch: Batch | None = None
        if isinstance(b, bool):
            batch = None
        elif isinstance(b, int):
            batch = make_batch(False, b)
        elif b == "auto":
            batch = make_batch(True)
        elif isinstance(b, YMap):
            batch = make_batch(True, max=self.int_of(b, "max"))
        return ModelSettings(
            batch=batch, seq_len=self.int_of(m, "seq_len"), kv_cache=self.str_of(m, "kv_cache"),
            precision=self.str_of(m, "precision"), model_memory=self.quantity(m, "model_memory"),
            parameters=self.quantity(m, "parameters"), kv_reuse=self.float_of(m, "kv_reuse"),
            throughput_mode=self.str_of(m, "throughput_mode"),
            spans=self.spans(m, self.span(m.at), _SETTING_FIELDS))

    def action(self, spec: YMap) -> Action:
        a = self.map_of(spec, "action")
        s = a.get("settings")
        return Action(
            kind=self.str_of(a, "kind") or "batch", image=self.str_of(a, "image") or "",
            command=self.strs(a, "command"), model=self.str_of(a, "model"),
            settings=self.settings(s) if isinstance(s, YMap) else None,
            replicas=self.int_of(a, "replicas"), port=self.int_of(a, "port"),
            spans=self.spans(a, self.vspan(spec, "action") or self.span(spec.at), _ACTION_FIELDS))

    def context(self, spec: YMap) -> Context:
        c = self.map_of(spec, "context")
        span = self.vspan(spec, "context") or self.span(spec.at)
        tenant = self.str_of(c, "tenant")
        return Context(
            tenant=Ref(tenant or "", **placed(self.vspan(c, "tenant") or span)), tags=self.strs(c, "tags"),
            drift=self.str_of(c, "drift"), tag_spans=self.item_spans(c, "tags"),
            spans=self.spans(c, span, _CONTEXT_FIELDS))

    def constraints(self, spec: YMap) -> Constraints:
        if not isinstance(spec.get("constraints"), YMap):
            return Constraints()
        c = self.map_of(spec, "constraints")
        g = c.get("gpus")
        gpus = None
        count = self.int_of(g, "count") if isinstance(g, YMap) else None
        if isinstance(g, YMap) and count is not None:
            # a count that is missing or not an integer was reported by the schema (E0210,
            # E0211); as in the DSL, there is then no GPU request to check further
            gpus = GpuRequest(
                count=count, product=self.str_of(g, "product"),
                memory=self.quantity(g, "memory"), within=self.str_of(g, "within"),
                prefer=self.str_of(g, "prefer"),
                spans=self.spans(g, self.span(g.at), _GPU_FIELDS))
        return Constraints(
            cpu=self.quantity(c, "cpu"), memory=self.quantity(c, "memory"), gpus=gpus,
            sla=self.str_of(c, "sla"), tolerance=self.float_of(c, "tolerance"),
            duration=self.str_of(c, "duration"), slack=self.float_of(c, "slack"),
            retries=self.int_of(c, "retries"), fallback=self.str_of(c, "fallback"),
            spans=self.spans(c, self.span(c.at), _CONSTRAINT_FIELDS))

    def intent(self, doc: YMap, name: str, name_span: Span) -> Intent:
        spec = self.map_of(doc, "spec")
        return Intent(
            name=name, trigger=self.trigger(spec), action=self.action(spec),
            context=self.context(spec), constraints=self.constraints(spec),
            consumes=self.refs(spec, "consumes"), produces=self.refs(spec, "produces"),
            clusters=self.clusters(spec),
            spans=self.spans(spec, self.span(doc.at), _INTENT_FIELDS, {"name": name_span}))

    def clusters(self, spec: YMap) -> ClusterSelector | None:
        """`clusters: [a, b]` or `clusters: {matchLabels: {k: v}}` (malformed: the schema said so)."""
        v = spec.get("clusters")
        span = self.vspan(spec, "clusters")
        if span is None:
            return None
        if isinstance(v, YMap):
            labels = self.map_of(v, "matchLabels")
            pairs = {k: x for k, x in labels.items() if isinstance(k, str) and isinstance(x, str)}
            spans = {f"label:{k}": to_span(self.file, labels.pos[k][0]) for k in pairs if k in labels.pos}
            return ClusterSelector(match_labels=tuple(sorted(pairs.items())), by_labels=True,
                                   spans=FieldSpans.of(spans, span))
        return ClusterSelector(names=self.strs(spec, "clusters"), name_spans=self.item_spans(spec, "clusters"),
                               spans=FieldSpans.at(span))

    def node(self, n: YMap, levels: tuple[str, ...]) -> TopologyNode | None:
        name = self.str_of(n, "name")
        if name is None:
            return None
        gpu = self.map_of(n, "gpu")
        raw_domains = self.map_of(n, "domains")
        domains = sorted(((k, v) for k, v in raw_domains.items() if isinstance(v, str)),
                         key=lambda kv: (levels.index(kv[0]) if kv[0] in levels else len(levels), kv[0]))
        labels = self.map_of(n, "labels")
        return TopologyNode(
            name=name, gpu_count=self.int_of(gpu, "count") or 0, gpu_product=self.str_of(gpu, "product"),
            gpu_memory=self.quantity(gpu, "memory"), cpu=self.quantity(n, "cpu"),
            memory=self.quantity(n, "memory"), domains=tuple(domains),
            labels=tuple(sorted((k, v) for k, v in labels.items() if isinstance(v, str))),
            nvidia_smi_topo=self.str_of(n, "nvidiaSmiTopo"), taints=self.taints(n),
            spans=self.spans(n, self.span(n.at), {"name": "name", "cpu": "cpu", "memory": "memory",
                                 "nvidia_smi_topo": "nvidiaSmiTopo"},
                             {"gpu_count": self.vspan(gpu, "count"), "gpu_product": self.vspan(gpu, "product"),
                              "gpu_memory": self.vspan(gpu, "memory")}))

    def taints(self, n: YMap) -> tuple[tuple[str, str, str], ...]:
        v = n.get("taints")
        items = [t for t in v if isinstance(t, YMap)] if isinstance(v, list) else []
        return tuple(sorted((self.str_of(t, "key") or "", self.str_of(t, "value") or "",
                             self.str_of(t, "effect") or "") for t in items))

    def topology(self, doc: YMap, name: str, name_span: Span) -> Topology:
        spec = self.map_of(doc, "spec")
        levels = self.strs(spec, "levels") if isinstance(spec.get("levels"), list) else _DEFAULT_LEVELS
        nodes_raw = spec.get("nodes")
        nodes = [self.node(n, levels) for n in nodes_raw if isinstance(n, YMap)] if isinstance(nodes_raw, list) else []
        return Topology(name=name, levels=levels, nodes=tuple(n for n in nodes if n is not None),
                        spans=self.spans(spec, self.span(doc.at), {"levels": "levels"}, {"name": name_span}))


def _header(doc: YMap, file: str, diags: list[Diagnostic]) -> str | None:
    """Check apiVersion and kind (needed to pick a schema); the kind, or None to skip."""
    kind = doc.get("kind")
    if doc.get("apiVersion") == API_VERSION and kind in KINDS:
        return str(kind)
    if doc.get("apiVersion") == API_VERSION and kind == POLICY_KIND:
        if "policies" not in Path(file).parts[:-1]:
            diags.append(warning("W1003", "a Policy is read from policies/*.yaml only; this one is ignored",
                                 to_span(file, doc.pos["kind"][1]),
                                 hint="move it into the repository's policies/ directory (docs/policies.md)"))
        return None                                    # intentc.policy.load reads it
    if doc.get("apiVersion") == API_VERSION and kind == CLUSTER_KIND:
        return None                                    # intentc.fleet.clusters reads it (--clusters)
    first_key = to_span(file, next(iter(doc.pos.values()))[0]) if doc.pos else to_span(file, doc.at)
    kinds = ", ".join(KINDS)
    api = doc.get("apiVersion")
    if "apiVersion" not in doc:
        diags.append(error("E0210", 'missing required property "apiVersion"', first_key,
                           hint=f"add `apiVersion: {API_VERSION}`"))
    elif api != API_VERSION:
        shown = f'"{excerpt(api)}"' if isinstance(api, str) else excerpt(repr(api))
        diags.append(error("E0204", f"unknown apiVersion {shown}{did_you_mean(api, [API_VERSION])}",
                           to_span(file, doc.pos["apiVersion"][1]), hint=f"intentc reads {API_VERSION}"))
    if "kind" not in doc:
        diags.append(error("E0210", f'missing required property "kind" (one of {kinds})', first_key))
        return None
    if kind not in KINDS:
        shown = f'"{excerpt(kind)}"' if isinstance(kind, str) else excerpt(repr(kind))
        diags.append(error("E0204", f"unknown kind {shown}{did_you_mean(kind, KINDS)}",
                           to_span(file, doc.pos["kind"][1]), hint=f"kinds: {kinds}"))
        return None
    return str(kind)


def _domain_levels(doc: YMap, file: str) -> list[Diagnostic]:
    """A Topology node's `domains` keys are levels of its topology (`spec.levels`, by
    default zone, rack, nvlink, node; `node` always is one): any other key (`rak:`)
    would be a domain the planner never reads, so it is E0711 at the key, with the
    nearest level.  The schema cannot say it: the levels are the document's own."""
    spec = doc.get("spec")
    if not isinstance(spec, YMap):
        return []
    raw_levels = spec.get("levels", _DEFAULT_LEVELS)
    if not isinstance(raw_levels, (list, tuple)) or not all(isinstance(lvl, str) for lvl in raw_levels):
        return []                                       # the schema said what is wrong with them
    levels = [*raw_levels, *(() if "node" in raw_levels else ("node",))]
    nodes = spec.get("nodes")
    diags: list[Diagnostic] = []
    for n in nodes if isinstance(nodes, list) else ():
        domains = n.get("domains") if isinstance(n, YMap) else None
        if not isinstance(domains, YMap):
            continue
        name = n.get("name")
        of = f' of node "{excerpt(name)}"' if isinstance(name, str) else ""
        for key in domains:
            if isinstance(key, str) and key not in levels and key in domains.pos:
                diags.append(error(
                    "E0711", f'unknown topology level "{excerpt(key)}" in the domains{of}{did_you_mean(key, levels)}',
                    to_span(file, domains.pos[key][0]),
                    hint=f"the levels of this topology are {', '.join(levels)}; "
                         f"a new level goes into spec.levels first"))
    return diags


def parse(source: SourceFile) -> tuple[Program, list[Diagnostic]]:
    """One YAML file (any number of documents) → its declarations and diagnostics."""
    reader = Reader(source.path, source.text)
    reader.read()
    diags = reader.diags
    reader_spans = {d.span for d in diags}
    lower = _Lower(source.path, source.text)
    decls: dict[str, list[Any]] = {"Tenant": [], "Dataset": [], "Intent": [], "Topology": []}
    documents = 0
    for root, at in reader.docs:
        if root is None:
            continue                                   # an empty document (`---` at the end)
        documents += 1
        if not isinstance(root, YMap):
            # never the scalar itself: a file that is not YAML at all (a token, a key)
            # parses as one scalar, and this message goes into CI annotations and logs
            what = "a list" if isinstance(root, list) else f"a scalar of {len(str(root))} characters"
            diags.append(error("E0206", f"a YAML document must be a mapping (apiVersion, kind, metadata, spec), "
                                        f"got {what}", to_span(source.path, at)))
            continue
        kind = _header(root, source.path, diags)
        if kind is None:
            continue
        found = schema_diagnostics(root, kind, source.path)
        # a value the reader already complained about (a bad `!!int`) needs no second message
        diags.extend(d for d in found if d.span not in reader_spans)
        if kind == "Topology":                          # a key the schema refused already: no second word
            diags.extend(d for d in _domain_levels(root, source.path) if d.span not in {f.span for f in found})
        meta = root.get("metadata")
        name = meta.get("name") if isinstance(meta, YMap) else None
        if isinstance(name, str) and isinstance(meta, YMap):
            build: Callable[[YMap, str, Span], Any] = getattr(lower, kind.lower())
            decls[kind].append(build(root, name, to_span(source.path, meta.pos["name"][1])))
    if documents == 0 and not diags:
        diags.append(error("E0004", "file declares nothing", Span(source.path, 1, 1, 1, 2),
                           hint="a YAML file needs at least one document with apiVersion and kind"))
    program = Program(tuple(decls["Tenant"]), tuple(decls["Dataset"]), tuple(decls["Intent"]),
                      tuple(decls["Topology"]))
    return program, diags
