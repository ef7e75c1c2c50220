"""Views of a `SchemaReport`: text for terminals, JSON for tools, markdown
for a pull-request comment, GitHub workflow commands for inline annotations.

Every view shows the organisation-rule changes (`RuleEntry`) after the schema
findings, with the same severity words, fingerprints and acknowledgement marks,
so a reviewer reads and acknowledges both the same way."""

from __future__ import annotations

import json

from intentc.diagnostics import Span
from intentc.diff.schema_impact import Affected
from intentc.diff.schema_refs import canonical_json
from intentc.diff.cel_diff import NewlyFailing
from intentc.diff.rules import RuleStatus
from intentc.diff.schema_report import Entry, RuleEntry, SchemaReport
from intentc.diff.schema_rules import Level

SHOWN_DOCUMENTS = 10     # per finding, in text and markdown; JSON lists all of them
SHOWN_EXAMPLE = 200      # characters of a counter-example in text views; JSON has it whole


def _value(v: object) -> str:
    return "(none)" if v is None else canonical_json(v)


def _where(e: Entry) -> str:
    f = e.finding
    return f"{f.schema}:{e.line}:{e.column}" + (" (base)" if f.side == "base" else "")


def _affects(e: Entry) -> str:
    verb = "breaks" if e.level is Level.ERR else "affects"
    if e.finding.rule.name.startswith("default-"):
        verb = "changes the meaning of"
    n = e.documents
    return f"{verb} {n} document{'s' if n != 1 else ''} of the base revision"


def _counter_example(e: Entry) -> str | None:
    """`location = value` of the counter-example, the value cut for text views."""
    f = e.finding
    if not f.example:
        return None
    value = canonical_json(f.example[0])
    if len(value) > SHOWN_EXAMPLE:
        value = value[:SHOWN_EXAMPLE] + "\u2026 (in full in --format json)"
    return f"{'.'.join(f.example_at) or '(document)'} = {value}"


def _example(e: Entry) -> str | None:
    ce = _counter_example(e)
    return f"{ce} is valid in the base schema and invalid in the head" if ce else None


def _verdict(e: Entry) -> str | None:
    """Why the severity differs from the rule's default, when it does; or that it is a "maybe"."""
    f = e.finding
    if e.level is f.rule.level:
        return f.reason if f.reason.startswith("maybe") else None     # say "maybe" when it is one
    if e.breaking_documents and f.severity is not Level.ERR:
        return f"{e.level.value}, not the rule's default {f.rule.level.value}: it makes documents of the base invalid"
    return f"{e.level.value}, not the rule's default {f.rule.level.value}: {f.reason}"


def _now_invalid(e: Entry, a: Affected) -> bool:
    """Marked on the findings that break the document, not on every finding that touches it."""
    return a.breaks and e.level is Level.ERR


def _doc_line(e: Entry, a: Affected) -> str:
    mark = " - now invalid" if _now_invalid(e, a) else ""
    return f"{a.file}:{a.line}:{a.column}: {a.kind} {a.name} ({a.at}){mark}"


def _rule_where(r: RuleEntry) -> str:
    if r.span is None:
        return "policies"
    return f"{r.span}" + (" (base)" if r.change.status is RuleStatus.REMOVED else "")


def _rule_message(r: RuleEntry) -> str:
    c = r.change
    if c.status is RuleStatus.CHANGED:
        return f"rule {c.name}: {c.old} -> {c.new}"
    return f"rule {c.name} {c.status.value}: {c.new if c.status is RuleStatus.ADDED else c.old}"


def _rule_affects(r: RuleEntry) -> str:
    n = len(r.change.newly_fails)
    return f"newly fails {n} intent{'s' if n != 1 else ''} of the base revision"


def _failing_line(f: NewlyFailing) -> str:
    return f"{f.span}: intent {f.intent} ({f.code})"


