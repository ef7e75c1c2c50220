"""`clusters/*.yaml`: the Cluster documents of a fleet, checked, with positions.

Read like `policies/*.yaml`: the schema (schemas/cluster.schema.json) first,
with the same positioned diagnostics as intents, then what a schema cannot
say — a name given twice (E1120), both or neither of context and kubeconfig
(E1121), a topology or kubeconfig file that is not there (E1122, E1126).
Paths in a Cluster are relative to the file's directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from intentc.diagnostics import Diagnostic, Related, Span, error
from intentc.frontend.schema import API_VERSION, CLUSTER_KIND, YMap, schema_diagnostics, to_span
from intentc.frontend.sources import read_source
from intentc.frontend.yaml_read import Reader
from intentc.ir import FieldSpans
from intentc.render.targets import DEFAULT_TARGET


@dataclass(frozen=True)
class Cluster:
    name: str
    topology: str                       # path, as usable from the working directory
    target: str = DEFAULT_TARGET
    context: str | None = None
    kubeconfig: str | None = None       # path, as usable from the working directory
    labels: tuple[tuple[str, str], ...] = ()
    span: Span = field(default=Span("", 1, 1, 1, 1), compare=False)
    spans: FieldSpans = field(default=FieldSpans(), compare=False)

    @property
    def label_map(self) -> Mapping[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class Fleet:
    clusters: tuple[Cluster, ...]                 # sorted by name
    diagnostics: tuple[Diagnostic, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    directory: str = ""

    def get(self, name: str) -> Cluster | None:
        return next((c for c in self.clusters if c.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.clusters)


def _cluster(root: YMap, file: str, diags: list[Diagnostic]) -> Cluster | None:
    name = root["metadata"]["name"]
    spec = root["spec"]
    here = Path(file).parent

    def at(key: str) -> Span:
        return to_span(file, spec.pos[key][1])

    name_span = to_span(file, root["metadata"].pos["name"][1])
    has = [k for k in ("context", "kubeconfig") if k in spec]
    if len(has) != 1:
        where = at(has[1]) if len(has) == 2 else name_span
        diags.append(error("E1121", f"cluster {name!r} " + ("gives both context and kubeconfig" if has
                                                              else "gives neither context nor kubeconfig"),
                           where, hint="say how to reach it with exactly one: `context: NAME` (a context of "
                                       "$KUBECONFIG) or `kubeconfig: FILE`"))
        return None
    def existing(key: str, code: str) -> str | None:
        """The file `spec[key]` names, relative to this file; None (reported) when it is not there."""
        path = (here / spec[key]).as_posix()
        if Path(path).is_file():
            return path
        diags.append(error(code, f"cluster {name!r}: {key} file {spec[key]!r} not found (looked for {path})",
                           at(key), hint="paths in a Cluster are relative to the file's directory"))
        return None

    topology = existing("topology", "E1122")
    kubeconfig = existing("kubeconfig", "E1126") if "kubeconfig" in spec else None
    if topology is None or ("kubeconfig" in spec and kubeconfig is None):
        return None
    spans = {k: at(k) for k in ("topology", "target", "context", "kubeconfig", "labels") if k in spec}
    return Cluster(str(name), topology, str(spec.get("target", DEFAULT_TARGET)), spec.get("context"), kubeconfig,
                   tuple(sorted((str(k), str(v)) for k, v in (spec.get("labels") or {}).items())),
                   name_span, FieldSpans.of({"name": name_span, **spans}))


def load_fleet(directory: str | Path) -> Fleet:
    """Every Cluster in `directory`/*.yaml (and *.yml), in name order, with diagnostics."""
    where = Path(directory)
    diags: list[Diagnostic] = []
    texts: dict[str, str] = {}
    found: list[Cluster] = []
    if not where.is_dir():
        diags.append(error("E1125", f"{where.as_posix()} is not a directory of Cluster files",
                           Span(where.as_posix(), 1, 1, 1, 1), hint="pass --clusters DIR holding clusters/*.yaml"))
        return Fleet((), tuple(diags), texts, where.as_posix())
    for path in sorted(list(where.glob("*.yaml")) + list(where.glob("*.yml"))):
        source, read_diags = read_source(path)
        diags.extend(read_diags)
        if source is None:
            continue
        texts[source.path] = source.text
        reader = Reader(source.path, source.text)
        reader.read()
        diags.extend(reader.diags)
        for root, _ in reader.docs:
            if not isinstance(root, YMap) or root.get("kind") != CLUSTER_KIND or root.get("apiVersion") != API_VERSION:
                continue          # intents, topologies: the compiler's
            schema = schema_diagnostics(root, CLUSTER_KIND, source.path, skip_top=())
            diags.extend(schema)
            if not schema:
                cluster = _cluster(root, source.path, diags)
                if cluster is not None:
                    found.append(cluster)
    by_name: dict[str, Cluster] = {}
    for c in found:
        first = by_name.get(c.name)
        if first is not None:
            diags.append(error("E1120", f"cluster {c.name!r} is declared twice", c.span,
                               related=(Related("first declared here", first.span),),
                               hint="cluster names are the output directories and daemon names: keep them unique"))
            continue
        by_name[c.name] = c
    if not found and not any(d.is_error for d in diags):
        diags.append(error("E1125", f"no Cluster documents in {where.as_posix()}",
                           Span(where.as_posix(), 1, 1, 1, 1),
                           hint=f"add files with `apiVersion: {API_VERSION}` and `kind: {CLUSTER_KIND}`"))
    return Fleet(tuple(sorted(by_name.values(), key=lambda c: c.name)), tuple(diags), texts, where.as_posix())
