"""Views of a `SchemaReport`: text for terminals, JSON for tools, markdown
for a pull-request comment, GitHub workflow commands for inline annotations."""

from __future__ import annotations

import json

from intentc.diagnostics import Span
from intentc.diff.schema_refs import canonical_json
from intentc.diff.schema_report import Entry, SchemaReport
from intentc.diff.schema_rules import Level

SHOWN_DOCUMENTS = 10     # per finding, in text and markdown; JSON lists all of them


def _value(v: object) -> str:
    return "(none)" if v is None else canonical_json(v)


def _where(e: Entry) -> str:
    f = e.finding
    return f"{f.schema}:{e.line}:{e.column}" + (" (base)" if f.side == "base" else "")


def _affects(e: Entry) -> str:
    verb = "breaks" if e.finding.rule.level is not Level.INFO else "affects"
    if e.finding.rule.name.startswith("default-"):
        verb = "changes the meaning of"
    n = e.documents
    return f"{verb} {n} document{'s' if n != 1 else ''} of the base revision"


def format_text(report: SchemaReport, threshold: Level) -> str:
    out: list[str] = [f"schema-diff {report.base}..{report.head}"]
    for e in report.entries:
        f = e.finding
        ack = " (acknowledged)" if e.acknowledged else ""
        out.append(f"{_where(e)}: {f.rule.level.value} {f.rule.id} {f.rule.name}: {f.message}{ack}")
        out.append(f"  fingerprint {f.fingerprint}; {_affects(e)}")
        for a in e.affected[:SHOWN_DOCUMENTS]:
            out.append(f"    {a.file}:{a.line}:{a.column}: {a.kind} {a.name} ({a.at})")
        if len(e.affected) > SHOWN_DOCUMENTS:
            out.append(f"    ... and {len(e.affected) - SHOWN_DOCUMENTS} more")
    counts = report.counts()
    failing = len(report.failing(threshold))
    out.append(f"{counts['ERR']} ERR, {counts['WARN']} WARN, {counts['INFO']} INFO; "
               f"{report.documents_checked} YAML documents checked; "
               f"{failing} finding(s) at or above {threshold.value}")
    return "\n".join(out) + "\n"


def to_json_obj(report: SchemaReport, threshold: Level) -> dict[str, object]:
    return {
        "base": report.base,
        "head": report.head,
        "fail_on": threshold.value,
        "failing": len(report.failing(threshold)),
        "counts": report.counts(),
        "documents_checked": report.documents_checked,
        "findings": [{
            "rule": e.finding.rule.id,
            "name": e.finding.rule.name,
            "severity": e.finding.rule.level.value,
            "schema": e.finding.schema,
            "side": e.finding.side,
            "pointer": e.finding.pointer,
            "line": e.line,
            "column": e.column,
            "old": e.finding.old,
            "new": e.finding.new,
            "message": e.finding.message,
            "fingerprint": e.finding.fingerprint,
            "acknowledged": e.acknowledged,
            "documents": e.documents,
            "affected": [{"file": a.file, "line": a.line, "column": a.column, "kind": a.kind,
                          "name": a.name, "at": a.at} for a in e.affected],
        } for e in report.entries],
    }


