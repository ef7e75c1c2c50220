"""IR → YAML documents, for `intentc convert --to yaml`.

Written with ruamel.yaml's round-trip dumper so the output looks like a
person wrote it: block style, keys in the order of the documented shapes
(apiVersion, kind, metadata, spec; trigger before action ...), absent
fields left out, and the yaml-language-server modeline on top so editors
validate the file against the bundled schema right away.

The reader resolves scalars the way Kubernetes does (YAML 1.1), while
ruamel writes YAML 1.2; a string that YAML 1.1 would read as something else
(``on``, ``yes``, ``1_000``, ``16``) is therefore quoted explicitly, which is
what makes ``parse(dump(program)) == program`` hold.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import SingleQuotedScalarString
from yaml.resolver import Resolver

from intentc.frontend.schema import API_VERSION
from intentc.ir import (
    Action,
    Batch,
    ClusterSelector,
    Constraints,
    Context,
    Dataset,
    Intent,
    ModelSettings,
    Program,
    Tenant,
    Topology,
    TopologyNode,
    Trigger,
)

_IMPLICIT = Resolver.yaml_implicit_resolvers
_STR_TAG = "tag:yaml.org,2002:str"


def _text(value: str) -> str:
    """A string that YAML 1.1 would read as a string."""
    for tag, regexp in _IMPLICIT.get(value[:1], ()):
        if tag != _STR_TAG and regexp.match(value):
            return SingleQuotedScalarString(value)
    return value


def _map(pairs: Iterable[tuple[str, Any]]) -> CommentedMap:
    """A mapping of the pairs whose value is present, in the given order."""
    out = CommentedMap()
    for key, value in pairs:
        if value is None or value == () or (isinstance(value, CommentedMap) and not value and key != "settings"):
            continue
        if isinstance(value, str):
            value = _text(value)
        elif isinstance(value, tuple):
            value = CommentedSeq(_text(v) if isinstance(v, str) else v for v in value)
        out[key] = value
    return out


def _document(kind: str, name: str, spec: CommentedMap | None) -> CommentedMap:
    doc = _map([("apiVersion", API_VERSION), ("kind", kind), ("metadata", _map([("name", name)]))])
    if spec:
        doc["spec"] = spec
    return doc


def _tenant(t: Tenant) -> CommentedMap:
    quota = _map([("gpus", t.quota_gpus), ("cpu", t.quota_cpu), ("memory", t.quota_memory)])
    return _document("Tenant", t.name, _map([("tier", t.tier), ("weight", t.weight), ("quota", quota),
                                             ("group", t.group), ("drift", t.drift),
                                             ("max_sla", t.max_sla)]))


def _dataset(d: Dataset) -> CommentedMap:
    return _document("Dataset", d.name, _map([("uri", d.uri)]))


def _trigger(t: Trigger) -> Any:
    if t.kind == "after":
        return CommentedMap([("after", CommentedSeq(_text(r.name) for r in t.after))])
    if t.kind == "schedule":
        return _map([("schedule", t.schedule if t.schedule is not None else "")])
    return _text(t.kind)


def _batch(b: Batch | None) -> Any:
    if b is None:
        return None
    if b.auto:
        return _map([("auto", True), ("max", b.max)]) if b.max is not None else "auto"
    return b.size


def _settings(s: ModelSettings | None) -> CommentedMap | None:
    if s is None:
        return None
    return _map([("batch", _batch(s.batch)), ("seq_len", s.seq_len), ("kv_cache", s.kv_cache),
                 ("precision", s.precision), ("model_memory", s.model_memory), ("parameters", s.parameters),
                 ("kv_reuse", s.kv_reuse), ("throughput_mode", s.throughput_mode)])


def _action(a: Action) -> CommentedMap:
    return _map([("kind", a.kind), ("image", a.image), ("model", a.model), ("command", a.command),
                 ("replicas", a.replicas), ("port", a.port), ("settings", _settings(a.settings))])


def _context(c: Context) -> CommentedMap:
    return _map([("tenant", c.tenant.name), ("tags", c.tags), ("drift", c.drift)])


def _constraints(c: Constraints) -> CommentedMap:
    gpus = None
    if c.gpus is not None:
        g = c.gpus
        gpus = _map([("count", g.count), ("product", g.product), ("memory", g.memory),
                     ("within", g.within), ("prefer", g.prefer)])
    return _map([("cpu", c.cpu), ("memory", c.memory), ("gpus", gpus), ("sla", c.sla),
                 ("tolerance", c.tolerance), ("duration", c.duration), ("slack", c.slack),
                 ("retries", c.retries), ("fallback", c.fallback)])


def _intent(i: Intent) -> CommentedMap:
    return _document("Intent", i.name, _map([
        ("trigger", _trigger(i.trigger)), ("action", _action(i.action)), ("context", _context(i.context)),
        ("constraints", _constraints(i.constraints)),
        ("consumes", tuple(r.name for r in i.consumes)), ("produces", tuple(r.name for r in i.produces)),
        ("clusters", _clusters(i.clusters)),
    ]))


def _clusters(c: ClusterSelector | None) -> CommentedMap | CommentedSeq | None:
    """Written even when empty: `clusters: []` (selects nothing) is not the absent field."""
    if c is None:
        return None
    if c.by_labels:
        labels = CommentedMap((k, _text(v)) for k, v in c.match_labels)
        out = CommentedMap()
        out["matchLabels"] = labels
        return out
    return CommentedSeq(_text(n) for n in c.names)


def _node(n: TopologyNode) -> CommentedMap:
    gpu = None
    if n.gpu_count or n.gpu_product is not None or n.gpu_memory is not None:
        gpu = _map([("product", n.gpu_product), ("count", n.gpu_count), ("memory", n.gpu_memory)])
    return _map([("name", n.name), ("gpu", gpu), ("cpu", n.cpu), ("memory", n.memory),
                 ("domains", _map(n.domains)), ("labels", _map(n.labels)),
                 ("nvidiaSmiTopo", n.nvidia_smi_topo),
                 ("taints", tuple(_map([("key", k), ("value", v or None), ("effect", e)]) for k, v, e in n.taints))])


def _topology(t: Topology) -> CommentedMap:
    spec = _map([("levels", t.levels)])
    if t.nodes:
        spec["nodes"] = CommentedSeq(_node(n) for n in t.nodes)
    return _document("Topology", t.name, spec)


def documents(program: Program) -> list[tuple[str, CommentedMap]]:
    """(kind, document) for every declaration: tenants, datasets, intents, topologies."""
    return ([("Tenant", _tenant(t)) for t in program.tenants]
            + [("Dataset", _dataset(d)) for d in program.datasets]
            + [("Intent", _intent(i)) for i in program.intents]
            + [("Topology", _topology(t)) for t in program.topologies])


def _represent_float(representer: Any, value: float) -> Any:
    """`repr`, with the mantissa dot YAML 1.1 needs (``5e-324`` would read as a string)."""
    text = repr(value).lower()
    if math.isnan(value):
        text = ".nan"
    elif value in (float("inf"), float("-inf")):
        text = ".inf" if value > 0 else "-.inf"
    elif "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return representer.represent_scalar("tag:yaml.org,2002:float", text)


class _Representer(RoundTripRepresenter):
    """Our float rule on a subclass, so other ruamel users in the process are unaffected."""


_Representer.add_representer(float, _represent_float)


def _dumper() -> YAML:
    y = YAML(typ="rt")
    y.Representer = _Representer
    y.default_flow_style = False
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096                      # never fold long strings (image references, commands)
    return y


def dump_program(program: Program, schema_base: str | None = None) -> str:
    """One multi-document YAML text for the whole program.

    `schema_base` is the directory (a path relative to the output file, or a
    URL) holding the ``*.schema.json`` files; when given, the text starts with
    the yaml-language-server modeline so editors validate it.  Without it no
    modeline is written: a guessed location would be a broken link.
    """
    return dump_documents(documents(program), schema_base)


def dump_documents(docs: list[tuple[str, CommentedMap]], schema_base: str | None = None,
                   header: Sequence[str] = (), footer: Sequence[str] = ()) -> str:
    """`dump_program` for documents built (and perhaps commented) already;
    `header` and `footer` hold comment lines for the top and the end of the file."""
    top = "".join(f"{line}\n" for line in header) + ("\n" if header else "")
    if not docs:
        return ""
    y = _dumper()
    parts = []
    for _, doc in docs:
        buf = io.StringIO()
        y.dump(doc, buf)
        parts.append(buf.getvalue())
    body = top + "---\n".join(parts) + "".join(f"{line}\n" for line in footer)
    if schema_base is None:
        return body
    base = schema_base.rstrip("/")
    return f"# yaml-language-server: $schema={base}/{docs[0][0].lower()}.schema.json\n" + body
