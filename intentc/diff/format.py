"""Views of a `DiffReport`: text for terminals, JSON for tools, markdown for a
pull-request comment (a summary a reviewer reads in five seconds, the field
level detail in a collapsed <details> section)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from intentc.diagnostics import Span
from intentc.diff.binding_diff import github_commands, markdown_lines, text_lines
from intentc.diff.binding_diff import to_json_obj as binding_json
from intentc.diff.cel_diff import CelRuleChange
from intentc.diff.graph_diff import Edge
from intentc.diff.impact import ImpactClass
from intentc.diff.intents import DeclChange, FieldChange, Status
from intentc.diff.report import DiffReport
from intentc.diff.rules import RuleChange, RuleStatus

SHOWN = 50           # list items shown per section in text/markdown; JSON has everything
MARK = {Status.ADDED: "+", Status.REMOVED: "-", Status.RENAMED: ">", Status.CHANGED: "~"}
RULE_MARK = {RuleStatus.ADDED: "+", RuleStatus.REMOVED: "-", RuleStatus.CHANGED: "~"}


def _v(value: Any) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _pos(span: Span | None) -> str:
    return str(span) if span is not None else "-"


def _edge(e: Edge) -> str:
    return f"{e.source} -> {e.target} ({e.reason}{': ' + e.dataset if e.dataset else ''})"


def _counts(report: DiffReport) -> str:
    by: dict[str, int] = {}
    for c in report.declarations:
        by[c.status.value] = by.get(c.status.value, 0) + 1
    parts = [f"{by[s.value]} {s.value}" for s in Status if s.value in by]
    if report.rules:
        parts.append(f"{len(report.rules)} tag rule(s) changed")
    if report.cel_rules:
        parts.append(f"{len(report.cel_rules)} organisation rule(s) changed")
    return ", ".join(parts) if parts else "no semantic change"


def _rule_line(r: RuleChange) -> str:
    if r.status is RuleStatus.CHANGED:
        return f"{r.tag}: {r.old} -> {r.new}"
    return f"{r.tag}: {r.new if r.status is RuleStatus.ADDED else r.old}"


def _cel_line(r: CelRuleChange) -> str:
    if r.status is RuleStatus.CHANGED:
        return f"rule {r.name}: {r.old} -> {r.new}"
    return f"rule {r.name}: {r.new if r.status is RuleStatus.ADDED else r.old}"


def _cel_lines(r: CelRuleChange) -> list[str]:
    """A rule change and, under it, each intent it newly fails (docs/rules.md)."""
    out = [f"  {RULE_MARK[r.status]} {_cel_line(r)}" + (f"  ({_pos(r.span)})" if r.span else "")]
    out += [f"      newly fails: {f.intent} ({_pos(f.span)})" for f in r.newly_fails[:SHOWN]]
    return out + ([f"      ... and {len(r.newly_fails) - SHOWN} more"] if len(r.newly_fails) > SHOWN else [])


def _field_line(f: FieldChange) -> str:
    if f.old is None:
        return f"{f.path}: + {_v(f.new)}"
    if f.new is None:
        return f"{f.path}: - {_v(f.old)}"
    return f"{f.path}: {_v(f.old)} -> {_v(f.new)}"


def _decl_head(c: DeclChange, impact: dict[str, str]) -> str:
    tag = f"  [{impact[c.name]}]" if c.kind == "intent" and c.name in impact else ""
    if c.status is Status.RENAMED:
        return f"{MARK[c.status]} {c.kind} {c.old_name} renamed to {c.name}{tag}"
    return f"{MARK[c.status]} {c.kind} {c.name}{tag}"


def _more(n: int) -> list[str]:
    return [f"  ... and {n - SHOWN} more"] if n > SHOWN else []


def format_text(report: DiffReport) -> str:
    impact = {i.intent: i.impact.value for i in report.impacts}
    out = [f"intentc diff {report.base} .. {report.head}: {_counts(report)}"]
    for c in report.declarations:
        where = (f"base {_pos(c.base_span)}" if c.status is Status.REMOVED
                 else f"{_pos(c.head_span)}" if c.status is not Status.RENAMED
                 else f"base {_pos(c.base_span)} -> {_pos(c.head_span)}")
        out.append(f"{_decl_head(c, impact)}  ({where})")
        for f in c.changes:
            out.append(f"    {_field_line(f)}")
            out.append(f"      base {_pos(f.base_span)}  head {_pos(f.head_span)}")
    if report.rules:
        out.append("tag rules (policies/):")
        out += [f"  {RULE_MARK[r.status]} {_rule_line(r)}" + (f"  ({_pos(r.span)})" if r.span else "")
                for r in report.rules]
    if report.cel_rules:
        out.append("organisation rules (policies/ rules:):")
        for cr in report.cel_rules:
            out += _cel_lines(cr)
    g = report.graph
    if not g.empty:
        out.append(f"graph: {len(g.added)} edge(s) added, {len(g.removed)} removed, "
                   f"{len(g.new_cycles)} new cycle(s), {len(g.waves)} wave move(s)")
        out += [f"  + {_edge(e)}" for e in g.added[:SHOWN]] + _more(len(g.added))
        out += [f"  - {_edge(e)}" for e in g.removed[:SHOWN]] + _more(len(g.removed))
        out += [f"  new cycle: {' -> '.join(c + (c[0],))}" for c in g.new_cycles]
        out += [f"  cycle resolved: {' -> '.join(c + (c[0],))}" for c in g.fixed_cycles]
        out += [f"  wave {w.intent}: {w.old} -> {w.new}" for w in g.waves[:SHOWN]] + _more(len(g.waves))
    p = report.plan
    if p is not None and not p.empty:
        out.append(f"plan on {p.topology}: {len(p.moved)} placement(s) move, "
                   f"{sum(not c.placeable for c in p.capacity)} no longer placeable, "
                   f"{len(p.shares)} tenant share(s) change")
        out += [f"  move {m.intent}: {m.old} -> {m.new}" for m in p.moved[:SHOWN]] + _more(len(p.moved))
        out += [f"  {'placeable' if c.placeable else 'unplaceable'} {c.intent}: {c.message}" for c in p.capacity]
        out += [f"  tenant {s.tenant}: {s.old_allocated} -> {s.new_allocated} GPUs allocated "
                f"(requested {s.old_requested} -> {s.new_requested}, weight {s.old_weight} -> {s.new_weight})"
                for s in p.shares]
        out += [f"  batch {b.intent}: {b.old} -> {b.new} ({b.derivation})" for b in p.batches]
    if report.impacts:
        out.append("impact:")
        out += [f"  {i.impact.value:<13} {i.intent}: {'; '.join(i.reasons)}" for i in report.impacts]
    if report.creates:
        out.append(f"objects ({report.target}):")
        out += [f"  {o.intent}: {', '.join(o.objects) or 'none'}" for o in report.creates[:SHOWN]]
        out += _more(len(report.creates))
    if report.binding is not None:
        out += text_lines(report.binding)
    return "\n".join(out) + "\n"


def _span_obj(s: Span | None) -> dict[str, Any] | None:
    return None if s is None else {"file": s.file, "line": s.line, "column": s.column,
                                   "end_line": s.end_line, "end_column": s.end_column}


def to_json_obj(report: DiffReport) -> dict[str, Any]:
    p = report.plan
    return {
        "base": report.base,
        "head": report.head,
        "changed": report.changed,
        "declarations": [{
            "kind": c.kind, "status": c.status.value, "name": c.name, "old_name": c.old_name,
            "base": _span_obj(c.base_span), "head": _span_obj(c.head_span),
            "changes": [{"path": f.path, "old": f.old, "new": f.new,
                         "base": _span_obj(f.base_span), "head": _span_obj(f.head_span)} for f in c.changes],
        } for c in report.declarations],
        "graph": {
            "added": [asdict(e) for e in report.graph.added],
            "removed": [asdict(e) for e in report.graph.removed],
            "new_cycles": [list(c) for c in report.graph.new_cycles],
            "fixed_cycles": [list(c) for c in report.graph.fixed_cycles],
            "waves": [asdict(w) for w in report.graph.waves],
        },
        "plan": None if p is None else {
            "topology": p.topology,
            "moved": [asdict(m) for m in p.moved],
            "capacity": [asdict(c) for c in p.capacity],
            "shares": [asdict(s) for s in p.shares],
            "batches": [asdict(b) for b in p.batches],
        },
        "rules": [{"tag": r.tag, "status": r.status.value, "old": r.old, "new": r.new, "head": _span_obj(r.span)}
                  for r in report.rules],
        "cel_rules": [{"name": r.name, "status": r.status.value, "old": r.old, "new": r.new,
                       "head": _span_obj(r.span),
                       "newly_fails": [{"intent": f.intent, "code": f.code, "head": _span_obj(f.span)}
                                       for f in r.newly_fails]} for r in report.cel_rules],
        "impacts": [{"intent": i.intent, "impact": i.impact.value, "reasons": list(i.reasons),
                     "changed": i.changed} for i in report.impacts],
        "target": report.target,
        "creates": [{"intent": o.intent, "status": o.status, "objects": list(o.objects)} for o in report.creates],
    }


def format_json(report: DiffReport) -> str:
    obj = to_json_obj(report)
    if report.binding is not None:          # only with a cluster: the key's absence says none was read
        obj["binding"] = binding_json(report.binding)
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def format_markdown(report: DiffReport) -> str:
    impact = {i.intent: i for i in report.impacts}
    out = ["<!-- intentc:diff -->", "### intentc diff",
           f"`{report.base}` \u2192 `{report.head}`: **{_counts(report)}**"]
    live = markdown_lines(report.binding) if report.binding is not None else []
    if not report.changed:
        return "\n".join(out + live) + "\n"
    out += ["", "| | kind | name | impact | fields |", "|---|---|---|---|---|"]
    for c in report.declarations[:SHOWN * 4]:
        name = f"`{c.old_name}` \u2192 `{c.name}`" if c.status is Status.RENAMED else f"`{c.name}`"
        imp = impact[c.name].impact.value if c.kind == "intent" and c.name in impact else ""
        fields = ", ".join(f"`{f.path}`" for f in c.changes[:6]) + (" \u2026" if len(c.changes) > 6 else "")
        out.append(f"| {MARK[c.status]} {c.status.value} | {c.kind} | {name} | {imp} | {fields} |")
    if report.rules:
        out += ["", "Tag rules (`policies/`):", ""]
        out += [f"- {r.status.value} `{r.tag}`: {_md(_rule_line(r).split(': ', 1)[1])}" for r in report.rules]
    if report.cel_rules:
        out += ["", "Organisation rules (`policies/` `rules:`):", ""]
        out += [f"- {r.status.value} `{r.name}`: {_md(_cel_line(r).split(': ', 1)[1])}"
                + (f"; newly fails {', '.join(f'`{f.intent}`' for f in r.newly_fails[:SHOWN])}" if r.newly_fails else "")
                for r in report.cel_rules]
    others = [i for i in report.impacts if not i.changed]
    if others:
        out += ["", "Unchanged intents affected by the plan or the tag rules:", ""]
        out += [f"- `{i.intent}`: **{i.impact.value}** ({_md('; '.join(i.reasons))})" for i in others[:SHOWN]]
    g, p = report.graph, report.plan
    summary = [(f"graph: +{len(g.added)}/-{len(g.removed)} edges, {len(g.new_cycles)} new cycle(s), "
                f"{len(g.waves)} wave move(s)")]
    if p is not None:
        summary.append(f"plan on `{p.topology}`: {len(p.moved)} move(s), "
                       f"{sum(not c.placeable for c in p.capacity)} unplaceable, {len(p.shares)} share change(s)")
    if report.creates:
        out += ["", f"What `{report.target}` creates:", "", "| intent | objects |", "|---|---|"]
        out += [f"| `{o.intent}` | {', '.join(f'`{_md(r)}`' for r in o.objects) or 'none'} |"
                for o in report.creates[:SHOWN * 4]]
    out += ["", " \u00b7 ".join(summary), "", "<details><summary>Field-level changes</summary>", ""]
    for c in report.declarations:
        if not c.changes and c.status is not Status.RENAMED:
            continue
        out.append(f"**{c.kind} `{c.name}`** ({c.status.value})")
        out.append("")
        if c.status is Status.RENAMED:
            out.append(f"- renamed from `{c.old_name}` (`{_pos(c.base_span)}` \u2192 `{_pos(c.head_span)}`)")
        for f in c.changes:
            out.append(f"- `{f.path}`: `{_md(_v(f.old))}` \u2192 `{_md(_v(f.new))}` "
                       f"(`{_pos(f.base_span)}` \u2192 `{_pos(f.head_span)}`)")
        out.append("")
    if not g.empty:
        out += ["**Graph**", ""]
        out += [f"- added `{_edge(e)}`" for e in g.added[:SHOWN]]
        out += [f"- removed `{_edge(e)}`" for e in g.removed[:SHOWN]]
        out += [f"- new cycle `{' -> '.join(c + (c[0],))}`" for c in g.new_cycles]
        out += [f"- wave of `{w.intent}`: {w.old} \u2192 {w.new}" for w in g.waves[:SHOWN]]
        out.append("")
    if p is not None and not p.empty:
        out += [f"**Plan on `{p.topology}`**", ""]
        out += [f"- `{m.intent}` moves: `{m.old}` \u2192 `{m.new}`" for m in p.moved[:SHOWN]]
        out += [f"- `{c.intent}` {'placeable again' if c.placeable else 'no longer placeable: ' + _md(c.message)}"
                for c in p.capacity]
        out += [f"- tenant `{s.tenant}`: {s.old_allocated} \u2192 {s.new_allocated} GPUs" for s in p.shares]
        out += [f"- `{b.intent}` batch: {b.old} \u2192 {b.new} ({_md(b.derivation)})" for b in p.batches]
        out.append("")
    out.append("</details>")
    return "\n".join(out + live) + "\n"


# Impacts a reviewer should not miss: the intent stops fitting, or its pods move.
_WARN_IMPACTS = frozenset({ImpactClass.CAPACITY, ImpactClass.RESCHEDULE})


def format_github(report: DiffReport) -> str:
    """Workflow commands: the summary on the run, then one annotation per changed
    declaration at its head position (a removed one has none on the head side,
    so it goes on the run), its field changes in the message.  Intents whose
    impact is capacity or reschedule, and intents no longer placeable, are
    warnings; new dependency cycles are errors; the rest are notices."""
    from intentc.diagnostics import github as gh

    impact = {i.intent: i for i in report.impacts}
    out = [gh.command(gh.Level.NOTICE, f"{report.base} .. {report.head}: {_counts(report)}", title="intentc diff")]
    for c in report.declarations:
        i = impact.get(c.name) if c.kind == "intent" else None
        level = gh.Level.WARNING if i is not None and i.impact in _WARN_IMPACTS else gh.Level.NOTICE
        renamed = f" (was {c.old_name})" if c.status is Status.RENAMED else ""
        body = [f"{c.kind} {c.name} {c.status.value}{renamed}"] + [_field_line(f) for f in c.changes]
        if i is not None:
            body.append(f"impact {i.impact.value}: {'; '.join(i.reasons)}")
        span = None if c.status is Status.REMOVED else c.head_span
        out.append(gh.command(level, "\n".join(body), span, f"intentc diff: {c.kind} {c.name} {c.status.value}"))
    for r in report.rules:
        out.append(gh.command(gh.Level.NOTICE, f"tag rule {r.tag} {r.status.value}: {_rule_line(r)}", r.span,
                              f"intentc diff: tag rule {r.tag} {r.status.value}"))
    for cr in report.cel_rules:
        out.append(gh.command(gh.Level.NOTICE, f"organisation rule {cr.name} {cr.status.value}: {_cel_line(cr)}",
                              cr.span, f"intentc diff: organisation rule {cr.name} {cr.status.value}"))
        for f in cr.newly_fails:
            out.append(gh.command(gh.Level.WARNING, f"rule {cr.name} {cr.status.value} by this pull request: "
                                                    f"intent {f.intent} newly fails it ({f.code})", f.span,
                                  f"intentc diff: {f.intent} newly fails rule {cr.name}"))
    heads = {c.name: c.head_span for c in report.declarations if c.kind == "intent"}
    for i in report.impacts:
        if not i.changed:
            level = gh.Level.WARNING if i.impact in _WARN_IMPACTS else gh.Level.NOTICE
            out.append(gh.command(level, f"intent {i.intent}: {'; '.join(i.reasons)}", heads.get(i.intent),
                                  f"intentc diff: {i.intent} {i.impact.value}"))
    for cycle in report.graph.new_cycles:
        out.append(gh.command(gh.Level.ERROR, " -> ".join(cycle + (cycle[0],)), title="intentc diff: new cycle"))
    if report.plan is not None:
        for cap in report.plan.capacity:
            if not cap.placeable:
                out.append(gh.command(gh.Level.WARNING, f"{cap.intent}: {cap.message}", heads.get(cap.intent),
                                      f"intentc diff: {cap.intent} no longer placeable"))
    if report.binding is not None:
        out += github_commands(report.binding)
    return gh.lines(out)


FORMATS = {"text": format_text, "json": format_json, "markdown": format_markdown, "github": format_github}


def render_report(report: DiffReport, fmt: str) -> str:
    return FORMATS[fmt](report)