def _text_rules(report: SchemaReport) -> list[str]:
    out = []
    for r in report.rules:
        ack = " (acknowledged)" if r.acknowledged else ""
        out.append(f"{_rule_where(r)}: {r.level.value} {r.rule.id} {r.rule.name}: {_rule_message(r)}{ack}")
        out.append(f"  fingerprint {r.fingerprint}; {_rule_affects(r)}")
        out += [f"    {_failing_line(f)}" for f in r.change.newly_fails[:SHOWN_DOCUMENTS]]
        if len(r.change.newly_fails) > SHOWN_DOCUMENTS:
            out.append(f"    ... and {len(r.change.newly_fails) - SHOWN_DOCUMENTS} more")
    return out


def format_text(report: SchemaReport, threshold: Level) -> str:
    out: list[str] = [f"schema-diff {report.base}..{report.head}"]
    for e in report.entries:
        f = e.finding
        ack = " (acknowledged)" if e.acknowledged else ""
        out.append(f"{_where(e)}: {e.level.value} {f.rule.id} {f.rule.name}: {f.message}{ack}")
        out.append(f"  fingerprint {f.fingerprint}; {_affects(e)}")
        verdict, example = _verdict(e), _example(e)
        if verdict:
            out.append(f"  verdict: {verdict}")
        if example:
            out.append(f"  counter-example: {example}")
        for a in e.affected[:SHOWN_DOCUMENTS]:
            out.append(f"    {_doc_line(e, a)}")
        if len(e.affected) > SHOWN_DOCUMENTS:
            out.append(f"    ... and {len(e.affected) - SHOWN_DOCUMENTS} more")
    out += _text_rules(report)
    counts = report.counts()
    failing = len(report.failing(threshold))
    out.append(f"{counts['ERR']} ERR, {counts['WARN']} WARN, {counts['INFO']} INFO; "
               f"{report.documents_checked} documents checked; "
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
            "severity": e.level.value,
            "rule_severity": e.finding.rule.level.value,
            "verdict": e.finding.reason,
            **({"counter_example": e.finding.example[0],
                "counter_example_at": ".".join(e.finding.example_at) or "(document)"} if e.finding.example else {}),
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
                          "name": a.name, "at": a.at, "breaks": a.breaks} for a in e.affected],
        } for e in report.entries],
        "rules": [{
            "rule": r.rule.id,
            "name": r.change.name,
            "status": r.change.status.value,
            "severity": r.level.value,
            "old": r.change.old,
            "new": r.change.new,
            "file": r.span.file if r.span else None,
            "line": r.span.line if r.span else None,
            "column": r.span.column if r.span else None,
            "fingerprint": r.fingerprint,
            "acknowledged": r.acknowledged,
            "newly_fails": [{"intent": f.intent, "code": f.code, "file": f.span.file, "line": f.span.line,
                             "column": f.span.column} for f in r.change.newly_fails],
        } for r in report.rules],
    }


def format_json(report: SchemaReport, threshold: Level) -> str:
    return json.dumps(to_json_obj(report, threshold), indent=2, sort_keys=True) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


_ACK_NOTE = ("To acknowledge a finding, add its fingerprint to the acknowledgement file "
             "(`--ack-file`); it then no longer fails the check, on this commit or later ones.")


def _markdown_rules(report: SchemaReport) -> list[str]:
    """The organisation-rule changes: a table, and the intents each newly fails."""
    if not report.rules:
        return []
    out = ["", "#### Organisation rules", "", "| severity | rule | where | change | newly fails | fingerprint |",
           "|---|---|---|---|---|---|"]
    for r in report.rules:
        sev = r.level.value + (" (ack)" if r.acknowledged else "")
        out.append(f"| {sev} | `{r.rule.id}` {r.rule.name} | `{_md(_rule_where(r))}` | {_md(_rule_message(r))} | "
                   f"{len(r.change.newly_fails)} | `{r.fingerprint}` |")
    for r in report.rules:
        if r.change.newly_fails:
            out += ["", f"**{r.rule.id} rule `{r.change.name}`** {_rule_affects(r)}:", ""]
            out += [f"- `{f.span}` intent `{f.intent}` ({f.code})" for f in r.change.newly_fails[:SHOWN_DOCUMENTS]]
            if len(r.change.newly_fails) > SHOWN_DOCUMENTS:
                out.append(f"- \u2026 and {len(r.change.newly_fails) - SHOWN_DOCUMENTS} more")
    return out