def format_json(report: SchemaReport, threshold: Level) -> str:
    return json.dumps(to_json_obj(report, threshold), indent=2, sort_keys=True) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def format_markdown(report: SchemaReport, threshold: Level) -> str:
    counts = report.counts()
    failing = report.failing(threshold)
    icon = "\u274c" if failing else "\u2705"
    headline = (f"`{report.base}` \u2192 `{report.head}`: **{counts['ERR']} ERR**, {counts['WARN']} WARN, "
                f"{counts['INFO']} INFO ({len(failing)} at or above {threshold.value}, "
                f"{report.documents_checked} YAML documents of the base checked)")
    out = ["<!-- intentc:schema-diff -->", f"### {icon} intentc schema-diff", headline, ""]
    if not report.entries:
        out.append("No schema changes.")
        return "\n".join(out) + "\n"
    out += ["| severity | rule | where | change | documents | fingerprint |", "|---|---|---|---|---|---|"]
    for e in report.entries:
        f = e.finding
        sev = f.rule.level.value + (" (ack)" if e.acknowledged else "")
        out.append(f"| {sev} | `{f.rule.id}` {f.rule.name} | `{_md(_where(e))}` | {_md(f.message)} | "
                   f"{e.documents} | `{f.fingerprint}` |")
    details = [e for e in report.entries if e.affected]
    if details:
        out += ["", "<details><summary>Affected documents</summary>", ""]
        for e in details:
            f = e.finding
            out.append(f"**{f.rule.id} {f.rule.name}** `{_md(f.pointer or '/')}` "
                       f"({_value(f.old)} \u2192 {_value(f.new)}): {_affects(e)}")
            out.append("")
            for a in e.affected[:SHOWN_DOCUMENTS]:
                out.append(f"- `{a.file}:{a.line}:{a.column}` {a.kind} `{a.name}` at `{a.at}`")
            if len(e.affected) > SHOWN_DOCUMENTS:
                out.append(f"- \u2026 and {len(e.affected) - SHOWN_DOCUMENTS} more")
            out.append("")
        out.append("</details>")
    out += ["", ("To acknowledge a finding, add its fingerprint to the acknowledgement file "
                 "(`--ack-file`); it then no longer fails the check, on this commit or later ones.")]
    return "\n".join(out) + "\n"


def format_github(report: SchemaReport, threshold: Level) -> str:
    """Workflow commands: one annotation per finding on the schema line; only
    head-side positions can be annotated on the pull request's files."""
    from intentc import annotations as gh

    kinds = {Level.ERR: gh.Level.ERROR, Level.WARN: gh.Level.WARNING, Level.INFO: gh.Level.NOTICE}
    out = []
    for e in report.entries:
        f = e.finding
        kind = gh.Level.NOTICE if e.acknowledged else kinds[f.rule.level]
        msg = f"{f.message}; {_affects(e)} (fingerprint {f.fingerprint})"
        for a in e.affected[:SHOWN_DOCUMENTS]:
            msg += f"\n{a.file}:{a.line}:{a.column} {a.kind} {a.name} ({a.at})"
        at = Span.point(f.schema, e.line, e.column) if f.side == "head" else None
        out.append(gh.command(kind, msg, at, f"{f.rule.id} {f.rule.name}", end=False))
    return gh.lines(out)


def format_sarif(report: SchemaReport, threshold: Level) -> str:
    """SARIF 2.1.0 for code-scanning views: one rule per rule id that fired, one
    result per finding, on the schema line (head side; a removal points at the
    base file); the fingerprint is the result's partial fingerprint, and an
    acknowledged finding carries an external suppression."""
    from intentc import __version__
    from intentc.diagnostics import sarif_log

    levels = {Level.ERR: "error", Level.WARN: "warning", Level.INFO: "note"}
    fired = sorted({e.finding.rule.id: e.finding.rule for e in report.entries}.items())
    index = {rule_id: n for n, (rule_id, _) in enumerate(fired)}
    rules = [{"id": rule_id, "name": rule.name, "shortDescription": {"text": rule.summary},
              "defaultConfiguration": {"level": levels[rule.level]}} for rule_id, rule in fired]
    results = []
    for e in report.entries:
        f = e.finding
        result: dict[str, object] = {
            "ruleId": f.rule.id, "ruleIndex": index[f.rule.id], "level": levels[f.rule.level],
            "message": {"text": f"{f.message}; {_affects(e)}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.schema},
                                                "region": {"startLine": e.line, "startColumn": e.column}},
                           "logicalLocations": [{"fullyQualifiedName": f.pointer or "/"}]}],
            "partialFingerprints": {"intentcSchemaFinding/v1": f.fingerprint},
            "properties": {"side": f.side, "documents": e.documents,
                           "failing": not e.acknowledged and f.rule.level.rank >= threshold.rank},
        }
        if e.acknowledged:
            result["suppressions"] = [{"kind": "external", "justification": "acknowledged (--ack / --ack-file)"}]
        results.append(result)
    return sarif_log(rules, results, __version__)


FORMATS = {"text": format_text, "json": format_json, "markdown": format_markdown, "github": format_github,
           "sarif": format_sarif}


def render(report: SchemaReport, fmt: str, threshold: Level) -> str:
    return FORMATS[fmt](report, threshold)
