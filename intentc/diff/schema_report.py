"""`intentc schema-diff` as a library call: two schema directories in, a report out.

Everything here takes plain data (file path -> bytes / text), so the CLI
reads the revisions through `intentc.vcs.gitrepo` and tests can call it directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

import yaml

from intentc.diagnostics import Diagnostic, Span, error
from intentc.diff.schema_diff import CheckKind, SchemaFinding
from intentc.diff.schema_impact import (
    Affected,
    YamlLoader,
    affected_documents,
    load_documents,
    node_marks,
)
from intentc.diff.schema_limits import MAX_DEPTH, hostile
from intentc.diff.schema_refs import Json, SchemaSet
from intentc.diff.schema_rules import Level
from intentc.diff.schema_verdict import STILL_ACCEPTED, compare_schemas
from intentc.frontend.sources import decode


# Rules whose affected documents are the ones that set / lack the property the change is about.
DOCUMENT_RULES = frozenset({"required-property-added", "property-became-required", "property-added",
                            "property-removed", "deprecated-property-removed", "schema-removed"})


@dataclass(frozen=True)
class Entry:
    finding: SchemaFinding
    line: int                        # position of the changed node in `finding.schema` (its side)
    column: int
    affected: tuple[Affected, ...]
    acknowledged: bool = False

    @property
    def documents(self) -> int:
        return len({(a.file, a.kind, a.name) for a in self.affected})

    @property
    def breaking_documents(self) -> tuple[Affected, ...]:
        """Affected documents of the base that this change makes invalid.  A finding
        proved compatible (or one that only loosens) cannot be what broke them."""
        f = self.finding
        if f.severity is Level.INFO or f.reason == STILL_ACCEPTED:
            return ()
        if f.check.kind is not CheckKind.INVALID and f.rule.name not in DOCUMENT_RULES:
            return ()
        return tuple(a for a in self.affected if a.breaks)

    @property
    def level(self) -> Level:
        """The verdict: a finding that makes a real document of the base invalid is ERR,
        whatever its rule's default severity."""
        return Level.ERR if self.breaking_documents else self.finding.severity


@dataclass(frozen=True)
class SchemaReport:
    base: str
    head: str
    entries: tuple[Entry, ...]
    documents_checked: int
    diagnostics: tuple[Diagnostic, ...] = ()

    def counts(self) -> dict[str, int]:
        return {lvl.value: sum(e.level is lvl for e in self.entries) for lvl in reversed(Level)}

    def failing(self, threshold: Level) -> list[Entry]:
        return [e for e in self.entries if e.level.rank >= threshold.rank and not e.acknowledged]


_POSITIONS_UP_TO = 256 * 1024      # characters of schema text a refusal is located in


def parse_schemas(files: Mapping[str, bytes]) -> tuple[dict[str, Json], dict[str, str], list[Diagnostic]]:
    docs: dict[str, Json] = {}
    texts: dict[str, str] = {}
    diags: list[Diagnostic] = []
    for path in sorted(files):
        text, read_diags = decode(path, files[path])
        diags.extend(read_diags)
        if text is None:
            continue
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            diags.append(error("E0801", f"schema is not valid JSON: {exc.msg}",
                               Span.point(path, exc.lineno, exc.colno)))
            continue
        except RecursionError:      # nested past the interpreter's stack: past MAX_DEPTH too
            diags.append(error("E0802", f"schema nested more than {MAX_DEPTH} levels deep", Span.point(path, 1, 1)))
            continue
        refused = hostile(doc)
        if refused is not None:
            pointer, message = refused
            # marks for every node cost seconds on a megabyte of JSON: a large file is
            # pointed at by its JSON Pointer alone
            line, col = _position(pointer_positions(text), pointer) if len(text) <= _POSITIONS_UP_TO else (1, 1)
            diags.append(error("E0802", f"{message} (at {pointer or '/'})", Span.point(path, line, col),
                               hint="schema-diff compares nothing while a schema is refused (docs/diagnostics.md, "
                                    "Input limits)"))
            continue
        docs[path] = doc
        texts[path] = text
    return docs, texts, diags


def pointer_positions(text: str) -> dict[str, tuple[int, int]]:
    """JSON Pointer -> (line, column) of every node of a JSON document.
    JSON is YAML, and libyaml's composer keeps marks for every node."""
    try:
        node = yaml.compose(text, Loader=YamlLoader)
    except yaml.YAMLError:
        return {}
    marks: dict[tuple[str | int, ...], tuple[int, int]] = {}
    if node is not None:
        node_marks(node, (), marks)
    return {"".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path): pos
            for path, pos in marks.items()}


def _position(positions: Mapping[str, tuple[int, int]], pointer: str) -> tuple[int, int]:
    """The node itself, else its nearest existing ancestor (a keyword that was removed)."""
    parts = pointer.split("/")
    for n in range(len(parts), 0, -1):
        hit = positions.get("/".join(parts[:n]))
        if hit:
            return hit
    return (1, 1)


def schema_diff(base_files: Mapping[str, bytes], head_files: Mapping[str, bytes],
                base_documents: Mapping[str, bytes], base_label: str = "base", head_label: str = "head",
                acknowledged: frozenset[str] = frozenset(), sample: bool = True) -> SchemaReport:
    """Classify every change between two revisions of the schemas, and say
    which of the base revision's documents (YAML and DSL) each change affects."""
    base_docs, base_texts, d1 = parse_schemas(base_files)
    head_docs, head_texts, d2 = parse_schemas(head_files)
    if any(d.code == "E0802" for d in d1 + d2):
        # a refused schema is left out of the comparison, and a comparison without it would
        # call its changes compatible: nothing is compared (the CLI exits 2 on the diagnostic)
        return SchemaReport(base_label, head_label, (), 0, tuple(d1 + d2))
    findings = compare_schemas(base_docs, head_docs, sample)
    texts: dict[str, str] = {}
    for path, data in sorted(base_documents.items()):     # YAML and DSL (.intent) files
        text, _ = decode(path, data)
        if text is not None:
            texts[path] = text
    documents = load_documents(texts)
    affected = affected_documents(findings, SchemaSet.of(base_docs), SchemaSet.of(head_docs), documents)
    positions = {("base", p): pointer_positions(t) for p, t in base_texts.items()}
    positions.update({("head", p): pointer_positions(t) for p, t in head_texts.items()})
    entries = []
    for f in findings:
        line, col = _position(positions.get((f.side, f.schema), {}), f.pointer)
        entries.append(Entry(f, line, col, affected.get(f.fingerprint, ()), f.fingerprint in acknowledged))
    entries.sort(key=lambda e: -e.level.rank)           # stable: the catalogue order within a severity
    return SchemaReport(base_label, head_label, tuple(entries), len(documents), tuple(d1 + d2))


def parse_acknowledgements(text: str) -> frozenset[str]:
    """One fingerprint per line; `#` starts a comment (say who acknowledged and why)."""
    out = set()
    for line in text.splitlines():
        token = line.split("#", 1)[0].strip()
        if token:
            out.add(token.split()[0])
    return frozenset(out)