def format_markdown(report: SchemaReport, threshold: Level) -> str:
    counts = report.counts()
    failing = report.failing(threshold)
    icon = "\u274c" if failing else "\u2705"
    headline = (f"`{report.base}` \u2192 `{report.head}`: **{counts['ERR']} ERR**, {counts['WARN']} WARN, "
                f"{counts['INFO']} INFO ({len(failing)} at or above {threshold.value}, "
                f"{report.documents_checked} documents of the base checked)")
    out = ["<!-- intentc:schema-diff -->", f"### {icon} intentc schema-diff", headline, ""]
    if not report.entries and not report.rules:
        out.append("No schema changes.")
        return "\n".join(out) + "\n"
    if not report.entries:
        out.append("No schema changes.")
        return "\n".join(out + _markdown_rules(report) + ["", _ACK_NOTE]) + "\n"
    out += ["| severity | rule | where | change | documents | fingerprint |", "|---|---|---|---|---|---|"]
    for e in report.entries:
        f = e.finding
        sev = e.level.value + (" (ack)" if e.acknowledged else "")
        out.append(f"| {sev} | `{f.rule.id}` {f.rule.name} | `{_md(_where(e))}` | {_md(f.message)} | "
                   f"{e.documents} | `{f.fingerprint}` |")
    details = [e for e in report.entries if e.affected or e.finding.example]
    if details:
        out += ["", "<details><summary>Affected documents and counter-examples</summary>", ""]
        for e in details:
            f = e.finding
            out.append(f"**{f.rule.id} {f.rule.name}** `{_md(f.pointer or '/')}` "
                       f"({_value(f.old)} \u2192 {_value(f.new)}): {_affects(e)}")
            out.append("")
            ce = _counter_example(e)
            if ce:
                out.append(f"- counter-example: `{_md(ce)}` is valid in the base schema and invalid in the head")
            for a in e.affected[:SHOWN_DOCUMENTS]:
                out.append(f"- `{a.file}:{a.line}:{a.column}` {a.kind} `{a.name}` at `{a.at}`"
                           + (" (now invalid)" if _now_invalid(e, a) else ""))
            if len(e.affected) > SHOWN_DOCUMENTS:
                out.append(f"- \u2026 and {len(e.affected) - SHOWN_DOCUMENTS} more")
            out.append("")
        out.append("</details>")
    out += _markdown_rules(report)
    out += ["", _ACK_NOTE]
    return "\n".join(out) + "\n"


def format_github(report: SchemaReport, threshold: Level) -> str:
    """Workflow commands: one annotation per finding on the schema line; only
    head-side positions can be annotated on the pull request's files."""
    from intentc.diagnostics import github as gh

    kinds = {Level.ERR: gh.Level.ERROR, Level.WARN: gh.Level.WARNING, Level.INFO: gh.Level.NOTICE}
    out = []
    for e in report.entries:
        f = e.finding
        kind = gh.Level.NOTICE if e.acknowledged else kinds[e.level]
        msg = f"{f.message}; {_affects(e)} (fingerprint {f.fingerprint})"
        example = _example(e)
        if example:
            msg += f"\ncounter-example: {example}"
        for a in e.affected[:SHOWN_DOCUMENTS]:
            mark = " now invalid" if _now_invalid(e, a) else ""
            msg += f"\n{a.file}:{a.line}:{a.column} {a.kind} {a.name} ({a.at}){mark}"
        at = Span.point(f.schema, e.line, e.column) if f.side == "head" else None
        out.append(gh.command(kind, msg, at, f"{f.rule.id} {f.rule.name}", end=False))
    for r in report.rules:
        kind = gh.Level.NOTICE if r.acknowledged else kinds[r.level]
        msg = f"{_rule_message(r)}; {_rule_affects(r)} (fingerprint {r.fingerprint})"
        for n in r.change.newly_fails[:SHOWN_DOCUMENTS]:
            msg += f"\n{_failing_line(n)}"
        # a removed rule is written in the base only: nothing on the pull request's files to annotate
        where = r.span if r.change.status is not RuleStatus.REMOVED else None
        out.append(gh.command(kind, msg, where, f"{r.rule.id} {r.rule.name}", end=False))
    return gh.lines(out)


