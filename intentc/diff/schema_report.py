"""`intentc schema-diff` as a library call: two schema directories in, a report out.

Everything here takes plain data (file path -> bytes / text), so the CLI
reads the revisions through `intentc.vcs.gitrepo` and tests can call it directly.

A pull request can stop intents from passing without touching a schema: by
adding or tightening an organisation rule (CEL, `policies/*.yaml` `rules:`).
The report therefore also lists the rules that differ (`diff.cel_diff`, the
same comparison `intentc diff` makes), each with the base documents it newly
fails, so one gate (`--fail-on`, `--ack`) covers both kinds of contract.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Mapping

import yaml

from intentc.diagnostics import Diagnostic, Span, error
from intentc.diff.cel_diff import CelRuleChange, diff_cel_rules
from intentc.diff.rules import RuleStatus
from intentc.diff.schema_diff import CheckKind, SchemaFinding, fingerprint
from intentc.diff.schema_impact import (
    Affected,
    YamlLoader,
    affected_documents,
    load_documents,
    node_marks,
)
from intentc.diff.schema_limits import MAX_DEPTH, hostile
from intentc.diff.schema_refs import Json, SchemaSet
from intentc.diff.schema_rules import Level, Rule
from intentc.diff.schema_verdict import STILL_ACCEPTED, compare_schemas
from intentc.frontend import merge
from intentc.frontend.sources import SourceFile, decode
from intentc.ir import Program
from intentc.pipeline.loading import parse_all
from intentc.policy import BUILTIN, Policies


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


# Organisation-rule changes get ids of their own, outside the schema catalogue
# (`schema_rules`, SDnnn): the catalogue classifies JSON Schema keywords, these
# are CEL rules.  Stable like the catalogue's ids (annotations and SARIF use them).
# The default level is INFO: what a rule change does is decided per report, by
# whether it newly fails a document of the base (`RuleEntry.level`).
RULE_CHANGES: dict[RuleStatus, Rule] = {
    RuleStatus.ADDED: Rule("SR001", "organisation-rule-added", Level.INFO,
                           "an organisation rule (policies/ `rules:`) was added"),
    RuleStatus.CHANGED: Rule("SR002", "organisation-rule-changed", Level.INFO,
                             "an organisation rule's expression, message, severity or match changed"),
    RuleStatus.REMOVED: Rule("SR003", "organisation-rule-removed", Level.INFO,
                             "an organisation rule was removed"),
}


@dataclass(frozen=True)
class RuleEntry:
    """An organisation rule that differs between the revisions, with the base's intents it
    newly fails (`CelRuleChange.newly_fails`, evaluated on the base revision's documents)."""
    change: CelRuleChange
    span: Span | None                # where the head writes it; the base, for a removed rule
    acknowledged: bool = False

    @property
    def rule(self) -> Rule:
        return RULE_CHANGES[self.change.status]

    @property
    def fingerprint(self) -> str:
        """Like a schema finding's: the rule id, the rule's name and both descriptions, no
        positions, so moving a rule to another file or line keeps an acknowledgement."""
        c = self.change
        return fingerprint(self.rule.id, "policies", c.name, c.old, c.new)

    @property
    def level(self) -> Level:
        """ERR when the change makes intents of the base fail that passed (a rule that
        only warns, W1030, included: the pull request changes what the intents' authors
        see); INFO otherwise, removals always (a removed rule fails nobody new)."""
        return Level.ERR if self.change.newly_fails else Level.INFO


@dataclass(frozen=True)
class SchemaReport:
    base: str
    head: str
    entries: tuple[Entry, ...]
    documents_checked: int
    diagnostics: tuple[Diagnostic, ...] = ()
    rules: tuple[RuleEntry, ...] = ()      # organisation rules that differ, after the schema findings

    def _all(self) -> list[Entry | RuleEntry]:
        return [*self.entries, *self.rules]

    def counts(self) -> dict[str, int]:
        return {lvl.value: sum(e.level is lvl for e in self._all()) for lvl in reversed(Level)}

    def failing(self, threshold: Level) -> list[Entry | RuleEntry]:
        return [e for e in self._all() if e.level.rank >= threshold.rank and not e.acknowledged]


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


def base_program(texts: Mapping[str, str]) -> Program:
    """The base revision's documents as a program, what the organisation rules judge.
    Parsed as `intentc diff` parses a side (`pipeline.loading.parse_all`, then `merge`);
    a document that does not parse (or is not an intent, tenant or dataset) adds
    nothing, as on the base side of `diff`: its errors are not the pull request's."""
    sources = [SourceFile(path, text) for path, text in sorted(texts.items())]
    results = sorted((position, result) for position, result, _ in parse_all(sources, None))
    program, _ = merge(result for _, result in results)
    return program


def rule_entries(base: Policies, head: Policies, program: Program,
                 acknowledged: frozenset[str] = frozenset()) -> tuple[RuleEntry, ...]:
    """The organisation rules that differ, each judged on the base's documents on both
    sides: the documents are the ones schema-diff checks, and the question is which of
    them the head's rule newly fails.  No topology, so no plan: a rule that reads the
    plan is evaluated as `intentc diff` evaluates it without `--topology`."""
    written = {r.name: r.span for r in base.cel}
    out = []
    for change in diff_cel_rules(base, head, program, program):
        entry = RuleEntry(change, change.span or written.get(change.name))
        out.append(dataclasses.replace(entry, acknowledged=entry.fingerprint in acknowledged))
    out.sort(key=lambda e: -e.level.rank)         # stable: by name within a severity
    return tuple(out)


def schema_diff(base_files: Mapping[str, bytes], head_files: Mapping[str, bytes],
                base_documents: Mapping[str, bytes], base_label: str = "base", head_label: str = "head",
                acknowledged: frozenset[str] = frozenset(), sample: bool = True,
                base_policies: Policies = BUILTIN, head_policies: Policies = BUILTIN) -> SchemaReport:
    """Classify every change between two revisions of the schemas, and say
    which of the base revision's documents (YAML and DSL) each change affects;
    likewise for the organisation rules of the two revisions' policies."""
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
    rules: tuple[RuleEntry, ...] = ()
    if base_policies.cel or head_policies.cel:          # no rules: nothing to parse the documents for
        rules = rule_entries(base_policies, head_policies, base_program(texts), acknowledged)
    return SchemaReport(base_label, head_label, tuple(entries), len(documents), tuple(d1 + d2), rules)


def parse_acknowledgements(text: str) -> frozenset[str]:
    """One fingerprint per line; `#` starts a comment (say who acknowledged and why)."""
    out = set()
    for line in text.splitlines():
        token = line.split("#", 1)[0].strip()
        if token:
            out.add(token.split()[0])
    return frozenset(out)