def format_sarif(report: SchemaReport, threshold: Level) -> str:
    """SARIF 2.1.0 for code-scanning views: one rule per rule id that fired, one
    result per finding at its verdict's level, on the schema line (head side; a
    removal points at the base file), the documents it affects as related
    locations; the fingerprint is the result's partial fingerprint, and an
    acknowledged finding carries an external suppression."""
    from intentc import __version__
    from intentc.diagnostics import sarif_log

    levels = {Level.ERR: "error", Level.WARN: "warning", Level.INFO: "note"}
    fired = sorted({**{e.finding.rule.id: e.finding.rule for e in report.entries},
                    **{r.rule.id: r.rule for r in report.rules}}.items())
    index = {rule_id: n for n, (rule_id, _) in enumerate(fired)}
    rules = [{"id": rule_id, "name": rule.name, "shortDescription": {"text": rule.summary},
              "defaultConfiguration": {"level": levels[rule.level]}} for rule_id, rule in fired]
    results = []
    for e in report.entries:
        f = e.finding
        example = _example(e)
        text = f"{f.message}; {_affects(e)}" + (f"; counter-example: {example}" if example else "")
        result: dict[str, object] = {
            "ruleId": f.rule.id, "ruleIndex": index[f.rule.id], "level": levels[e.level],
            "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.schema},
                                                "region": {"startLine": e.line, "startColumn": e.column}},
                           "logicalLocations": [{"fullyQualifiedName": f.pointer or "/"}]}],
            "partialFingerprints": {"intentcSchemaFinding/v1": f.fingerprint},
            "properties": {"side": f.side, "documents": e.documents,
                           "failing": not e.acknowledged and e.level.rank >= threshold.rank},
        }
        if e.affected:
            result["relatedLocations"] = [
                {"id": n, "message": {"text": f"{a.kind} {a.name} ({a.at})" + (" now invalid" if _now_invalid(e, a) else "")},
                 "physicalLocation": {"artifactLocation": {"uri": a.file},
                                      "region": {"startLine": a.line, "startColumn": a.column}}}
                for n, a in enumerate(e.affected)]
        if e.acknowledged:
            result["suppressions"] = [{"kind": "external", "justification": "acknowledged (--ack / --ack-file)"}]
        results.append(result)
    for r in report.rules:
        rule_result: dict[str, object] = {
            "ruleId": r.rule.id, "ruleIndex": index[r.rule.id], "level": levels[r.level],
            "message": {"text": f"{_rule_message(r)}; {_rule_affects(r)}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": r.span.file},
                                                "region": {"startLine": r.span.line, "startColumn": r.span.column}},
                           "logicalLocations": [{"fullyQualifiedName": r.change.name}]}] if r.span else [],
            "partialFingerprints": {"intentcSchemaFinding/v1": r.fingerprint},
            "properties": {"side": "base" if r.change.status is RuleStatus.REMOVED else "head",
                           "documents": len(r.change.newly_fails),
                           "failing": not r.acknowledged and r.level.rank >= threshold.rank},
        }
        if r.change.newly_fails:
            rule_result["relatedLocations"] = [
                {"id": n, "message": {"text": f"intent {f.intent} newly fails it ({f.code})"},
                 "physicalLocation": {"artifactLocation": {"uri": f.span.file},
                                      "region": {"startLine": f.span.line, "startColumn": f.span.column}}}
                for n, f in enumerate(r.change.newly_fails)]
        if r.acknowledged:
            rule_result["suppressions"] = [{"kind": "external", "justification": "acknowledged (--ack / --ack-file)"}]
        results.append(rule_result)
    return sarif_log(rules, results, __version__)


FORMATS = {"text": format_text, "json": format_json, "markdown": format_markdown, "github": format_github,
           "sarif": format_sarif}


def render(report: SchemaReport, fmt: str, threshold: Level) -> str:
    return FORMATS[fmt](report, threshold)
